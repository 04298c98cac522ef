//! The `redact` middleware: text that matches a pattern (regexes of the config, and built-in
//! detectors for API keys, AWS keys, private-key blocks and bearer tokens) is replaced by a
//! placeholder in every text the request carries (text parts, JSON values, tool arguments and
//! results), so it never leaves the machine; with `replies = true`, the reply too.
//!
//! It owns the detectors. Its notes give counts by detector, never what matched.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use regex::Regex;
use serde_json::Value;

use super::{BuildContext, Kind, Middleware, Request};
use crate::error::Result;
use crate::format::ModelReply;
use crate::message::{Message, Part};

/// Replaces secrets (API keys, AWS keys, private keys, bearer tokens) and the config's
/// patterns with placeholders before a request leaves.
pub(crate) const KIND: Kind = Kind {
    name: "redact",
    build,
};

/// The built-in detectors: a label and its pattern.
const DETECTORS: &[(&str, &str)] = &[
    (
        "private key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
    ),
    (
        "AWS key",
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b",
    ),
    (
        "AWS key",
        r"(?i)aws_?secret_?access_?key\W{0,4}[A-Za-z0-9/+=]{40}\b",
    ),
    ("bearer token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}"),
    (
        "API key",
        r"\b(?:sk-(?:ant-|proj-|or-)?[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{35}|gh[pousr]_[A-Za-z0-9]{36,}|glpat-[A-Za-z0-9_-]{20,}|xox[abprs]-[A-Za-z0-9-]{10,})",
    ),
];

struct Redact {
    /// (label, pattern) in the order they are applied.
    patterns: Vec<(String, Regex)>,
    replies: bool,
}

fn build(ctx: &BuildContext<'_>) -> Result<Arc<dyn Middleware>> {
    ctx.check_settings(&["kind", "patterns", "builtin", "replies"])?;
    let mut patterns = Vec::new();
    if ctx.flag("builtin", true)? {
        for (label, p) in DETECTORS {
            patterns.push((
                label.to_string(),
                Regex::new(p).expect("a built-in pattern"),
            ));
        }
    }
    let configured = match ctx.settings.get("patterns") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(other) => {
            return Err(ctx.bad(format!("`patterns` must be a list of regexes, not {other}")))
        }
    };
    for (i, p) in configured.iter().enumerate() {
        let text = p
            .as_str()
            .ok_or_else(|| ctx.bad(format!("patterns[{i}] must be a string")))?;
        let re = Regex::new(text)
            .map_err(|e| ctx.bad(format!("patterns[{i}] is not a valid regex: {e}")))?;
        patterns.push(("pattern".to_string(), re));
    }
    Ok(Arc::new(Redact {
        patterns,
        replies: ctx.flag("replies", false)?,
    }))
}

/// How many of each label were replaced.
type Counts = BTreeMap<String, usize>;

impl Redact {
    fn text(&self, text: &mut String, counts: &mut Counts) {
        for (label, re) in &self.patterns {
            let found = re.find_iter(text).count();
            if found > 0 {
                *counts.entry(label.clone()).or_default() += found;
                let placeholder = format!("[REDACTED {label}]");
                *text = re.replace_all(text, placeholder.as_str()).into_owned();
            }
        }
    }

    fn value(&self, v: &mut Value, counts: &mut Counts) {
        match v {
            Value::String(s) => self.text(s, counts),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i, counts)),
            Value::Object(o) => o.values_mut().for_each(|i| self.value(i, counts)),
            _ => {}
        }
    }

    fn parts(&self, parts: &mut [Part], counts: &mut Counts) {
        for part in parts {
            match part {
                Part::Text { text } => self.text(text, counts),
                Part::Json { value } => self.value(value, counts),
                Part::ToolCall { arguments, .. } => self.value(arguments, counts),
                Part::ToolResult { content, .. } => self.parts(content, counts),
                Part::Image { .. } | Part::Reasoning { .. } => {}
            }
        }
    }
}

