//! The per-connection loop of `genai daemon`: reads frames, hands each message to the
//! session's dispatcher, writes responses and notifications in the client's framing.
//!
//! Invariants: stdout carries protocol messages only; every request gets exactly one response;
//! bad input gets the JSON-RPC error and the loop goes on. This module must never hold
//! conversation state: the core does.

use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};

use super::dispatch::{Flow, Session};
use super::errors::{RpcError, INVALID_REQUEST, PARSE_ERROR};
use super::framing::{Frame, FrameCodec};
use super::port::RpcPort;
use crate::session::Framework;

/// Serves one client until `Shutdown` or the end of its input, then waits for running turns to
/// end (on `Shutdown` they are cancelled first) and flushes every notification.
pub async fn serve<R, W>(fw: Arc<Framework>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let codec = FrameCodec::default();
    let mut reader = FramedRead::new(input, codec.clone());
    let mut writer = FramedWrite::new(output, codec);
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Bytes>();
    // Open conversations keep the port (and so a sender) alive: the writer stops when told.
    let (stop_writer, mut stop) = tokio::sync::oneshot::channel::<()>();
    let write_task = tokio::spawn(async move {
        let mut stopping = false;
        loop {
            let frame = if stopping {
                out_rx.try_recv().ok()
            } else {
                tokio::select! {
                    biased;
                    frame = out_rx.recv() => frame,
                    _ = &mut stop => {
                        stopping = true;
                        continue;
                    }
                }
            };
            let Some(frame) = frame else { break };
            writer.feed(frame).await?;
            // Write out what is queued, then flush once: a burst of chunks costs one flush.
            while let Ok(more) = out_rx.try_recv() {
                writer.feed(more).await?;
            }
            writer.flush().await?;
        }
        writer.flush().await?;
        Ok::<_, std::io::Error>(())
    });

    let port = Arc::new(RpcPort::new(out_tx.clone()));
    let mut session = Session {
        fw: fw.clone(),
        port: port.clone(),
        out: out_tx.clone(),
        later: tokio_util::task::TaskTracker::new(),
    };
    let send = |v: Value| {
        let _ = out_tx.send(Bytes::from(v.to_string()));
    };
    let mut shutdown = false;
    while let Some(frame) = reader.next().await {
        let body = match frame {
            Ok(Frame::Message(b)) => b,
            Ok(Frame::Malformed(why)) => {
                send(
                    RpcError::new(PARSE_ERROR, format!("parse error: {why}")).to_json(Value::Null),
                );
                continue;
            }
            Err(e) => {
                tracing::warn!("reading input failed: {e}");
                break;
            }
        };
        let msg: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                send(RpcError::new(PARSE_ERROR, format!("parse error: {e}")).to_json(Value::Null));
                continue;
            }
        };
        let mut flow = Flow::Continue;
        let reply = match msg {
            Value::Array(items) if items.is_empty() => {
                Some(RpcError::new(INVALID_REQUEST, "an empty batch").to_json(Value::Null))
            }
            Value::Array(items) => {
                let mut answers = Vec::new();
                for item in items {
                    let (answer, f) = session.handle(item);
                    answers.extend(answer);
                    if matches!(f, Flow::Shutdown) {
                        flow = Flow::Shutdown;
                    }
                }
                (!answers.is_empty()).then_some(Value::Array(answers))
            }
            single => {
                let (answer, f) = session.handle(single);
                flow = f;
                answer
            }
        };
        if let Some(reply) = reply {
            send(reply);
        }
        if matches!(flow, Flow::Shutdown) {
            shutdown = true;
            break;
        }
    }
    // Requests the client will never answer now fail, so the turns waiting on them end.
    port.input_closed();
    if shutdown {
        fw.cancel_all();
    }
    // No client is left to answer a client-hosted feature's turn.
    let client: Arc<dyn crate::feature::port::ClientPort> = port.clone();
    fw.client_gone(&client);
    fw.idle().await;
    session.later.close();
    session.later.wait().await;
    // Every turn has queued its final event: the writer drains what is queued, then ends.
    let _ = stop_writer.send(());
    write_task.await.map_err(std::io::Error::other)?
}
