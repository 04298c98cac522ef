//! The per-connection loop of `genai daemon`: reads the peer's frames (`genai_peer`), hands
//! each message to the session's dispatcher, queues responses for the peer's writer.
//!
//! Invariants: stdout carries protocol messages only, every frame through the redactor; every
//! request gets exactly one response; bad input gets the JSON-RPC error and the loop goes on.
//! This module must never hold conversation state: the core does.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use super::dispatch::{Flow, Session};
use super::errors::{RpcError, INVALID_REQUEST, PARSE_ERROR};
use super::ids::RawIds;
use super::port::RpcPort;
use genai_core::session::Framework;
use genai_peer::{self as peer, outbox, Frame, FrameCodec, Link, Read};

/// A frame with every known secret masked: whatever reached a message (a model repeating a
/// key, a client-hosted feature's error), no key goes out on stdout.
fn redacted(frame: Bytes) -> Bytes {
    match std::str::from_utf8(&frame).map(genai_core::redact::redact_known) {
        Ok(std::borrow::Cow::Owned(masked)) => Bytes::from(masked),
        _ => frame,
    }
}

/// Serves one client until `Shutdown` or the end of its input, then waits for running turns to
/// end (on `Shutdown` they are cancelled first) and flushes every notification. A client that
/// stops reading its answers (more than [`outbox::DEFAULT_LIMIT`] bytes waiting) is
/// disconnected: its turns are cancelled and the function returns without flushing.
pub async fn serve<R, W>(fw: Arc<Framework>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with_limit(fw, input, output, outbox::DEFAULT_LIMIT).await
}

/// [`serve`] with this many bytes allowed to wait for the client.
pub(crate) async fn serve_with_limit<R, W>(
    fw: Arc<Framework>,
    input: R,
    output: W,
    limit: usize,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let ids = Arc::new(RawIds::default());
    let ids_out = ids.clone();
    let Link {
        peer,
        mut reader,
        writer,
    } = peer::connect(input, output, FrameCodec::default(), limit, move |frame| {
        ids_out.restore(redacted(frame))
    });
    let port = Arc::new(RpcPort::new(peer.clone()));
    let mut session = Session {
        fw: fw.clone(),
        port: port.clone(),
        peer: peer.clone(),
        later: tokio_util::task::TaskTracker::new(),
    };
    let send = |v: Value| {
        peer.send(v.to_string());
    };
    let mut shutdown = false;
    loop {
        let body = match reader.next().await {
            Read::Frame(Frame::Message(b)) => b,
            Read::Frame(Frame::Malformed(why)) => {
                send(
                    RpcError::new(PARSE_ERROR, format!("parse error: {why}")).to_json(Value::Null),
                );
                continue;
            }
            Read::Failed(e) => {
                tracing::warn!("reading input failed: {e}");
                break;
            }
            Read::Ended | Read::Overflowed => break,
        };
        let flow = if body.first() == Some(&b'[') {
            handle_batch(&mut session, &ids, &body, &send)
        } else {
            match serde_json::from_slice::<Value>(&body) {
                Ok(mut msg) => {
                    ids.protect(&body, &mut msg);
                    let (answer, flow) = session.handle(msg);
                    if let Some(answer) = answer {
                        send(answer);
                    }
                    flow
                }
                Err(e) => {
                    send(
                        RpcError::new(PARSE_ERROR, format!("parse error: {e}"))
                            .to_json(Value::Null),
                    );
                    Flow::Continue
                }
            }
        };
        if matches!(flow, Flow::Shutdown) {
            shutdown = true;
            break;
        }
    }
    // Requests the client will never answer now fail, so the turns waiting on them end.
    peer.close();
    if peer.overflowed() {
        // Nobody reads: nothing queued can be written, and waiting on turns would only queue
        // more. Their tasks end with the runtime.
        fw.cancel_all();
        let client: Arc<dyn genai_core::feature::port::ClientPort> = port.clone();
        fw.client_gone(&client);
        writer.abort();
        return Err(std::io::Error::other(
            "the client stopped reading its answers: disconnected",
        ));
    }
    if shutdown {
        fw.cancel_all();
    }
    // No client is left to answer a client-hosted feature's turn.
    let client: Arc<dyn genai_core::feature::port::ClientPort> = port.clone();
    fw.client_gone(&client);
    fw.idle().await;
    fw.close_all();
    session.later.close();
    session.later.wait().await;
    // Every turn has queued its final event: the writer drains what is queued, then ends.
    writer.finish().await
}

