//! A deadline on every frame a connection starts: once a frame's first byte
//! has arrived, the rest must follow within a set time.
//!
//! A connection may sit idle *between* frames for as long as it likes (an
//! operator following the inbox, an asker waiting for its answer), but one
//! that sends half a frame and stops is stuck or hostile: it would hold its
//! file handle, and up to a frame's worth of buffer, forever. [`Deadlined`]
//! wraps the reading half of a connection and fails the read with
//! [`FrameStalled`] (an `io::Error` of kind `TimedOut`, which
//! [`read_frame`](crate::bridge::wire::read_frame) reports as
//! [`FrameError::Stalled`](crate::bridge::wire::FrameError::Stalled)) when a
//! frame outstays its deadline; whoever reads then drops the connection.
//!
//! The deadline runs from the moment the bytes are read off the socket, so it
//! holds however the frame is cut into writes, and whichever reader (the
//! first frame's, an asker's wait, a follower's feed) is reading at the time.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, BufReader, ReadBuf};
use tokio::time::Sleep;

/// The reading half of a served connection, its frames under a deadline.
pub type SocketReader = BufReader<Deadlined<crate::platform::ReadHalf>>;

/// A reader whose frames must each arrive whole within `within` of their
/// first byte.
#[derive(Debug)]
pub struct Deadlined<R> {
    inner: R,
    /// How long a started frame has to finish.
    within: Duration,
    /// When the frame in flight must be whole; `None` between frames.
    due: Option<Pin<Box<Sleep>>>,
}

/// The error a [`Deadlined`] read fails with when a frame stalls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a frame stayed unfinished for {} s after its first byte", within.as_secs())]
pub struct FrameStalled {
    pub within: Duration,
}

impl FrameStalled {
    /// The stall inside `error`, when that is what it is.
    pub fn of(error: &io::Error) -> Option<FrameStalled> {
        error.get_ref()?.downcast_ref::<FrameStalled>().copied()
    }
}

impl<R> Deadlined<R> {
    pub fn new(inner: R, within: Duration) -> Deadlined<R> {
        Deadlined {
            inner,
            within,
            due: None,
        }
    }

    /// Whether a frame has started and not yet ended.
    pub fn mid_frame(&self) -> bool {
        self.due.is_some()
    }

    /// Notes what was just read: a newline ends the frame in flight, and
    /// bytes after the last newline start a new one now.
    fn saw(&mut self, read: &[u8]) {
        match read.iter().rposition(|&b| b == b'\n') {
            Some(last) if last + 1 == read.len() => self.due = None,
            Some(_) => self.due = Some(Box::pin(tokio::time::sleep(self.within))),
            None if read.is_empty() || self.due.is_some() => {}
            None => self.due = Some(Box::pin(tokio::time::sleep(self.within))),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Deadlined<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.saw(&buf.filled()[before..]);
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                let expired = this
                    .due
                    .as_mut()
                    .is_some_and(|due| due.as_mut().poll(cx).is_ready());
                if !expired {
                    return Poll::Pending;
                }
                let stalled = FrameStalled {
                    within: this.within,
                };
                tracing::warn!("dropping a connection: {stalled}");
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, stalled)))
            }
            ready_err => ready_err,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    const WITHIN: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn a_frame_cut_into_writes_is_timed_from_its_first_byte() {
        let (mut peer, ours) = tokio::io::duplex(64);
        let mut reader = tokio::io::BufReader::new(Deadlined::new(ours, WITHIN));
        let mut buf = Vec::new();
        peer.write_all(b"{\"type\":\"cancel\"}\n{\"ty")
            .await
            .unwrap();
        let started = tokio::time::Instant::now();
        let first = crate::bridge::wire::read_frame(&mut reader, &mut buf).await;
        assert!(first.unwrap(), "the whole frame is read");
        assert!(reader.get_ref().mid_frame(), "the second one has started");
        let second = crate::bridge::wire::read_frame(&mut reader, &mut buf).await;
        assert!(
            matches!(second, Err(crate::bridge::wire::FrameError::Stalled(s)) if s.within == WITHIN),
            "{second:?}"
        );
        assert_eq!(started.elapsed(), WITHIN);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_idle_between_frames_has_no_deadline() {
        let (mut peer, ours) = tokio::io::duplex(64);
        let mut reader = tokio::io::BufReader::new(Deadlined::new(ours, WITHIN));
        let mut buf = Vec::new();
        peer.write_all(b"{}\n").await.unwrap();
        assert!(
            crate::bridge::wire::read_frame(&mut reader, &mut buf)
                .await
                .unwrap()
        );
        assert!(!reader.get_ref().mid_frame());
        let idle = tokio::time::timeout(
            WITHIN * 10,
            crate::bridge::wire::read_frame(&mut reader, &mut buf),
        )
        .await;
        assert!(idle.is_err(), "still waiting for the next frame: {idle:?}");
    }
}
