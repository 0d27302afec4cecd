//! The frame codec: one JSON value a line, at most [`MAX_FRAME`] bytes,
//! read without ever buffering more than that. What the frames say is
//! [`crate::bridge::wire`].

use serde::Serialize;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use crate::bridge::deadline::FrameStalled;

/// The largest frame either side accepts (1 MiB).
pub const MAX_FRAME: usize = 1 << 20;

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame exceeds {MAX_FRAME} bytes")]
    TooLarge,
    #[error("connection closed in the middle of a frame")]
    Truncated,
    /// The frame outstayed its deadline (see [`Deadlined`](crate::bridge::deadline::Deadlined)).
    #[error(transparent)]
    Stalled(FrameStalled),
    #[error(transparent)]
    Io(std::io::Error),
}

impl From<std::io::Error> for FrameError {
    fn from(e: std::io::Error) -> Self {
        match FrameStalled::of(&e) {
            Some(stalled) => FrameError::Stalled(stalled),
            None => FrameError::Io(e),
        }
    }
}

/// Reads one newline-terminated frame into `buf` (cleared first). Returns
/// `Ok(false)` on a clean end of stream. Never buffers more than [`MAX_FRAME`]
/// (`buf` never grows past it, whatever sizes the reads come in).
pub async fn read_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> Result<bool, FrameError> {
    buf.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return if buf.is_empty() {
                Ok(false)
            } else {
                Err(FrameError::Truncated)
            };
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if buf.len() + chunk.len() > MAX_FRAME {
            return Err(FrameError::TooLarge);
        }
        grow_within_cap(buf, chunk.len());
        buf.extend_from_slice(chunk);
        let used = done.unwrap_or(chunk.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(true);
        }
    }
}

/// Makes room for `more` bytes, doubling as a `Vec` does but never past
/// [`MAX_FRAME`] (a `Vec` left to itself may double to twice the cap).
fn grow_within_cap(buf: &mut Vec<u8>, more: usize) {
    let needed = buf.len() + more;
    if needed > buf.capacity() {
        let target = needed.max(buf.capacity() * 2).min(MAX_FRAME);
        buf.reserve_exact(target - buf.len());
    }
}

/// Writes one frame and flushes it.
pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(
    writer: &mut W,
    frame: &T,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(frame)?;
    bytes.push(b'\n');
    writer.write_all(&bytes).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::BufReader;

    use crate::bridge::wire::ClientFrame;

    #[tokio::test]
    async fn frames_split_on_newlines() {
        let data = b"{\"type\":\"cancel\"}\n{\"a\":1}\n".to_vec();
        let mut reader = BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        assert!(read_frame(&mut reader, &mut buf).await.unwrap());
        let frame: ClientFrame = serde_json::from_slice(&buf).unwrap();
        assert_eq!(frame, ClientFrame::Cancel);
        assert!(read_frame(&mut reader, &mut buf).await.unwrap());
        assert_eq!(buf, b"{\"a\":1}");
        assert!(!read_frame(&mut reader, &mut buf).await.unwrap());
    }

    #[tokio::test]
    async fn an_oversized_frame_is_refused_without_buffering_it() {
        let data = vec![b'x'; MAX_FRAME + 10];
        let mut reader = BufReader::new(&data[..]);
        let mut buf = Vec::new();
        assert!(matches!(
            read_frame(&mut reader, &mut buf).await,
            Err(FrameError::TooLarge)
        ));
        assert!(buf.len() <= MAX_FRAME);
    }

    #[tokio::test]
    async fn a_frame_cut_short_is_reported() {
        let data = b"{\"type\":".to_vec();
        let mut buf = Vec::new();
        assert!(matches!(
            read_frame(&mut &data[..], &mut buf).await,
            Err(FrameError::Truncated)
        ));
    }
}
