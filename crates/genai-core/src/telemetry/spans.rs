//! The spans genai opens, named and attributed as OpenTelemetry's GenAI semantic conventions
//! say: the gateway's HTTP request (server), a turn (`invoke_agent`), each model request
//! (`chat {model}`, client), each embeddings request (`embeddings {model}`, client), each
//! tool call (`execute_tool {tool}`) and each permission
//! decision (`permission {tool}`, genai's own `genai.permission.*` attributes).
//!
//! It owns those names and attributes. It must never put a prompt, a reply or a tool's
//! arguments in a span unless [`content`](super::content) is on (and then masked by the
//! redactor), never a key (a virtual key is named by its name), and never compute an
//! attribute for a disabled span (traces off: each function is a branch).

use serde_json::{json, Value};
use tracing::field::Empty;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::TARGET;
use crate::error::Error;
use crate::format::ModelReply;
use crate::message::{Message, Part, Usage};

/// The span of one HTTP request to the gateway, the child of the client's trace when its
/// `traceparent` names one.
pub fn request(method: &http::Method, path: &str, headers: &http::HeaderMap) -> Span {
    let span = tracing::info_span!(target: TARGET, "request", otel.name = Empty, otel.kind = "server", otel.status_code = Empty);
    if span.is_disabled() {
        return span;
    }
    super::propagate::continue_from(&span, headers);
    span.record("otel.name", format!("{method} {path}"));
    span.set_attribute("http.request.method", method.to_string());
    span.set_attribute("url.path", path.to_string());
    span
}

/// The request's answer: its status (an error from 500 up).
pub fn answered(span: &Span, status: u16) {
    if span.is_disabled() {
        return;
    }
    span.set_attribute("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.record("otel.status_code", "error");
        span.set_attribute("error.type", status.to_string());
    }
}

/// The name of the virtual key (or `serve-token`) the current request came with: its name
/// only, never the key.
pub fn caller(key_name: &str) {
    let span = Span::current();
    if !span.is_disabled() {
        span.set_attribute("genai.key.name", key_name.to_string());
    }
}

/// The span of one turn: a conversation's (`conversation`, `turn`) or a gateway request's.
pub fn turn(conversation: Option<&str>, turn: Option<&str>, agent: &str) -> Span {
    let span = tracing::info_span!(target: TARGET, "invoke_agent", otel.name = Empty, otel.kind = "internal", otel.status_code = Empty);
    if span.is_disabled() {
        return span;
    }
    span.record("otel.name", format!("invoke_agent {agent}"));
    span.set_attribute("gen_ai.operation.name", "invoke_agent");
    span.set_attribute("gen_ai.agent.name", agent.to_string());
    if let Some(c) = conversation {
        span.set_attribute("gen_ai.conversation.id", c.to_string());
    }
    if let Some(t) = turn {
        span.set_attribute("genai.turn.id", t.to_string());
    }
    span
}

/// How a turn ended: its token counts, its model, its error.
pub fn turn_ended(span: &Span, usage: Option<&Usage>, model: Option<&str>, error: Option<&Error>) {
    if span.is_disabled() {
        return;
    }
    if let Some(m) = model {
        span.set_attribute("gen_ai.response.model", m.to_string());
    }
    usage_on(span, usage);
    if let Some(e) = error {
        failed(span, e);
    }
}

/// The span of one request to a model: `provider` its instance, `kind` the provider's kind.
pub fn chat(provider: &str, kind: &str, model: &str, messages: &[Message]) -> Span {
    let span = tracing::info_span!(target: TARGET, "chat", otel.name = Empty, otel.kind = "client", otel.status_code = Empty);
    if span.is_disabled() {
        return span;
    }
    span.record("otel.name", format!("chat {model}"));
    span.set_attribute("gen_ai.operation.name", "chat");
    span.set_attribute("gen_ai.provider.name", provider_name(kind).to_string());
    span.set_attribute("gen_ai.request.model", model.to_string());
    span.set_attribute("genai.provider", provider.to_string());
    if super::content() {
        let sent = Value::Array(messages.iter().map(message_json).collect());
        span.set_attribute("gen_ai.input.messages", masked(&sent));
    }
    span
}

/// The span of one embeddings request to `provider`'s `model` (no input text: the
/// conventions' embeddings spans carry none).
pub fn embeddings(provider: &str, kind: &str, model: &str) -> Span {
    let span = tracing::info_span!(target: TARGET, "embeddings", otel.name = Empty, otel.kind = "client", otel.status_code = Empty);
    if span.is_disabled() {
        return span;
    }
    span.record("otel.name", format!("embeddings {model}"));
    span.set_attribute("gen_ai.operation.name", "embeddings");
    span.set_attribute("gen_ai.provider.name", provider_name(kind).to_string());
    span.set_attribute("gen_ai.request.model", model.to_string());
    span.set_attribute("genai.provider", provider.to_string());
    span
}