/// One batch: its members are read one at a time from the frame (never as one tree) and each
/// answer is written into the one answer array as soon as it is made, so a batch of many small
/// requests costs its answer's bytes, not a JSON tree per member and per answer.
fn handle_batch(session: &mut Session, ids: &RawIds, body: &[u8], send: &impl Fn(Value)) -> Flow {
    let members = match serde_json::from_slice::<Vec<&RawValue>>(body) {
        Ok(m) => m,
        Err(e) => {
            send(RpcError::new(PARSE_ERROR, format!("parse error: {e}")).to_json(Value::Null));
            return Flow::Continue;
        }
    };
    if members.is_empty() {
        send(RpcError::new(INVALID_REQUEST, "an empty batch").to_json(Value::Null));
        return Flow::Continue;
    }
    let mut flow = Flow::Continue;
    let mut answers = String::from("[");
    for raw in members {
        let Ok(mut msg) = serde_json::from_str::<Value>(raw.get()) else {
            continue;
        };
        ids.protect(raw.get().as_bytes(), &mut msg);
        let (answer, f) = session.handle(msg);
        if let Some(answer) = answer {
            if answers.len() > 1 {
                answers.push(',');
            }
            answers.push_str(&answer.to_string());
        }
        if matches!(f, Flow::Shutdown) {
            flow = Flow::Shutdown;
        }
    }
    if answers.len() > 1 {
        answers.push(']');
        session.peer.send(answers);
    }
    flow
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const DEADLINE: Duration = Duration::from_secs(20);

    /// The daemon's whole output for `input`, read to its end.
    async fn exchange(input: &[u8]) -> String {
        let (fw, _) = genai_core::session::scripted(vec![]);
        let (mut client, daemon_in) = tokio::io::duplex(1 << 16);
        let (daemon_out, mut output) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(serve(fw, daemon_in, daemon_out));
        client.write_all(input).await.unwrap();
        drop(client);
        let mut text = String::new();
        tokio::time::timeout(DEADLINE, output.read_to_string(&mut text))
            .await
            .unwrap()
            .unwrap();
        serving.await.unwrap().unwrap();
        text
    }

    #[tokio::test]
    async fn ids_come_back_byte_for_byte() {
        let out = exchange(
            b"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"ListProviders\"}\n\
              [{\"jsonrpc\":\"2.0\",\"id\":12345678901234567890123,\"method\":\"Nope\"},\
               {\"jsonrpc\":\"2.0\",\"id\":2.50,\"method\":\"Nope\"}]\n",
        )
        .await;
        assert!(out.contains("\"id\":18446744073709551616,"), "{out}");
        assert!(out.contains("\"id\":12345678901234567890123,"), "{out}");
        assert!(out.contains("\"id\":2.50,"), "{out}");
    }

    #[tokio::test]
    async fn a_message_with_only_jsonrpc_gets_an_invalid_request_error() {
        let out = exchange(b"{\"jsonrpc\":\"2.0\"}\n").await;
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["error"]["code"], INVALID_REQUEST, "{v}");
        assert_eq!(v["id"], Value::Null, "{v}");
    }

    #[tokio::test]
    async fn initialize_ignores_fields_it_does_not_know() {
        let out = exchange(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"Initialize\",\"params\":{\"processId\":7,\
              \"rootUri\":null,\"capabilities\":{\"streaming\":false,\"workspace\":{}}}}\n",
        )
        .await;
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["result"]["capabilities"]["streaming"], false, "{v}");
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_is_disconnected() {
        let (fw, _) = genai_core::session::scripted(vec![]);
        let (mut client, daemon_in) = tokio::io::duplex(1 << 16);
        // The daemon's output goes to a pipe nobody reads.
        let (daemon_out, _unread) = tokio::io::duplex(4096);
        let mut serving = tokio::spawn(serve_with_limit(fw, daemon_in, daemon_out, 1 << 20));
        let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ListComponents\"}\n";
        let writing = async {
            // Bounded: far more answers than the limit holds.
            for _ in 0..1_000_000 {
                if client.write_all(request).await.is_err() {
                    break;
                }
            }
            std::future::pending::<()>().await
        };
        let ended = tokio::time::timeout(DEADLINE, async {
            tokio::select! {
                r = &mut serving => r,
                _ = writing => unreachable!(),
            }
        })
        .await
        .expect("the daemon kept a client that does not read");
        let e = ended.unwrap().unwrap_err();
        assert!(e.to_string().contains("stopped reading"), "{e}");
    }
}
