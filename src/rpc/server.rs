//! The per-connection loop of `genai daemon`: reads frames, dispatches requests to the
//! framework, writes responses and notifications in the client's framing.
//!
//! Invariants (DESIGN §2): stdout carries protocol messages only; every request gets exactly one
//! response; bad input gets the JSON-RPC error and the loop goes on. This module must never hold
//! conversation state: the framework does.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};

use super::framing::{Frame, FrameCodec};
use super::protocol::*;
use crate::error::{Error, ErrorKind};
use crate::framework::Framework;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;

/// A JSON-RPC error object.
struct RpcError {
    code: i64,
    message: String,
    kind: Option<&'static str>,
}

impl From<Error> for RpcError {
    fn from(e: Error) -> Self {
        RpcError {
            code: e.kind.code(),
            message: e.message,
            kind: Some(e.kind.as_str()),
        }
    }
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            kind: None,
        }
    }

    fn to_json(&self, id: Value) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(kind) = self.kind {
            error["data"] = json!({"kind": kind});
        }
        json!({"jsonrpc": "2.0", "id": id, "error": error})
    }
}

/// What the loop should do after a message.
enum Flow {
    Continue,
    Shutdown,
}

/// Daemon→client requests sent and not yet answered, by the id the daemon gave them.
type PendingReplies = Arc<std::sync::Mutex<HashMap<String, ClientRequest>>>;

struct Session {
    fw: Arc<Framework>,
    pending: PendingReplies,
    /// Where responses that are answered later (tool calls) are written.
    out: mpsc::UnboundedSender<Bytes>,
    /// Requests answered later, waited for before the daemon exits.
    later: tokio_util::task::TaskTracker,
    /// JSON-RPC ids of `OnNewMessage` requests and their turn ids, for `$/cancelRequest`;
    /// an entry leaves when its turn's final response is forwarded.
    turns_by_request: Arc<std::sync::Mutex<HashMap<String, String>>>,
}

fn params<T: DeserializeOwned>(p: Value) -> Result<T, RpcError> {
    let p = if p.is_null() { json!({}) } else { p };
    serde_json::from_value(p).map_err(|e| RpcError {
        code: ErrorKind::InvalidParams.code(),
        message: format!("invalid params: {e}"),
        kind: Some(ErrorKind::InvalidParams.as_str()),
    })
}

fn ok<T: serde::Serialize>(v: T) -> Result<Value, RpcError> {
    serde_json::to_value(v)
        .map_err(|e| RpcError::new(-32603, format!("cannot encode the result: {e}")))
}

impl Session {
    /// Runs one request or notification; `None` for notifications.
    fn handle(&mut self, msg: Value) -> (Option<Value>, Flow) {
        let Value::Object(mut obj) = msg else {
            return (
                Some(
                    RpcError::new(INVALID_REQUEST, "a request must be a JSON object")
                        .to_json(Value::Null),
                ),
                Flow::Continue,
            );
        };
        let id = obj.remove("id");
        if let Some(id) = &id {
            if !(id.is_string() || id.is_number() || id.is_null()) {
                return (
                    Some(
                        RpcError::new(INVALID_REQUEST, "`id` must be a string or a number")
                            .to_json(Value::Null),
                    ),
                    Flow::Continue,
                );
            }
        }
        let method = match obj.remove("method") {
            Some(Value::String(m)) => m,
            None if obj.contains_key("result") || obj.contains_key("error") => {
                // A response to a request of ours (`RequestConfirmation`).
                let key = id.as_ref().map(Value::to_string).unwrap_or_default();
                let waiting = self.pending.lock().ok().and_then(|mut p| p.remove(&key));
                match waiting {
                    Some(request) => {
                        let answer = match obj.remove("error") {
                            Some(e) => Err(Error::new(
                                ErrorKind::FeatureError,
                                format!(
                                    "the client answered {} with an error: {}",
                                    request.method,
                                    e.get("message")
                                        .and_then(Value::as_str)
                                        .unwrap_or("no message")
                                ),
                            )),
                            None => Ok(obj.remove("result").unwrap_or(Value::Null)),
                        };
                        if let Some(tx) = request.reply.lock().ok().and_then(|mut r| r.take()) {
                            let _ = tx.send(answer);
                        }
                    }
                    None => tracing::debug!("ignoring a response to no request of ours: {key}"),
                }
                return (None, Flow::Continue);
            }
            _ => {
                let e = RpcError::new(INVALID_REQUEST, "a request needs a `method` string");
                return (Some(e.to_json(id.unwrap_or(Value::Null))), Flow::Continue);
            }
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            let e = RpcError::new(INVALID_REQUEST, "`jsonrpc` must be \"2.0\"");
            return (Some(e.to_json(id.unwrap_or(Value::Null))), Flow::Continue);
        }
        let p = obj.remove("params").unwrap_or(Value::Null);
        if matches!(method.as_str(), "ListTools" | "CallTool") {
            self.answer_later(method, p, id);
            return (None, Flow::Continue);
        }
        let mut flow = Flow::Continue;
        let result = self.dispatch(&method, p, id.as_ref(), &mut flow);
        let response = id.map(|id| match result {
            Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
            Err(e) => e.to_json(id),
        });
        (response, flow)
    }

