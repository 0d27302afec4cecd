//! The client (`bridge::client`): `request` and `Call` against a listener
//! that answers, and the errors a caller branches on.

use hark_core::bridge::client::{Call, ClientError, request};
use hark_core::bridge::wire::{ClientFrame, ErrorCode, MAX_FRAME, ServerFrame};
use hark_core::model::item::ItemFilter;
use serde_json::json;

use crate::support::{Served, ask, db, operator, question};

#[tokio::test(start_paused = true)]
async fn request_returns_the_listeners_answer() {
    let (operator, _prompts) = operator();
    let served = Served::start(operator);
    let call = Call::start(&served.socket, &ask("s1", db())).await.unwrap();
    let listing = ClientFrame::List {
        filter: ItemFilter {
            pending: Some(true),
            ..ItemFilter::default()
        },
    };
    let ServerFrame::Items { items, .. } = request(&served.socket, &listing).await.unwrap() else {
        panic!("not a listing");
    };
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, call.id);
    assert_eq!(items[0].session_id, "s1");
    assert_eq!(items[0].request.questions[0].question, "Which database?");
    assert_eq!(items[0].outcome, None);
}

#[tokio::test(start_paused = true)]
async fn a_call_with_nothing_listening_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("hark.sock");
    let started = Call::start(&missing, &ask("s1", db())).await;
    let Err(ClientError::Unreachable { path, .. }) = started else {
        panic!("{started:?}");
    };
    assert_eq!(path, missing);

    // A socket file left by a daemon that died.
    let stale = dir.path().join("stale.sock");
    drop(tokio::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let started = Call::start(&stale, &ask("s1", db())).await;
    assert!(
        matches!(started, Err(ClientError::Unreachable { .. })),
        "{started:?}"
    );
    let answered = request(&stale, &ClientFrame::Subscribe).await;
    assert!(
        matches!(answered, Err(ClientError::Unreachable { .. })),
        "{answered:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_refused_call_is_refused_with_the_wire_error() {
    let served = Served::start(operator().0);
    let empty = ClientFrame::Ask {
        caller: Default::default(),
        request: json!({"questions": []}),
    };
    let Err(ClientError::Refused(refusal)) = Call::start(&served.socket, &empty).await else {
        panic!("an empty ask was not refused");
    };
    assert_eq!(refusal.code, ErrorCode::Invalid);
    assert_eq!(refusal.issues.len(), 1);
    assert_eq!(refusal.issues[0].path, "questions");

    // Too large to read: refused whether the server stops reading mid-write
    // or after it.
    let huge = question(&"x".repeat(MAX_FRAME), "Huge", &["A", "B"]);
    let Err(ClientError::Refused(refusal)) = Call::start(&served.socket, &ask("s1", huge)).await
    else {
        panic!("an oversized ask was not refused");
    };
    assert_eq!(refusal.code, ErrorCode::FrameTooLarge);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_hangs_up_before_a_word_is_no_operator() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("hark.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    // Takes the connection and closes it without a word, as the remote end
    // of an `ssh -R` forward does while the daemon it leads to is down.
    let hang_up = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        drop(stream);
    });
    let started = Call::start(&socket, &ask("s1", db())).await;
    let Err(e @ ClientError::Unreachable { .. }) = started else {
        panic!("{started:?}");
    };
    assert!(
        e.to_string()
            .starts_with(&format!("no operator is reachable at {}", socket.display())),
        "{e}"
    );
    hang_up.await.unwrap();
}

/// The environment variable naming the socket [`squatter`] binds.
const SQUAT: &str = "HARK_TEST_SQUAT";

/// Not a test on its own (it returns at once without `HARK_TEST_SQUAT`):
/// run as another user by the test below, it binds that socket, says
/// `bound`, takes one connection and says how many bytes it was sent.
#[test]
fn squatter() {
    use std::io::BufRead;
    let Some(path) = std::env::var_os(SQUAT) else {
        return;
    };
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    println!("bound");
    let (stream, _) = listener.accept().unwrap();
    let mut sent = Vec::new();
    std::io::BufReader::new(stream)
        .read_until(b'\n', &mut sent)
        .unwrap();
    println!("received {} bytes", sent.len());
}

#[tokio::test]
async fn a_socket_squatted_by_another_user_is_sent_nothing() {
    use std::io::BufRead;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    if hark_core::platform::own_user() != 0 {
        let why = "not root: cannot run a squatter as another user; the unit test covers the check";
        // A skip fails in CI and under the test command, as
        // `hark_harness::skip` has it (these tests do not depend on it).
        let set = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let required = set("HARK_REQUIRE_ALL_TESTS")
            .or_else(|| set("CI"))
            .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"));
        assert!(
            !required,
            "{why}; in CI and under scripts/test every test must run (HARK_REQUIRE_ALL_TESTS=0 lets it skip)"
        );
        eprintln!("SKIPPED: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let open = |p: &std::path::Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    open(tmp.path(), 0o755);
    let shared = tmp.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    open(&shared, 0o777);
    let socket = shared.join("hark.sock");
    let mut squatter = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "client::squatter",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SQUAT, &socket)
        .uid(65534)
        .gid(65534)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = std::io::BufReader::new(squatter.stdout.take().unwrap()).lines();
    said.by_ref()
        .map(Result::unwrap)
        .find(|line| line.ends_with("bound")) // (after libtest's "test … ")
        .expect("the squatter never bound");

    let started = Call::start(&socket, &ask("s1", db())).await;
    let Err(ClientError::ForeignServer { path, owner, me }) = &started else {
        panic!("{started:?}");
    };
    assert_eq!(
        (path, owner.as_str(), me.as_str()),
        (&socket, "uid 65534", "uid 0")
    );
    let received: Vec<String> = said
        .map(Result::unwrap)
        .filter_map(|line| Some(line[line.find("received")?..].to_owned()))
        .collect();
    assert_eq!(received, ["received 0 bytes"]);
    assert!(squatter.wait().unwrap().success());
}
