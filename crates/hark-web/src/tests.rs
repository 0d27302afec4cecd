//! The server as [`crate::start`] runs it, on a real socket: it stops when
//! the daemon's stop comes, gracefully (its open event streams end, then
//! the server does, and it takes no new connection).

use std::sync::Arc;
use std::time::Duration;

use hark_core::model::ids::Clock;
use hark_core::pairing;
use hark_core::registry::Registry;
use hark_core::store::Store;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{WebOptions, start};

/// Reads from `stream` until `until` is in what came, or it ends; what came.
async fn read_until(stream: &mut TcpStream, until: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.unwrap();
        got.extend_from_slice(&buf[..n]);
        if n == 0 || String::from_utf8_lossy(&got).contains(until) {
            return String::from_utf8_lossy(&got).into_owned();
        }
    }
}

#[tokio::test]
async fn it_stops_with_the_daemon_ending_its_event_streams() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap());
    let paired = {
        let code = pairing::mint_code(&store).unwrap();
        pairing::pair(&store, &code.code, "laptop")
            .unwrap()
            .unwrap()
    };
    let registry = Registry::with_store(Some(store));
    let options = WebOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        tls: None,
        insecure_http: false,
        origins: Vec::new(),
        push: None,
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = start(registry, options, async {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    let addr = serving.addr;

    let mut events = TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /api/events HTTP/1.1\r\nHost: {addr}\r\nCookie: hark_session={}\r\n\
         X-CSRF-Token: {}\r\n\r\n",
        paired.token, paired.csrf
    );
    events.write_all(request.as_bytes()).await.unwrap();
    let opened = read_until(&mut events, "resync").await;
    assert!(opened.starts_with("HTTP/1.1 200"), "{opened}");

    stop.send(()).unwrap();
    // The stream ends (its last chunk, then the connection closes)…
    let rest = tokio::time::timeout(Duration::from_secs(10), read_until(&mut events, "\0"))
        .await
        .expect("the event stream ends when the daemon stops");
    assert!(rest.ends_with("0\r\n\r\n"), "a chunked end: {rest:?}");
    // …and the server, well within its drain.
    tokio::time::timeout(crate::DRAIN, serving.stopped)
        .await
        .expect("the server stops")
        .unwrap();
    assert!(TcpStream::connect(addr).await.is_err(), "nothing listens");
}