    /// Runs a request that waits on the network (a tool source) off the read loop, so other
    /// requests go on; its response is written when it is ready (in a batch, on its own).
    fn answer_later(&self, method: String, p: Value, id: Option<Value>) {
        let fw = self.fw.clone();
        let out = self.out.clone();
        self.later.spawn(async move {
            let result = match method.as_str() {
                "ListTools" => match params::<ListToolsParams>(p) {
                    Ok(p) => {
                        let (tools, errors) = fw.toolbox.list(p.tools.as_deref()).await;
                        ok(ListToolsResult { tools, errors })
                    }
                    Err(e) => Err(e),
                },
                _ => match params::<CallToolParams>(p) {
                    Ok(p) => match fw.toolbox.call(&p.name, &p.arguments).await {
                        Ok(a) => ok(CallToolResult {
                            text: a.text,
                            is_error: a.is_error,
                            confirmation_link: a.confirmation_link,
                            actions: a.actions,
                            collect_link: a.collect_link,
                        }),
                        Err(e) => Err(e.into()),
                    },
                    Err(e) => Err(e),
                },
            };
            if let Some(id) = id {
                let response = match result {
                    Ok(v) => json!({"jsonrpc": "2.0", "id": id, "result": v}),
                    Err(e) => e.to_json(id),
                };
                let _ = out.send(Bytes::from(response.to_string()));
            }
        });
    }

