//! `read_frame` over arbitrary bytes, cut into arbitrary reads: it never
//! panics, never holds or returns more than [`MAX_FRAME`], returns exactly
//! the newline-separated frames that were sent, and says how the stream
//! ended. And every frame `write_frame` writes reads back as itself.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hark_core::bridge::wire::{ClientFrame, FrameError, MAX_FRAME, read_frame, write_frame};
use hark_core::model::ids::ItemId;
use proptest::prelude::*;
use tokio::io::{AsyncRead, BufReader, ReadBuf};

use crate::cases;
use crate::strategies::json;

/// Hands out `data` in reads of the given sizes, in turn.
struct Chunked {
    data: Vec<u8>,
    at: usize,
    sizes: Vec<usize>,
    turn: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let size = self.sizes[self.turn % self.sizes.len()];
        self.turn += 1;
        let n = size.min(buf.remaining()).min(self.data.len() - self.at);
        let at = self.at;
        buf.put_slice(&self.data[at..at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

/// How a read of every frame in a stream ended.
#[derive(Debug, PartialEq)]
enum End {
    Clean,
    Truncated,
    TooLarge,
}

/// Reads frames until the stream ends or fails, checking the buffer after
/// every call.
fn read_all(
    data: Vec<u8>,
    sizes: Vec<usize>,
    capacity: usize,
) -> Result<(Vec<Vec<u8>>, End), TestCaseError> {
    let chunked = Chunked {
        data,
        at: 0,
        sizes,
        turn: 0,
    };
    let mut reader = BufReader::with_capacity(capacity, chunked);
    let mut buf = Vec::new();
    let mut frames = Vec::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    loop {
        let read = runtime.block_on(read_frame(&mut reader, &mut buf));
        prop_assert!(buf.len() <= MAX_FRAME, "holds {} bytes", buf.len());
        prop_assert!(
            buf.capacity() <= MAX_FRAME,
            "reserves {} bytes",
            buf.capacity()
        );
        match read {
            Ok(true) => {
                prop_assert!(!buf.contains(&b'\n'));
                frames.push(buf.clone());
            }
            Ok(false) => return Ok((frames, End::Clean)),
            Err(FrameError::Truncated) => return Ok((frames, End::Truncated)),
            Err(FrameError::TooLarge) => return Ok((frames, End::TooLarge)),
            Err(e) => return Err(TestCaseError::fail(format!("unexpected {e}"))),
        }
    }
}

/// What a reader should make of `data`: the frames up to the first one
/// over the cap, and how it ends.
fn expected(data: &[u8]) -> (Vec<Vec<u8>>, End) {
    let mut frames = Vec::new();
    let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let last = parts.pop().unwrap_or_default();
    for part in parts {
        if part.len() > MAX_FRAME {
            return (frames, End::TooLarge);
        }
        frames.push(part.to_vec());
    }
    match last.len() {
        0 => (frames, End::Clean),
        n if n > MAX_FRAME => (frames, End::TooLarge),
        _ => (frames, End::Truncated),
    }
}

/// Bytes with newlines common enough to cut them into many frames.
fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max).prop_map(|mut bytes| {
        // About one byte in six.
        for b in &mut bytes {
            if *b < 42 {
                *b = b'\n';
            }
        }
        bytes
    })
}

/// A frame of `len` bytes (no newline), then a newline unless `open`.
fn sized(len: usize, open: bool) -> Vec<u8> {
    let mut frame = vec![b'x'; len];
    if !open {
        frame.push(b'\n');
    }
    frame
}

fn client_frame() -> impl Strategy<Value = ClientFrame> {
    prop_oneof![
        Just(ClientFrame::Cancel),
        Just(ClientFrame::AnsweredAtAgent),
        Just(ClientFrame::Subscribe),
        Just(ClientFrame::ClearSettled),
        (
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<u32>())
        )
            .prop_map(|(limit, offset)| ClientFrame::ListRuns { limit, offset }),
        Just(ClientFrame::Status),
        any::<u128>().prop_map(|id| ClientFrame::Get {
            id: ItemId(uuid::Uuid::from_u128(id))
        }),
        json(false).prop_map(|request| ClientFrame::Ask {
            caller: Default::default(),
            request,
        }),
        (any::<u128>(), json(false)).prop_map(|(id, answers)| ClientFrame::Reply {
            id: ItemId(uuid::Uuid::from_u128(id)),
            reply: serde_json::from_value(serde_json::json!({"action": "skip", "x": answers}))
                .unwrap(),
            via: None,
        }),
    ]
}

proptest! {
    #![proptest_config(cases(256, 1))]

    #[test]
    fn arbitrary_bytes_read_as_the_frames_they_hold(
        data in bytes(4096),
        sizes in prop::collection::vec(0..64usize, 1..8),
        capacity in 1..32usize,
    ) {
        // A read of 0 bytes is the end of the stream: keep them to the end.
        let sizes: Vec<usize> = sizes.into_iter().map(|s| s.max(1)).collect();
        let want = expected(&data);
        prop_assert_eq!(read_all(data, sizes, capacity)?, want);
    }

    #[test]
    fn frames_written_read_back_as_themselves(
        frames in prop::collection::vec(client_frame(), 0..6),
        sizes in prop::collection::vec(1..512usize, 1..4),
    ) {
        let mut wire = Vec::new();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for frame in &frames {
            runtime.block_on(write_frame(&mut wire, frame)).unwrap();
        }
        let (read, end) = read_all(wire, sizes, 8 * 1024)?;
        prop_assert_eq!(end, End::Clean);
        let read: Vec<ClientFrame> =
            read.iter().map(|f| serde_json::from_slice(f).unwrap()).collect();
        prop_assert_eq!(read, frames);
    }
}

proptest! {
    // Each case moves a MiB or two: a hundredth of the long run's count.
    #![proptest_config(cases(12, 100))]

    #[test]
    fn frames_at_the_cap_are_read_and_past_it_refused(
        first in 0..64usize,
        near in (MAX_FRAME - 2)..=(MAX_FRAME + 2),
        open: bool,
        sizes in prop::collection::vec(1..200_000usize, 1..4),
        capacity in prop_oneof![Just(8 * 1024), 1..300_000usize],
    ) {
        let mut data = sized(first, false);
        data.extend(sized(near, open));
        let want = expected(&data);
        let (frames, end) = read_all(data, sizes, capacity)?;
        prop_assert_eq!(frames.len(), want.0.len());
        prop_assert_eq!(end, want.1);
    }
}
