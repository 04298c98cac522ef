//! A connection's way in: the frames of its input, one at a time, until the input ends, fails,
//! or the outbox overflows (a client that does not read is not read either).
//!
//! It owns the input stream; it must never parse a frame's JSON (the front-end does).

use futures::StreamExt;
use tokio::io::AsyncRead;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

use super::framing::{Frame, FrameCodec};

/// What reading the input gave.
#[derive(Debug)]
pub enum Read {
    /// A message, or bytes that could not be framed (the reader goes on after them).
    Frame(Frame),
    /// The input ended.
    Ended,
    /// The client stopped reading its answers: disconnect it.
    Overflowed,
    /// Reading failed.
    Failed(std::io::Error),
}

/// The input of one connection.
pub struct Reader<R> {
    frames: FramedRead<R, FrameCodec>,
    overflowed: CancellationToken,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// Reads `input` in `codec`'s framing until `overflowed` is cancelled.
    pub(crate) fn new(input: R, codec: FrameCodec, overflowed: CancellationToken) -> Reader<R> {
        Reader {
            frames: FramedRead::new(input, codec),
            overflowed,
        }
    }

    /// The next frame, or why there is none.
    pub async fn next(&mut self) -> Read {
        tokio::select! {
            frame = self.frames.next() => match frame {
                Some(Ok(frame)) => Read::Frame(frame),
                Some(Err(e)) => Read::Failed(e),
                None => Read::Ended,
            },
            _ = self.overflowed.cancelled() => Read::Overflowed,
        }
    }
}