    fn dispatch(
        &mut self,
        method: &str,
        p: Value,
        id: Option<&Value>,
        flow: &mut Flow,
    ) -> Result<Value, RpcError> {
        let fw = self.fw.clone();
        match method {
            "Initialize" => {
                let p: InitializeParams = params(p)?;
                fw.set_streaming(p.capabilities.streaming);
                ok(InitializeResult {
                    server_info: ServerInfo {
                        name: "genai".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                    },
                    protocol_version: PROTOCOL_VERSION.into(),
                    capabilities: json!({"streaming": p.capabilities.streaming, "framings": ["content-length", "ndjson"], "batches": true}),
                })
            }
            "ListComponents" => ok(fw.registry.components()?),
            "CreateServiceProvider" => {
                let p: CreateServiceProviderParams = params(p)?;
                let mut settings = p.settings;
                // The kind is the parameter's, whatever the settings say.
                settings.remove("kind");
                let c = crate::config::ProviderConfig::from_settings(&p.kind, settings).map_err(
                    |e| match e.kind {
                        ErrorKind::InvalidParams => {
                            Error::invalid_params(format!("invalid settings: {}", e.message))
                        }
                        _ => e,
                    },
                )?;
                fw.registry.create_provider(&p.name, &c, "runtime")?;
                ok(json!({}))
            }
            "CreateModelConfiguration" => {
                let p: CreateModelConfigurationParams = params(p)?;
                let c = crate::config::ModelConfigurationConfig {
                    format: p.format,
                    model: p.model,
                    parameters: p.parameters,
                };
                fw.registry.create_model(&p.name, &c, "runtime")?;
                ok(json!({}))
            }
            "RemoveComponent" => {
                let p: RemoveComponentParams = params(p)?;
                if !fw.registry.remove(&p.name)? {
                    return Err(Error::new(
                        ErrorKind::UnknownComponent,
                        format!("no component named `{}`", p.name),
                    )
                    .into());
                }
                ok(json!({}))
            }
            "CreateConversation" => ok(fw.create_conversation(params(p)?)?),
            "ResumeConversation" => {
                let p: ConversationIdParams = params(p)?;
                ok(fw.resume_conversation(&p.conversation_id, None)?)
            }
            "RemoveConversation" => {
                let p: ConversationIdParams = params(p)?;
                let id = fw.resolve_conversation(&p.conversation_id)?;
                if !fw.remove_conversation(&id)? {
                    return Err(Error::new(
                        ErrorKind::UnknownConversation,
                        format!("no open conversation {}", p.conversation_id),
                    )
                    .into());
                }
                ok(json!({}))
            }
            "DeleteConversation" => {
                let p: ConversationIdParams = params(p)?;
                fw.delete_conversation(&p.conversation_id)?;
                ok(json!({}))
            }
            "ListConversations" => {
                let p: ListConversationsParams = params(p)?;
                let (conversations, next_cursor) = fw
                    .store()
                    .list_conversations(p.page_size.clamp(1, 1000), p.cursor.as_deref())?;
                ok(ListConversationsResult {
                    conversations,
                    next_cursor,
                })
            }
            "GetConversationHistory" => {
                let p: GetConversationHistoryParams = params(p)?;
                let id = fw.resolve_conversation(&p.conversation_id)?;
                let (messages, next_cursor) =
                    fw.store()
                        .history(&id, p.page_size.clamp(1, 1000), p.cursor.as_deref())?;
                ok(GetConversationHistoryResult {
                    messages,
                    next_cursor,
                })
            }
            "OnNewMessage" => {
                let p: OnNewMessageParams = params(p)?;
                let turn_id = fw.on_new_message(&p.conversation_id, p.message.into_message())?;
                if let (Some(id), Ok(mut map)) = (id, self.turns_by_request.lock()) {
                    map.insert(id.to_string(), turn_id.clone());
                }
                ok(TurnIdResult { turn_id })
            }
            "CreateAIAgent" => ok(AgentIdResult {
                agent_id: fw.create_agent(params(p)?)?,
            }),
            "RemoveAIAgent" => {
                let p: AgentIdParams = params(p)?;
                if !fw.remove_agent(&p.agent_id)? {
                    return Err(Error::new(
                        ErrorKind::UnknownAgent,
                        format!("no agent {}", p.agent_id),
                    )
                    .into());
                }
                ok(json!({}))
            }
            "SendPrompt" => {
                let p: SendPromptParams = params(p)?;
                ok(RequestIdResult {
                    request_id: fw.send_prompt(&p.agent_id, p.prompt.into_messages())?,
                })
            }
            "GetHistory" => {
                let p: AgentIdParams = params(p)?;
                ok(fw.agent(&p.agent_id)?.history()?)
            }
            "SetModelParameter" => {
                let p: SetModelParameterParams = params(p)?;
                fw.agent(&p.agent_id)?.set_parameter(&p.name, p.value)?;
                ok(json!({}))
            }
            "RegisterFeature" => {
                fw.register_feature(&params(p)?)?;
                ok(json!({}))
            }
            "OnFeatureResponse" => {
                fw.on_feature_response(params(p)?)?;
                ok(json!({}))
            }
            "Cancel" => ok(CancelResult {
                cancelled: fw.cancel(&params(p)?)?,
            }),
            "$/cancelRequest" => {
                let id = p.get("id").map(Value::to_string).unwrap_or_default();
                let turn = self
                    .turns_by_request
                    .lock()
                    .ok()
                    .and_then(|m| m.get(&id).cloned());
                let cancelled = match turn {
                    Some(turn) => fw.cancel(&CancelParams {
                        turn_id: Some(turn),
                        ..Default::default()
                    })?,
                    None => false,
                };
                ok(CancelResult { cancelled })
            }
            "Shutdown" => {
                *flow = Flow::Shutdown;
                ok(json!({}))
            }
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("unknown method `{other}` (see docs/PROTOCOL.md)"),
            )),
        }
    }
}

/// Answers a daemon→client request on the client's behalf with an error.
fn refuse(request: &ClientRequest, why: &str) {
    if let Some(tx) = request.reply.lock().ok().and_then(|mut r| r.take()) {
        let _ = tx.send(Err(Error::new(
            ErrorKind::FeatureError,
            format!("{} not answered: {why}", request.method),
        )));
    }
}

