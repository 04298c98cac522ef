//! The one task that writes a connection's frames: it takes them from the outbox in order,
//! frames them (the codec's framing), writes out what is queued and flushes once per burst.
//! Told to finish, it writes what is queued and ends; a closed output ends it with the error
//! (the outbox then drops what follows).
//!
//! It owns the output stream; it must never reorder, drop or build a frame (the front-end's
//! `outgoing` may rewrite one: ids, redaction).

use bytes::Bytes;
use futures::SinkExt;
use tokio::io::AsyncWrite;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::codec::FramedWrite;

use super::framing::FrameCodec;
use super::outbox::Queue;

/// The running writer task.
pub struct Writer {
    stop: oneshot::Sender<()>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Writer {
    /// Writes the frames of `queue` to `output` in `codec`'s framing, each passed through
    /// `outgoing` first.
    pub(crate) fn start<W>(
        output: W,
        codec: FrameCodec,
        mut queue: Queue,
        outgoing: impl Fn(Bytes) -> Bytes + Send + 'static,
    ) -> Writer
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut writer = FramedWrite::new(output, codec);
        // Open conversations keep the outbox (and so a sender) alive: the writer stops when told.
        let (stop, mut stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut stopping = false;
            loop {
                let frame = if stopping {
                    queue.try_recv()
                } else {
                    tokio::select! {
                        biased;
                        frame = queue.recv() => frame,
                        _ = &mut stopped => {
                            stopping = true;
                            continue;
                        }
                    }
                };
                let Some(frame) = frame else { break };
                writer.feed(outgoing(frame)).await?;
                // Write out what is queued, then flush once: a burst of chunks costs one flush.
                while let Some(more) = queue.try_recv() {
                    writer.feed(outgoing(more)).await?;
                }
                writer.flush().await?;
            }
            writer.flush().await?;
            Ok(())
        });
        Writer { stop, task }
    }

    /// Writes what is queued now, flushes and ends; the output's error if writing failed.
    pub async fn finish(self) -> std::io::Result<()> {
        let _ = self.stop.send(());
        self.task.await.map_err(std::io::Error::other)?
    }

    /// Ends at once, writing nothing more (a client that does not read).
    pub fn abort(self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::outbox::{Outbox, DEFAULT_LIMIT};

    const DEADLINE: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn frames_go_out_in_order_in_the_framing_and_finish_writes_what_is_queued() {
        let (out, queue) = Outbox::new(DEFAULT_LIMIT);
        let (output, mut client) = tokio::io::duplex(1 << 16);
        let codec = FrameCodec::default();
        codec.framing.set(crate::framing::Framing::ContentLength);
        let writer = Writer::start(output, codec, queue, |f| {
            Bytes::from([&f[..], b"!"].concat())
        });
        assert!(out.send(Bytes::from_static(b"{}")));
        assert!(out.send(Bytes::from_static(b"[1]")));
        // Still open: the outbox outlives the finish and frames queued before it go out.
        tokio::time::timeout(DEADLINE, writer.finish())
            .await
            .unwrap()
            .unwrap();
        let mut text = String::new();
        client.read_to_string(&mut text).await.unwrap();
        assert_eq!(
            text,
            "Content-Length: 3\r\n\r\n{}!Content-Length: 4\r\n\r\n[1]!"
        );
        assert!(!out.send(Bytes::from_static(b"{}")), "the writer is gone");
    }

    #[tokio::test]
    async fn a_closed_output_ends_the_writer_with_its_error_and_drops_what_follows() {
        let (out, queue) = Outbox::new(DEFAULT_LIMIT);
        let (output, client) = tokio::io::duplex(64);
        drop(client);
        let writer = Writer::start(output, FrameCodec::lines_as_read(), queue, |f| f);
        assert!(out.send(Bytes::from_static(b"{}")));
        // The writer fails on its first frame and drops its queue: later frames are refused.
        tokio::time::timeout(DEADLINE, async {
            while out.send(Bytes::from_static(b"{}")) {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the outbox refuses frames once the writer failed");
        let e = writer.finish().await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
}
