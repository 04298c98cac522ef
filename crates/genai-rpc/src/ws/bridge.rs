//! `genai daemon --connect ws://...`: a stdio client of a shared `genai serve`, so an editor
//! that spawns `genai daemon` (the VS Code extension with `genai.daemon.url`) uses the shared
//! daemon instead of its own. It relays frames: each stdio request becomes the same request
//! over WebSocket, the `Event`s of one `Subscribe {}` come out as the daemon's notifications
//! and requests, and the editor's answers to those go back as `AnswerRequest`. It holds no
//! state of its own beyond the connection and must never run the core.

use std::sync::Arc;

use jsonrpsee::core::client::{ClientT, SubscriptionClientT};
use jsonrpsee::core::traits::ToRpcParams;
use jsonrpsee::ws_client::{HeaderMap, HeaderValue, WsClientBuilder};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};

use genai_core::error::{Error, ErrorKind, Result};
use genai_peer::{self as peer, outbox, Frame, FrameCodec, Link, Read};

/// A JSON value as a request's params.
struct Params(Value);

impl ToRpcParams for Params {
    fn to_rpc_params(
        self,
    ) -> std::result::Result<Option<Box<serde_json::value::RawValue>>, serde_json::Error> {
        if self.0.is_null() {
            return Ok(None);
        }
        serde_json::value::to_raw_value(&self.0).map(Some)
    }
}

fn error_response(id: Value, e: jsonrpsee::core::ClientError) -> Value {
    let error = match e {
        jsonrpsee::core::ClientError::Call(o) => {
            let mut error = json!({"code": o.code(), "message": o.message()});
            if let Some(data) = o.data() {
                error["data"] = serde_json::from_str(data.get()).unwrap_or(Value::Null);
            }
            error
        }
        other => json!({"code": -32603, "message": format!("genai serve: {other}")}),
    };
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

/// Relays `input`/`output` to the `genai serve` at `url` until the input ends or the server
/// goes away.
pub async fn relay(
    url: &str,
    token: &str,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> Result<()> {
    let mut headers = HeaderMap::new();
    let bearer = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| Error::new(ErrorKind::Config, "the serve token is not a valid header"))?;
    headers.insert("Authorization", bearer);
    let client = WsClientBuilder::default()
        .set_headers(headers)
        .max_buffer_capacity_per_subscription(65_536)
        .build(url)
        .await
        .map_err(|e| Error::new(ErrorKind::Config, format!("cannot connect to {url}: {e}")))?;
    let client = Arc::new(client);
    let mut events = client
        .subscribe::<Value, _>("Subscribe", Params(json!({})), "Unsubscribe")
        .await
        .map_err(|e| Error::new(ErrorKind::Config, format!("{url} refused Subscribe: {e}")))?;

    let Link {
        peer: out,
        mut reader,
        writer,
    } = peer::connect(
        input,
        output,
        FrameCodec::default(),
        outbox::UNBOUNDED,
        |frame| frame,
    );
    let forward = out.clone();
    let event_task = tokio::spawn(async move {
        while let Some(Ok(event)) = events.next().await {
            forward.send(event.to_string());
        }
    });
    let tasks = tokio_util::task::TaskTracker::new();
    loop {
        let body = match reader.next().await {
            Read::Frame(Frame::Message(body)) => body,
            Read::Frame(Frame::Malformed(why)) => {
                out.send(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": format!("parse error: {why}")}}).to_string());
                continue;
            }
            Read::Ended | Read::Overflowed | Read::Failed(_) => break,
        };
        let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
            out.send(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}).to_string());
            continue;
        };
        let (client, out) = (client.clone(), out.clone());
        let id = msg.get("id").cloned();
        match (msg.get("method").and_then(Value::as_str), id) {
            (Some("Shutdown"), Some(id)) => {
                // The shared daemon goes on; this client ends.
                out.send(json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string());
                break;
            }
            (Some(method), Some(id)) => {
                let method = method.to_string();
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                tasks.spawn(async move {
                    let answer = match client.request::<Value, _>(&method, Params(params)).await {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err(e) => error_response(id, e),
                    };
                    out.send(answer.to_string());
                });
            }
            // A notification (`$/cancelRequest`) has no WebSocket equivalent: `Cancel` is.
            (Some(_), None) => {}
            (None, Some(id)) => {
                // The editor's answer to a daemon request.
                let mut p = json!({"id": id});
                match msg.get("error") {
                    Some(e) => p["error"] = e.clone(),
                    None => p["result"] = msg.get("result").cloned().unwrap_or(Value::Null),
                }
                tasks.spawn(async move {
                    if let Err(e) = client.request::<Value, _>("AnswerRequest", Params(p)).await {
                        tracing::warn!("AnswerRequest failed: {e}");
                    }
                });
            }
            (None, None) => {}
        }
    }
    tasks.close();
    tasks.wait().await;
    event_task.abort();
    // A closed stdout only ends the relay, as the end of its input does.
    let _ = writer.finish().await;
    Ok(())
}