/// Serves one client until `Shutdown` or the end of its input, then waits for running turns to
/// end (on `Shutdown` they are cancelled first) and flushes every notification.
pub async fn serve<R, W>(
    fw: Arc<Framework>,
    mut events: mpsc::UnboundedReceiver<Event>,
    input: R,
    output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let codec = FrameCodec::default();
    let mut reader = FramedRead::new(input, codec.clone());
    let mut writer = FramedWrite::new(output, codec);
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Bytes>();

    let write_task = tokio::spawn(async move {
        while let Some(frame) = out_rx.recv().await {
            writer.feed(frame).await?;
            // Write out what is queued, then flush once: a burst of chunks costs one flush.
            while let Ok(more) = out_rx.try_recv() {
                writer.feed(more).await?;
            }
            writer.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });

    let event_tx = out_tx.clone();
    let turns_by_request: Arc<std::sync::Mutex<HashMap<String, String>>> = Arc::default();
    let session_turns = turns_by_request.clone();
    let pending: PendingReplies = Arc::default();
    let event_pending = pending.clone();
    // Set once the client's input has ended: nobody is left to answer a request.
    let input_closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let event_input_closed = input_closed.clone();
    let (stop_events, mut stop) = tokio::sync::oneshot::channel::<()>();
    let event_task = tokio::spawn(async move {
        let mut next_request = 0u64;
        let mut forward = |event: Event| {
            if let Event::ClientRequest(request) = event {
                if event_input_closed.load(std::sync::atomic::Ordering::SeqCst) {
                    refuse(&request, "the client is gone");
                    return true;
                }
                next_request += 1;
                let id = json!(format!("genai-{next_request}"));
                let msg = json!({"jsonrpc": "2.0", "id": id, "method": request.method, "params": request.params});
                if let Ok(mut p) = event_pending.lock() {
                    p.insert(id.to_string(), request.clone());
                }
                // The input may have ended since the check above, after the pending drain.
                if event_input_closed.load(std::sync::atomic::Ordering::SeqCst) {
                    refuse(&request, "the client is gone");
                }
                return event_tx.send(Bytes::from(msg.to_string())).is_ok();
            }
            if let Event::OnFeatureResponse(r) = &event {
                if let (true, Ok(mut map)) = (r.is_final, turns_by_request.lock()) {
                    map.retain(|_, turn| turn != &r.turn_id);
                }
            }
            let mut v = serde_json::to_value(&event).unwrap_or_else(
                |e| json!({"method": "$/error", "params": {"message": e.to_string()}}),
            );
            v["jsonrpc"] = json!("2.0");
            event_tx.send(Bytes::from(v.to_string())).is_ok()
        };
        loop {
            tokio::select! {
                biased;
                event = events.recv() => match event {
                    Some(event) => if !forward(event) { break },
                    None => break,
                },
                _ = &mut stop => {
                    while let Ok(event) = events.try_recv() {
                        forward(event);
                    }
                    break;
                }
            }
        }
    });

    let mut session = Session {
        fw: fw.clone(),
        pending: pending.clone(),
        out: out_tx.clone(),
        later: tokio_util::task::TaskTracker::new(),
        turns_by_request: session_turns,
    };
    let mut shutdown = false;
    while let Some(frame) = reader.next().await {
        let body = match frame {
            Ok(Frame::Message(b)) => b,
            Ok(Frame::Malformed(why)) => {
                let _ = out_tx.send(Bytes::from(
                    RpcError::new(PARSE_ERROR, format!("parse error: {why}"))
                        .to_json(Value::Null)
                        .to_string(),
                ));
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
                let _ = out_tx.send(Bytes::from(
                    RpcError::new(PARSE_ERROR, format!("parse error: {e}"))
                        .to_json(Value::Null)
                        .to_string(),
                ));
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
            let _ = out_tx.send(Bytes::from(reply.to_string()));
        }
        if matches!(flow, Flow::Shutdown) {
            shutdown = true;
            break;
        }
    }
    // Requests the client will never answer now fail, so the turns waiting on them end.
    input_closed.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Ok(mut p) = pending.lock() {
        for (_, request) in p.drain() {
            refuse(&request, "the client is gone");
        }
    }
    if shutdown {
        fw.cancel_all();
    }
    // No client is left to answer a client-hosted feature's turn.
    fw.client_gone();
    fw.idle().await;
    session.later.close();
    session.later.wait().await;
    // The session holds a sender of the writer's channel: the writer ends once all are gone.
    drop(session);
    // Every turn has queued its final event: forward what is left, then drain the writer.
    let _ = stop_events.send(());
    let _ = event_task.await;
    drop(out_tx);
    write_task.await.map_err(std::io::Error::other)?
}