/// `3 replaced (2 API key, 1 bearer token)`.
fn summary(counts: &Counts) -> String {
    let total: usize = counts.values().sum();
    let each: Vec<String> = counts.iter().map(|(l, n)| format!("{n} {l}")).collect();
    format!("{total} replaced ({})", each.join(", "))
}

#[async_trait]
impl Middleware for Redact {
    async fn on_request(&self, request: Request<'_>) -> Result<Vec<Message>> {
        let mut messages = request.messages;
        let mut counts = Counts::new();
        for m in &mut messages {
            self.parts(&mut m.content, &mut counts);
        }
        if !counts.is_empty() {
            request.notes.push(summary(&counts));
        }
        Ok(messages)
    }

    async fn on_reply(&self, reply: &mut ModelReply, notes: &mut Vec<String>) -> Result<()> {
        if !self.replies {
            return Ok(());
        }
        let mut counts = Counts::new();
        self.parts(&mut reply.message.content, &mut counts);
        if !counts.is_empty() {
            notes.push(summary(&counts));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::testing::{build, caps, run};
    use serde_json::json;

    #[tokio::test]
    async fn built_in_detectors_and_patterns_replace_secrets_and_notes_count_them() {
        let m = build(
            "redact",
            json!({"kind": "redact", "patterns": ["(?i)project zeus"]}),
        );
        let secret_key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234";
        let aws = "AKIAIOSFODNN7EXAMPLE";
        let pem =
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----";
        let text = format!(
            "key {secret_key} and {aws}, Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc.def\n{pem}\nabout Project Zeus"
        );
        let messages = vec![
            Message::user(text),
            Message {
                role: crate::message::Role::Assistant,
                content: vec![Part::ToolCall {
                    id: "1".into(),
                    name: "f".into(),
                    arguments: json!({"token": secret_key}),
                    signature: None,
                }],
                from: None,
            },
        ];
        let (sent, notes) = run(&m, messages.clone(), &caps()).await.unwrap();
        let all = serde_json::to_string(&sent).unwrap();
        for secret in [
            secret_key,
            aws,
            "eyJhbGciOiJIUzI1NiJ9",
            "MIIEpAIBAAKCAQEA",
            "Project Zeus",
        ] {
            assert!(!all.contains(secret), "{secret} in {all}");
        }
        assert!(all.contains("[REDACTED API key]") && all.contains("[REDACTED private key]"));
        assert_eq!(
            notes,
            ["6 replaced (2 API key, 1 AWS key, 1 bearer token, 1 pattern, 1 private key)"]
        );
        assert!(!notes[0].contains("sk-"));
        // Nothing to find: nothing noted, nothing changed.
        let (same, notes) = run(&m, vec![Message::user("hello")], &caps())
            .await
            .unwrap();
        assert_eq!(same, vec![Message::user("hello")]);
        assert!(notes.is_empty());
    }

    #[tokio::test]
    async fn replies_are_redacted_only_when_asked() {
        let reply = || {
            ModelReply::assistant(
                vec![Part::text("use Bearer abcdefghijklmnopqrstuvwxyz123456")],
                None,
                None,
                None,
            )
        };
        for (replies, expected) in [(false, 0), (true, 1)] {
            let m = build("r", json!({"kind": "redact", "replies": replies}));
            let mut r = reply();
            let mut notes = Vec::new();
            m.on_reply(&mut r, &mut notes).await.unwrap();
            assert_eq!(notes.len(), expected);
            assert_eq!(r.message.text().contains("abcdefghij"), !replies);
        }
    }

    #[test]
    fn bad_settings_are_refused_by_name() {
        let ctx = |settings: Value| crate::middleware::testing::try_build("r", settings);
        assert!(ctx(json!({"kind": "redact", "patterns": ["("]}))
            .unwrap_err()
            .message
            .contains("patterns[0] is not a valid regex"));
        assert!(ctx(json!({"kind": "redact", "colour": 1}))
            .unwrap_err()
            .message
            .contains("unknown setting `colour`"));
    }
}
