//! A connection's queue of outgoing frames: frames wait here for the writer, and the bytes
//! waiting are bounded. A client that stops reading its stdout would otherwise make the queue
//! grow for as long as turns stream; past the limit the outbox is overflowed, the connection's
//! reader ends (its front-end then disconnects the client: it cancels every turn and exits),
//! and further frames are dropped.
//!
//! It owns the count of queued bytes and the overflow signal; it must never block a sender
//! (senders are core callbacks) and never reorder frames.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Bytes that may wait for a client that does not read, by default.
pub const DEFAULT_LIMIT: usize = 64 << 20;

/// No limit: the queue grows for as long as the client does not read.
pub const UNBOUNDED: usize = usize::MAX;

/// The sending side, cloned into whatever writes to the client.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Bytes>,
    queued: Arc<AtomicUsize>,
    limit: usize,
    overflowed: CancellationToken,
}

/// The writer's side.
pub struct Queue {
    rx: mpsc::UnboundedReceiver<Bytes>,
    queued: Arc<AtomicUsize>,
}

impl Outbox {
    /// An outbox that overflows when more than `limit` bytes wait (one frame alone may be
    /// larger: a batch's answer is one frame).
    pub fn new(limit: usize) -> (Outbox, Queue) {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        (
            Outbox {
                tx,
                queued: queued.clone(),
                limit,
                overflowed: CancellationToken::new(),
            },
            Queue { rx, queued },
        )
    }

    /// Queues a frame; false when it was dropped (the client is gone or does not read).
    pub(crate) fn send(&self, frame: Bytes) -> bool {
        if self.overflowed.is_cancelled() {
            return false;
        }
        let len = frame.len();
        let before = self.queued.fetch_add(len, Ordering::SeqCst);
        if before > 0 && before.saturating_add(len) > self.limit {
            self.queued.fetch_sub(len, Ordering::SeqCst);
            tracing::warn!(
                queued = before,
                "the client does not read its answers: disconnecting it"
            );
            self.overflowed.cancel();
            return false;
        }
        if self.tx.send(frame).is_err() {
            self.queued.fetch_sub(len, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Cancelled once the outbox overflowed.
    pub(crate) fn overflowed(&self) -> CancellationToken {
        self.overflowed.clone()
    }
}

impl Queue {
    pub async fn recv(&mut self) -> Option<Bytes> {
        let frame = self.rx.recv().await?;
        self.queued.fetch_sub(frame.len(), Ordering::SeqCst);
        Some(frame)
    }

    pub fn try_recv(&mut self) -> Option<Bytes> {
        let frame = self.rx.try_recv().ok()?;
        self.queued.fetch_sub(frame.len(), Ordering::SeqCst);
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_queue_past_its_limit_overflows_and_drops_what_follows() {
        let (out, mut queue) = Outbox::new(100);
        // One frame alone may be larger than the limit.
        assert!(out.send(Bytes::from(vec![b'x'; 150])));
        assert!(!out.send(Bytes::from_static(b"more")));
        assert!(out.overflowed().is_cancelled());
        assert!(!out.send(Bytes::from_static(b"x")));
        assert_eq!(queue.recv().await.map(|f| f.len()), Some(150));
        assert!(queue.try_recv().is_none());

        let (out, mut queue) = Outbox::new(100);
        for _ in 0..10 {
            assert!(out.send(Bytes::from(vec![b'y'; 60])));
            assert!(queue.recv().await.is_some());
        }
        assert!(
            !out.overflowed().is_cancelled(),
            "a reading client never overflows"
        );
    }
}