/// How an embeddings request ended: its input tokens when counted, or its error.
pub fn embeddings_ended(span: &Span, answer: Result<Option<u64>, &Error>) {
    if span.is_disabled() {
        return;
    }
    match answer {
        Ok(Some(tokens)) => span.set_attribute(
            "gen_ai.usage.input_tokens",
            i64::try_from(tokens).unwrap_or(i64::MAX),
        ),
        Ok(None) => {}
        Err(e) => failed(span, e),
    }
}

/// How a model request ended: the reply's model, finish, token counts (and text, with
/// content on), or its error.
pub fn chat_ended(span: &Span, reply: Result<&ModelReply, &Error>) {
    if span.is_disabled() {
        return;
    }
    let reply = match reply {
        Ok(r) => r,
        Err(e) => return failed(span, e),
    };
    if let Some(m) = &reply.model {
        span.set_attribute("gen_ai.response.model", m.clone());
    }
    if let Some(f) = &reply.finish_reason {
        let reasons = opentelemetry::Array::String(vec![f.clone().into()]);
        span.set_attribute(
            "gen_ai.response.finish_reasons",
            opentelemetry::Value::Array(reasons),
        );
    }
    usage_on(span, reply.usage.as_ref());
    if super::content() {
        let mut out = message_json(&reply.message);
        if let Some(f) = &reply.finish_reason {
            out["finish_reason"] = json!(f);
        }
        span.set_attribute("gen_ai.output.messages", masked(&json!([out])));
    }
}

/// The span of one tool call.
pub fn tool(name: &str, call_id: &str, arguments: &Value) -> Span {
    let span = tracing::info_span!(target: TARGET, "execute_tool", otel.name = Empty, otel.kind = "internal");
    if span.is_disabled() {
        return span;
    }
    span.record("otel.name", format!("execute_tool {name}"));
    span.set_attribute("gen_ai.operation.name", "execute_tool");
    span.set_attribute("gen_ai.tool.name", name.to_string());
    span.set_attribute("gen_ai.tool.call.id", call_id.to_string());
    span.set_attribute("gen_ai.tool.type", "function");
    if super::content() {
        span.set_attribute("gen_ai.tool.call.arguments", masked(arguments));
    }
    span
}

/// A permission decision on a tool call: a short span under the call's, saying what was
/// decided and by what (a rule, the mode, the user, a hook).
pub fn decided(tool: &str, call_id: &str, allowed: bool, by: &str) {
    let span = tracing::info_span!(target: TARGET, "permission", otel.name = Empty, otel.kind = "internal");
    if span.is_disabled() {
        return;
    }
    span.record("otel.name", format!("permission {tool}"));
    span.set_attribute("gen_ai.tool.name", tool.to_string());
    span.set_attribute("gen_ai.tool.call.id", call_id.to_string());
    let decision = if allowed { "allow" } else { "deny" };
    span.set_attribute("genai.permission.decision", decision);
    span.set_attribute(
        "genai.permission.by",
        crate::redact::redact(by).into_owned(),
    );
}

/// The error on a span: its stable kind as `error.type`, the span's status an error.
fn failed(span: &Span, e: &Error) {
    span.record("otel.status_code", "error");
    span.set_attribute("error.type", e.kind.as_str());
}

fn usage_on(span: &Span, usage: Option<&Usage>) {
    let Some(u) = usage else { return };
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    span.set_attribute("gen_ai.usage.input_tokens", count(u.input_tokens));
    span.set_attribute("gen_ai.usage.output_tokens", count(u.output_tokens));
}

/// The conventions' name of a provider kind (`gen_ai.provider.name`); a kind they do not
/// name keeps its own.
fn provider_name(kind: &str) -> &str {
    match kind {
        "gemini" => "gcp.gemini",
        "bedrock" => "aws.bedrock",
        "azure-openai" => "azure.ai.openai",
        other => other,
    }
}

/// A message as the conventions' `gen_ai.*.messages` item: its role and parts.
fn message_json(m: &Message) -> Value {
    let parts: Vec<Value> = m.content.iter().map(part_json).collect();
    json!({ "role": m.role.as_str(), "parts": parts })
}

fn part_json(p: &Part) -> Value {
    match p {
        Part::Text { text } => json!({ "type": "text", "content": text }),
        Part::Json { value } => json!({ "type": "text", "content": value.to_string() }),
        Part::ToolCall {
            id,
            name,
            arguments,
            ..
        } => json!({ "type": "tool_call", "id": id, "name": name, "arguments": arguments }),
        Part::ToolResult {
            tool_call_id,
            content,
            ..
        } => {
            let text: Vec<Value> = content.iter().map(part_json).collect();
            json!({ "type": "tool_call_response", "id": tool_call_id, "response": text })
        }
        Part::Reasoning { text, .. } => json!({ "type": "reasoning", "content": text }),
        Part::Image { .. } => json!({ "type": "blob", "modality": "image" }),
    }
}

/// JSON text with every secret genai knows, and every key-shaped token, masked.
fn masked(v: &Value) -> String {
    crate::redact::redact(&v.to_string()).into_owned()
}
