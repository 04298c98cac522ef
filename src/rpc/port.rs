//! The daemon's client port: turns the core's events into this connection's notifications
//! (`OnFeatureResponseChunk`, `OnReasoningChunk`, `OnFeatureResponse`, `OnToolCallChunk`, `DoAction`,
//! `OnPromptResponse*`, `OnNewMessage` to a hosting client) and the core's questions into
//! daemon→client requests (`RequestConfirmation`, `OnMiddleware`) whose answers it matches by
//! id.
//!
//! It owns what the connection must remember about those: the client's streaming choice, the
//! requests it sent and waits on, and which `OnNewMessage` request started which turn (for
//! `$/cancelRequest`). It must never decide anything about a turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::outbox::Outbox;

use super::protocol::*;
use crate::error::{Error, ErrorKind, Result};
use crate::feature::port::{
    ClientPort, Confirmation, HostedTurn, MiddlewareCall, PromptEvent, PromptRef, TurnEvent,
    TurnRef,
};
use crate::feature::TurnOutcome;
use crate::message::Message;

/// A daemon→client request waiting for its answer.
struct Waiting {
    method: &'static str,
    reply: oneshot::Sender<Result<Value>>,
}

pub struct RpcPort {
    out: Outbox,
    streaming: AtomicBool,
    /// Requests sent to the client and not answered yet, by the id genai gave them.
    waiting: Mutex<HashMap<String, Waiting>>,
    next_request: AtomicU64,
    /// Set once the client's input has ended: nobody is left to answer a request.
    input_closed: AtomicBool,
    /// JSON-RPC ids of `OnNewMessage` requests and their turn ids; an entry leaves when its
    /// turn's final response is sent.
    turns_by_request: Mutex<HashMap<String, String>>,
}

impl RpcPort {
    /// A port writing its frames (JSON texts) to `out`.
    pub fn new(out: Outbox) -> RpcPort {
        RpcPort {
            out,
            streaming: AtomicBool::new(true),
            waiting: Mutex::default(),
            next_request: AtomicU64::new(0),
            input_closed: AtomicBool::new(false),
            turns_by_request: Mutex::default(),
        }
    }

    /// The client's choice (`Initialize.capabilities.streaming`).
    pub fn set_streaming(&self, on: bool) {
        self.streaming.store(on, Ordering::Relaxed);
    }

    fn notify(&self, event: Event) {
        let mut v = serde_json::to_value(&event)
            .unwrap_or_else(|e| json!({"method": "$/error", "params": {"message": e.to_string()}}));
        v["jsonrpc"] = json!("2.0");
        // A closed channel means the client is gone; there is no one left to tell.
        let _ = self.out.send(Bytes::from(v.to_string()));
    }

    /// Remembers that the request `id` started `turn_id`.
    pub fn started_turn(&self, id: &Value, turn_id: &str) {
        if let Ok(mut map) = self.turns_by_request.lock() {
            map.insert(id.to_string(), turn_id.to_string());
        }
    }

    /// The turn the request `id` started, while it runs.
    pub fn turn_of_request(&self, id: &Value) -> Option<String> {
        self.turns_by_request
            .lock()
            .ok()
            .and_then(|m| m.get(&id.to_string()).cloned())
    }

    /// The client answered a request of ours: hands the answer over. False when no request
    /// of ours had that id.
    pub fn answered(&self, id: &Value, answer: std::result::Result<Value, Value>) -> bool {
        let waiting = self
            .waiting
            .lock()
            .ok()
            .and_then(|mut w| w.remove(&id.to_string()));
        let Some(w) = waiting else {
            return false;
        };
        let answer = answer.map_err(|e| {
            Error::new(
                ErrorKind::FeatureError,
                format!(
                    "the client answered {} with an error: {}",
                    w.method,
                    e.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("no message")
                ),
            )
        });
        let _ = w.reply.send(answer);
        true
    }

    /// The client's input ended: requests it will never answer fail, and no new one is sent.
    pub fn input_closed(&self) {
        self.input_closed.store(true, Ordering::SeqCst);
        if let Ok(mut w) = self.waiting.lock() {
            for (_, request) in w.drain() {
                refuse(request, "the client is gone");
            }
        }
    }

    /// Sends the client a request and waits for its answer.
    async fn request(&self, method: &'static str, params: Value) -> Result<Value> {
        let (tx, rx) = oneshot::channel();
        let waiting = Waiting { method, reply: tx };
        if self.input_closed.load(Ordering::SeqCst) {
            refuse(waiting, "the client is gone");
        } else {
            let n = self.next_request.fetch_add(1, Ordering::Relaxed) + 1;
            let id = json!(format!("genai-{n}"));
            let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            if let Ok(mut w) = self.waiting.lock() {
                w.insert(id.to_string(), waiting);
            }
            let _ = self.out.send(Bytes::from(msg.to_string()));
            // The input may have ended since the check above, after the waiting list was
            // drained: nobody would answer.
            if self.input_closed.load(Ordering::SeqCst) {
                let left = self
                    .waiting
                    .lock()
                    .ok()
                    .and_then(|mut w| w.remove(&id.to_string()));
                if let Some(w) = left {
                    refuse(w, "the client is gone");
                }
            }
        }
        rx.await.unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::FeatureError,
                format!("{method} not answered: the client is gone"),
            ))
        })
    }
}

