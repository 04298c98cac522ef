//! The transport of `genai acp`: newline-delimited JSON-RPC 2.0 on stdin and stdout, as ACP's
//! stdio transport says, on the shared peer (`genai_peer`: lines, the writer, requests to the
//! client). Each line is one message: requests run in their own tasks (a prompt
//! waits for its turn while the next line, such as `session/cancel`, is read), notifications
//! at once, and answers to genai's own requests go to whoever waits on them.
//!
//! Invariants: stdout carries protocol messages only; every request gets exactly one response;
//! a malformed line gets its JSON-RPC error (-32700, -32600) and the loop goes on. At the end
//! of input the running turns are cancelled and every message is flushed before it returns.

use std::sync::Arc;

use agent_client_protocol_schema::v1::ErrorCode;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;

use super::agent::AcpAgent;
use super::connection::{AcpError, Connection};
use genai_core::session::Framework;
use genai_peer::{self as peer, outbox, Answer, Frame, FrameCodec, Link, Read};

/// What one line of input is.
enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Answer {
        id: Value,
        result: Answer,
    },
}

/// Reads one JSON-RPC message; the error carries the id to answer with (null when unknown).
fn classify(line: &[u8]) -> Result<Incoming, Box<(Value, AcpError)>> {
    let v: Value = serde_json::from_slice(line).map_err(|e| {
        Box::new((
            Value::Null,
            AcpError::new(ErrorCode::ParseError, format!("not JSON: {e}")),
        ))
    })?;
    let invalid = |id: Value, why: &str| {
        Err(Box::new((
            id,
            AcpError::new(ErrorCode::InvalidRequest, why.to_string()),
        )))
    };
    let Value::Object(mut m) = v else {
        return invalid(
            Value::Null,
            "a message must be one JSON object (ACP uses no batches)",
        );
    };
    let id = m.remove("id");
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id.unwrap_or(Value::Null), "`jsonrpc` must be \"2.0\"");
    }
    if let Some(id) = &id {
        if !(id.is_string() || id.is_number() || id.is_null()) {
            return invalid(Value::Null, "`id` must be a string or a number");
        }
    }
    let params = m.remove("params").unwrap_or(Value::Null);
    match (m.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
        (Some(_), id) => invalid(id.unwrap_or(Value::Null), "`method` must be a string"),
        (None, Some(id)) => {
            let result = match (m.remove("result"), m.remove("error")) {
                (Some(r), None) => Ok(r),
                (None, Some(e)) => Err(e),
                _ => return invalid(id, "a response has `result` or `error`"),
            };
            Ok(Incoming::Answer { id, result })
        }
        (None, None) => invalid(Value::Null, "a message needs a `method` or an `id`"),
    }
}

/// Serves one client until the end of its input, then cancels the running turns, waits for
/// the requests in flight to be answered and flushes every message.
pub async fn serve<R, W>(fw: Arc<Framework>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Unlike the daemon's, what waits for an ACP client is not bounded.
    let Link {
        peer,
        mut reader,
        writer,
    } = peer::connect(
        input,
        output,
        FrameCodec::lines_as_read(),
        outbox::UNBOUNDED,
        |line| line,
    );
    let conn = Arc::new(Connection::new(peer.clone()));
    let agent = Arc::new(AcpAgent::new(fw.clone(), conn.clone()));
    let mut requests = JoinSet::new();
    loop {
        let line = match reader.next().await {
            Read::Frame(Frame::Message(line)) => line,
            // Lines as read are never refused; were one, it would be answered as bad JSON.
            Read::Frame(Frame::Malformed(why)) => {
                tracing::warn!("bad input: {why}");
                conn.respond(Value::Null, Err(AcpError::new(ErrorCode::ParseError, why)));
                continue;
            }
            Read::Ended | Read::Overflowed => break,
            Read::Failed(e) => return Err(e),
        };
        match classify(&line) {
            Ok(Incoming::Request { id, method, params }) => {
                let agent = agent.clone();
                requests.spawn(async move {
                    let asked = params["sessionId"].as_str().map(str::to_string);
                    let result = agent.request(&method, params).await;
                    let opened = match &result {
                        Ok(r) => r["sessionId"].as_str().map(str::to_string).or(asked),
                        Err(e) => {
                            tracing::debug!(method, code = e.code, "{}", e.message);
                            None
                        }
                    };
                    agent.conn.respond(id, result);
                    agent.after(&method, opened.as_deref()).await;
                });
            }
            Ok(Incoming::Notification { method, params }) => agent.notification(&method, params),
            Ok(Incoming::Answer { id, result }) => {
                if !peer.answered(&id, result) {
                    tracing::warn!("an answer to no request of genai's (id {id})");
                }
            }
            Err(rejected) => {
                let (id, e) = *rejected;
                tracing::warn!("bad input: {}", e.message);
                conn.respond(id, Err(e));
            }
        }
        // Forget the requests already answered.
        while requests.try_join_next().is_some() {}
    }
    peer.close();
    fw.cancel_all();
    while requests.join_next().await.is_some() {}
    fw.idle().await;
    fw.close_all();
    writer.finish().await
}
