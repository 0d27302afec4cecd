//! The asking side of the bridge: dials a socket, sends one ask frame and
//! waits for its outcome. Used by `hark mcp-operator-ask`, `hark ask`,
//! `inbox`, `answer` and `run`, and the run relay's way to the app socket.
//! Every connection checks that its server runs as this user before
//! anything is sent.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::BufReader;

use crate::bridge::wire::{
    ClientFrame, FrameError, ServerFrame, WireError, read_frame, write_frame,
};
use crate::model::approval::{DecidedBy, Scope};
use crate::model::ids::ItemId;
use crate::model::item::Outcome;
use crate::platform::{self, ReadHalf, Stream, User, WriteHalf};
use crate::registry::Waited;

/// Why a call to the operator service (an ask, a reply, a listing) did not go through.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket: no operator is attached.
    #[error("no operator is reachable at {}: {source}", path.display())]
    Unreachable { path: PathBuf, source: io::Error },
    /// The socket is served by another user: whatever it answered would be
    /// theirs, not the operator's, so nothing is sent to it.
    #[error(
        "{} is served by {owner}, not by this user ({me}); refusing to send it anything",
        path.display()
    )]
    ForeignServer {
        path: PathBuf,
        owner: String,
        me: String,
    },
    /// The server's uid could not be read, so it cannot be trusted.
    #[error("cannot tell which user serves {}: {source}", path.display())]
    UnknownServer { path: PathBuf, source: io::Error },
    /// The server refused the call.
    #[error("{}", .0.message)]
    Refused(WireError),
    /// The server hung up before it answered.
    #[error("the operator closed the connection")]
    Closed,
    /// The connection failed under the frames.
    #[error("the operator connection broke: {0}")]
    Frame(#[from] FrameError),
    /// The server sent something that is not a hark frame.
    #[error("the operator sent a frame hark cannot read: {0}")]
    BadFrame(serde_json::Error),
    /// The server answered with a frame that does not fit the call.
    #[error("the operator answered out of turn: {0:?}")]
    Unexpected(Box<ServerFrame>),
}

/// An ask call the server accepted, waiting for its outcome. Dropping it
/// hangs up, which cancels the item.
#[derive(Debug)]
pub struct Call {
    pub id: ItemId,
    /// How long the operator has.
    pub timeout: Duration,
    feed: Feed,
}

/// How the server took a call: an item is pending, or (for an approval)
/// it was decided at once by the policy or an earlier grant.
#[derive(Debug)]
pub enum Started {
    Pending(Call),
    Decided {
        allow: bool,
        scope: Option<Scope>,
        by: DecidedBy,
    },
}

impl Call {
    /// Connects to `socket`, sends `frame` and waits until it is accepted.
    pub async fn start(socket: &Path, frame: &ClientFrame) -> Result<Call, ClientError> {
        match Call::start_any(socket, frame).await? {
            Started::Pending(call) => Ok(call),
            Started::Decided { allow, scope, by } => {
                Err(ClientError::Unexpected(Box::new(ServerFrame::Decided {
                    allow,
                    scope,
                    by,
                })))
            }
        }
    }

    /// Like [`Call::start`], for a frame the server may also decide at once.
    pub async fn start_any(socket: &Path, frame: &ClientFrame) -> Result<Started, ClientError> {
        let mut feed = Feed::open(socket, frame).await?;
        match feed.first(socket).await? {
            ServerFrame::Accepted { id, timeout_ms } => Ok(Started::Pending(Call {
                id,
                timeout: Duration::from_millis(timeout_ms),
                feed,
            })),
            ServerFrame::Decided { allow, scope, by } => Ok(Started::Decided { allow, scope, by }),
            ServerFrame::Error(refusal) => Err(ClientError::Refused(refusal)),
            other => Err(ClientError::Unexpected(Box::new(other))),
        }
    }

    /// Waits for the item to settle.
    pub async fn outcome(&mut self) -> Result<Outcome, ClientError> {
        match self.wait().await? {
            Waited::Settled(outcome) => Ok(outcome),
            Waited::Parked => Err(ClientError::Unexpected(Box::new(ServerFrame::Parked {
                id: self.id,
            }))),
        }
    }

    /// Waits for the outcome, or for the item to park (only an asker that
    /// said it `parks` hears that).
    pub async fn wait(&mut self) -> Result<Waited, ClientError> {
        match self.feed.next().await? {
            ServerFrame::Settled { outcome, .. } => Ok(Waited::Settled(outcome)),
            ServerFrame::Parked { .. } => Ok(Waited::Parked),
            ServerFrame::Error(refusal) => Err(ClientError::Refused(refusal)),
            other => Err(ClientError::Unexpected(Box::new(other))),
        }
    }

    /// Asks the server to cancel the item; the outcome still follows.
    pub async fn cancel(&mut self) -> Result<(), ClientError> {
        self.send(&ClientFrame::Cancel).await
    }

    /// Withdraws the item: the agent's own dialog for it was answered
    /// where the agent runs.
    pub async fn answered_at_agent(&mut self) -> Result<(), ClientError> {
        self.send(&ClientFrame::AnsweredAtAgent).await
    }

    async fn send(&mut self, frame: &ClientFrame) -> Result<(), ClientError> {
        write_frame(&mut self.feed.writer, frame)
            .await
            .map_err(|e| ClientError::Frame(FrameError::Io(e)))
    }
}

/// Sends one operator frame (reply, list, clear) and returns the answer.
pub async fn request(socket: &Path, frame: &ClientFrame) -> Result<ServerFrame, ClientError> {
    let mut feed = Feed::open(socket, frame).await?;
    feed.first(socket).await
}