/// Answers a daemon→client request on the client's behalf with an error.
fn refuse(request: Waiting, why: &str) {
    let _ = request.reply.send(Err(Error::new(
        ErrorKind::FeatureError,
        format!("{} not answered: {why}", request.method),
    )));
}

/// The final (or a step's) `OnFeatureResponse` of a turn.
fn feature_response(turn: &TurnRef, o: TurnOutcome, is_final: bool) -> FeatureResponse {
    FeatureResponse {
        conversation_id: turn.conversation_id.clone(),
        turn_id: turn.turn_id.clone(),
        summary: o.summary,
        detailed_response: o.detailed,
        is_final,
        is_success: o.error.is_none(),
        error: o.error.as_ref().map(ErrorInfo::from),
        usage: o.usage,
        cost: o.cost,
        model: o.model,
        finish_reason: o.finish_reason,
    }
}

#[async_trait]
impl ClientPort for RpcPort {
    fn streaming(&self) -> bool {
        self.streaming.load(Ordering::Relaxed)
    }

    fn turn_event(&self, turn: &TurnRef, event: TurnEvent) {
        let event = match event {
            TurnEvent::Chunk(delta) => Event::OnFeatureResponseChunk(FeatureResponseChunk {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                delta,
            }),
            TurnEvent::Reasoning(delta) => Event::OnReasoningChunk(FeatureResponseChunk {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                delta,
            }),
            // The protocol tells a tool run through `detailedResponse`, not as it happens.
            TurnEvent::ToolStarted { .. } | TurnEvent::ToolFinished { .. } => return,
            TurnEvent::ToolCall(d) => Event::OnToolCallChunk(ToolCallChunk {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                index: d.index as u32,
                id: d.id,
                name: d.name,
                arguments: d.arguments,
            }),
            TurnEvent::Action {
                message_id,
                sequence,
                action,
            } => Event::DoAction(DoActionParams {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                message_id,
                sequence,
                action,
            }),
            TurnEvent::Step { summary, detailed } => {
                let step = TurnOutcome {
                    summary,
                    detailed,
                    ..Default::default()
                };
                Event::OnFeatureResponse(feature_response(turn, step, false))
            }
            TurnEvent::Done(outcome) => {
                if let Ok(mut map) = self.turns_by_request.lock() {
                    map.retain(|_, t| t != &turn.turn_id);
                }
                Event::OnFeatureResponse(feature_response(turn, outcome, true))
            }
        };
        self.notify(event);
    }

    fn prompt_event(&self, prompt: &PromptRef, event: PromptEvent) {
        let event = match event {
            PromptEvent::Chunk(delta) => Event::OnPromptResponseChunk(PromptResponseChunk {
                agent_id: prompt.agent_id.clone(),
                request_id: prompt.request_id.clone(),
                delta,
            }),
            PromptEvent::Done(result) => {
                let (message, usage, finish_reason, error) = match result {
                    Ok(r) => (Some(r.message), r.usage, r.finish_reason, None),
                    Err(e) => (None, None, None, Some(ErrorInfo::from(&e))),
                };
                Event::OnPromptResponse(PromptResponse {
                    agent_id: prompt.agent_id.clone(),
                    request_id: prompt.request_id.clone(),
                    is_success: error.is_none(),
                    message,
                    error,
                    usage,
                    finish_reason,
                })
            }
        };
        self.notify(event);
    }

    fn hosted_turn(&self, turn: HostedTurn) {
        self.notify(Event::OnNewMessage(NewMessageToFeature {
            conversation_id: turn.turn.conversation_id,
            agent_id: turn.agent_id,
            turn_id: turn.turn.turn_id,
            feature: turn.feature,
            message: turn.message,
        }));
    }

    async fn confirm(&self, c: Confirmation) -> Result<bool> {
        let params = RequestConfirmationParams {
            conversation_id: c.turn.conversation_id,
            turn_id: c.turn.turn_id,
            text: c.text,
            link: c.link,
            tool: c.tool,
        };
        let answer = self
            .request(
                "RequestConfirmation",
                serde_json::to_value(params).unwrap_or_default(),
            )
            .await?;
        Ok(answer.get("confirmed").and_then(Value::as_bool) == Some(true))
    }

    async fn middleware(&self, call: MiddlewareCall) -> Result<Vec<Message>> {
        let params = OnMiddlewareParams {
            name: call.name,
            format: call.format,
            model: call.model,
            messages: call.messages,
        };
        let answer = self
            .request(
                "OnMiddleware",
                serde_json::to_value(params).unwrap_or_default(),
            )
            .await?;
        serde_json::from_value::<OnMiddlewareResult>(answer)
            .map(|r| r.messages)
            .map_err(|e| {
                Error::new(
                    ErrorKind::FeatureError,
                    format!("the client's OnMiddleware answer is not {{messages}}: {e}"),
                )
            })
    }
}
