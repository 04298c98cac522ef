//! One JSON-RPC 2.0 peer over a byte stream: the plumbing the daemon (`rpc`) and the ACP agent
//! (`acp`) share, each being a method table on top of it. `framing` reads and writes frames
//! (Content-Length or newline-delimited), `outbox` bounds what waits for a client that does
//! not read, `writer` is the one task writing the frames, `reader` yields the frames read,
//! `pending` the requests sent to the client (ids, answers, time-outs, the client leaving),
//! `cancel` what each incoming request started, for its cancellation.
//!
//! It owns bytes, frames, ids and who waits on what; it must never know a method, build a
//! response or an error of a protocol, nor depend on a front-end (its crate depends on no other of genai's).

pub(crate) mod cancel;
pub mod framing;
pub mod outbox;
pub(crate) mod pending;
pub(crate) mod reader;
pub(crate) mod writer;

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) use cancel::Running;
pub use framing::{Frame, FrameCodec};
pub use outbox::{Outbox, Queue};
pub use pending::{Answer, Unanswered};
pub use reader::{Read, Reader};
pub(crate) use writer::Writer;

/// The sending side of one client's connection, shared by the front-end's dispatcher and its
/// client port.
pub struct Peer {
    out: Outbox,
    pending: pending::Pending,
    running: Running,
}

impl Peer {
    /// A peer whose frames (JSON texts) go to `out`.
    pub fn new(out: Outbox) -> Peer {
        Peer {
            out,
            pending: pending::Pending::default(),
            running: Running::default(),
        }
    }

    /// Queues one frame for the client; false when it was dropped (the client is gone or does
    /// not read: there is no one left to tell).
    pub fn send(&self, frame: impl Into<Bytes>) -> bool {
        self.out.send(frame.into())
    }

    /// Sends the client a request and waits for its answer, for as long as it takes (or until
    /// the client leaves, or whoever waits gives up).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Unanswered> {
        self.pending.request(&self.out, method, params, None).await
    }

    /// The client answered a request of genai's; false when none waits with that id.
    pub fn answered(&self, id: &Value, answer: Answer) -> bool {
        self.pending.answered(id, answer)
    }

    /// The client's input ended: the requests it will never answer fail, and no new one is sent.
    pub fn close(&self) {
        self.pending.close();
    }

    /// Whether the client stopped reading (its outbox overflowed).
    pub fn overflowed(&self) -> bool {
        self.out.overflowed().is_cancelled()
    }

    /// The client's requests whose work still runs, for their cancellation.
    pub fn running(&self) -> &Running {
        &self.running
    }
}

/// One client on a byte stream: the peer, the frames it sends, the task writing to it.
pub struct Link<R> {
    pub peer: Arc<Peer>,
    pub reader: Reader<R>,
    pub writer: Writer,
}

/// Connects to a client on `input` and `output` in `codec`'s framing (what the reader detects
/// the writer uses), with at most `limit` bytes waiting for it; every frame passes through
/// `outgoing` on its way out.
pub fn connect<R, W>(
    input: R,
    output: W,
    codec: FrameCodec,
    limit: usize,
    outgoing: impl Fn(Bytes) -> Bytes + Send + 'static,
) -> Link<R>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, queue) = Outbox::new(limit);
    let reader = Reader::new(input, codec.clone(), out.overflowed());
    let writer = Writer::start(output, codec, queue, outgoing);
    Link {
        peer: Arc::new(Peer::new(out)),
        reader,
        writer,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const DEADLINE: Duration = Duration::from_secs(10);

    #[tokio::test]
    async fn answers_go_out_in_the_framing_the_client_chose() {
        let (mut client, input) = tokio::io::duplex(1 << 16);
        let (output, mut answers) = tokio::io::duplex(1 << 16);
        let Link {
            peer,
            mut reader,
            writer,
        } = connect(input, output, FrameCodec::default(), 1 << 20, |f| f);
        client
            .write_all(b"Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n{")
            .await
            .unwrap();
        drop(client);
        let Read::Frame(Frame::Message(body)) = reader.next().await else {
            panic!("a message first");
        };
        assert_eq!(&body[..], b"{}");
        assert!(matches!(
            reader.next().await,
            Read::Frame(Frame::Malformed(_))
        ));
        assert!(matches!(reader.next().await, Read::Ended));
        assert!(peer.send("{\"id\":1}"));
        peer.close();
        writer.finish().await.unwrap();
        let mut text = String::new();
        answers.read_to_string(&mut text).await.unwrap();
        assert_eq!(text, "Content-Length: 8\r\n\r\n{\"id\":1}");
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_is_no_longer_read() {
        let (_client, input) = tokio::io::duplex(1 << 16);
        // Nobody reads the output.
        let (output, _unread) = tokio::io::duplex(64);
        let Link {
            peer,
            mut reader,
            writer,
        } = connect(input, output, FrameCodec::lines_as_read(), 1024, |f| f);
        let frame = vec![b'x'; 100];
        let mut sent = 0;
        while peer.send(frame.clone()) {
            sent += 1;
            assert!(sent < 1000, "the outbox never overflowed");
        }
        assert!(peer.overflowed());
        let read = tokio::time::timeout(DEADLINE, reader.next()).await.unwrap();
        assert!(matches!(read, Read::Overflowed), "{read:?}");
        writer.abort();
    }

    #[tokio::test]
    async fn lines_are_read_as_they_came() {
        let (mut client, input) = tokio::io::duplex(1 << 16);
        let (output, _answers) = tokio::io::duplex(1 << 16);
        let mut link = connect(
            input,
            output,
            FrameCodec::lines_as_read(),
            outbox::UNBOUNDED,
            |f| f,
        );
        client
            .write_all(b"  {\"a\":1}\r\n\n \t\nContent-Length: 2\n{\"b\"")
            .await
            .unwrap();
        drop(client);
        let mut got = Vec::new();
        while let Read::Frame(Frame::Message(body)) = link.reader.next().await {
            got.push(String::from_utf8(body.to_vec()).unwrap());
        }
        assert_eq!(
            got,
            ["  {\"a\":1}\r\n", "Content-Length: 2\n", "{\"b\""],
            "never a Content-Length framing"
        );
        link.writer.abort();
    }
}