/// A connection that sent one frame and reads the frames that come back:
/// an ask's acceptance and outcome, a subscription, or a one-shot answer.
#[derive(Debug)]
pub struct Feed {
    reader: BufReader<ReadHalf>,
    /// Kept open: closing it hangs up (which cancels an ask, ends a subscription).
    writer: WriteHalf,
}

/// Connects to `socket` and checks that its server runs as this user
/// (SO_PEERCRED) before anything is sent: in a directory others could write,
/// another user could have put their own socket in hark's place.
pub async fn connect(socket: &Path) -> Result<Stream, ClientError> {
    let stream = platform::connect(socket)
        .await
        .map_err(|source| ClientError::Unreachable {
            path: socket.to_owned(),
            source,
        })?;
    let server = platform::peer_user(&stream).map_err(|source| ClientError::UnknownServer {
        path: socket.to_owned(),
        source,
    })?;
    check_server(socket, &server, &platform::own_user())?;
    Ok(stream)
}

/// Refuses a server whose user is not `me`.
pub fn check_server(socket: &Path, server: &User, me: &User) -> Result<(), ClientError> {
    if server == me {
        Ok(())
    } else {
        Err(ClientError::ForeignServer {
            path: socket.to_owned(),
            owner: platform::describe_user(server),
            me: platform::describe_user(me),
        })
    }
}

impl Feed {
    pub async fn open(socket: &Path, frame: &ClientFrame) -> Result<Feed, ClientError> {
        let stream = connect(socket).await?;
        let (reader, mut writer) = platform::split(stream);
        let mut reader = BufReader::new(reader);
        send(&mut reader, &mut writer, frame)
            .await
            .map_err(|e| nobody_behind(socket, e))?;
        Ok(Feed { reader, writer })
    }

    pub async fn next(&mut self) -> Result<ServerFrame, ClientError> {
        next_frame(&mut self.reader).await
    }

    /// The server's first frame. A connection dropped before anything
    /// came back had no operator behind it: what a socket forwarded by
    /// `ssh -R` gives while the daemon it leads to is down (the remote end
    /// accepts, then closes or resets).
    pub async fn first(&mut self, socket: &Path) -> Result<ServerFrame, ClientError> {
        self.next().await.map_err(|e| nobody_behind(socket, e))
    }
}

/// `e` as "no operator is reachable" when the connection ended before the
/// server said anything.
fn nobody_behind(socket: &Path, e: ClientError) -> ClientError {
    let source = match e {
        ClientError::Closed => io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the connection closed before anything was answered",
        ),
        ClientError::Frame(FrameError::Io(source))
            if matches!(
                source.kind(),
                io::ErrorKind::ConnectionReset
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::UnexpectedEof
            ) =>
        {
            source
        }
        other => return other,
    };
    ClientError::Unreachable {
        path: socket.to_owned(),
        source,
    }
}

/// Sends a frame. If the server hung up first (it refuses a peer before
/// reading), its refusal is still waiting to be read: report that instead.
async fn send(
    reader: &mut BufReader<ReadHalf>,
    writer: &mut WriteHalf,
    frame: &ClientFrame,
) -> Result<(), ClientError> {
    let Err(e) = write_frame(writer, frame).await else {
        return Ok(());
    };
    match next_frame(reader).await {
        Ok(ServerFrame::Error(refusal)) => Err(ClientError::Refused(refusal)),
        _ => Err(ClientError::Frame(FrameError::Io(e))),
    }
}

async fn next_frame(reader: &mut BufReader<ReadHalf>) -> Result<ServerFrame, ClientError> {
    let mut buf = Vec::new();
    match read_frame(reader, &mut buf).await {
        Ok(true) => serde_json::from_slice(&buf).map_err(ClientError::BadFrame),
        Ok(false) => Err(ClientError::Closed),
        Err(e) => Err(ClientError::Frame(e)),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_server_of_another_user_is_refused_naming_the_socket_and_its_owner() {
        let socket = Path::new("/tmp/shared/hark.sock");
        let refused = check_server(socket, &1001, &1000);
        let Err(ClientError::ForeignServer { path, owner, me }) = &refused else {
            panic!("{refused:?}");
        };
        assert_eq!(
            (path.as_path(), owner.as_str(), me.as_str()),
            (socket, "uid 1001", "uid 1000")
        );
        let message = refused.unwrap_err().to_string();
        assert!(message.contains("/tmp/shared/hark.sock"), "{message}");
        assert!(message.contains("uid 1001"), "{message}");
        assert!(check_server(socket, &1000, &1000).is_ok());
    }

    #[tokio::test]
    async fn a_server_of_this_user_is_spoken_to() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("hark.sock");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            assert_eq!(stream.peer_cred().unwrap().uid(), platform::own_user());
            let (reader, mut writer) = stream.into_split();
            let mut buf = Vec::new();
            assert!(
                read_frame(&mut BufReader::new(reader), &mut buf)
                    .await
                    .unwrap()
            );
            let frame: ClientFrame = serde_json::from_slice(&buf).unwrap();
            assert!(matches!(frame, ClientFrame::Subscribe), "{frame:?}");
            write_frame(
                &mut writer,
                &ServerFrame::Items {
                    items: vec![],
                    next: None,
                },
            )
            .await
            .unwrap();
        });
        let answer = request(&path, &ClientFrame::Subscribe).await.unwrap();
        assert!(matches!(answer, ServerFrame::Items { items, .. } if items.is_empty()));
        server.await.unwrap();
    }
}
