//! The tools a client hosts (`RegisterTool` on the daemon): their names, schemas and time
//! limits, kept by the client's port so that they leave with it, and the answer a client gives
//! (`{content, isError}`) as the model sees it.
//!
//! It owns what a valid registration is. It must never send anything to a client: the port
//! does, and the guard decides whether a call may run.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::port::EDITOR_SOURCE;
use crate::error::{Error, ErrorKind, Result};
use crate::message::Part;
use crate::tools::plugin::ModuleAnswer;
use crate::tools::Tool;

/// How long a client may take to answer a call, unless it registered another limit.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest limit a client may ask for.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest name a client may register: the model sees `editor__NAME`, and providers take
/// 64 characters at most.
pub(crate) const MAX_NAME: usize = 56;

/// A tool as a client registers it.
#[derive(Debug, Clone)]
pub struct Registration {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    pub timeout: Option<Duration>,
}

/// The tools one client hosts.
#[derive(Default)]
pub struct HostedTools {
    tools: Mutex<BTreeMap<String, (Tool, Duration)>>,
}

impl HostedTools {
    /// Adds (or replaces) a tool; answers its full name, `editor.NAME`.
    pub fn register(&self, r: Registration) -> Result<String> {
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        // Providers take tool names of 64 characters at most, and `editor__` comes first.
        if r.name.is_empty() || r.name.len() > MAX_NAME || !r.name.chars().all(valid) {
            return Err(Error::invalid_params(format!(
                "name `{}` must be 1 to {MAX_NAME} letters, digits, `_` or `-`",
                r.name
            )));
        }
        if r.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(Error::invalid_params(format!(
                "inputSchema of `{}` must be a JSON Schema of an object (\"type\": \"object\")",
                r.name
            )));
        }
        let timeout = r.timeout.unwrap_or(DEFAULT_TIMEOUT);
        if timeout.is_zero() || timeout > MAX_TIMEOUT {
            return Err(Error::invalid_params(format!(
                "timeoutMs of `{}` must be from 1 to {}",
                r.name,
                MAX_TIMEOUT.as_millis()
            )));
        }
        let full = format!("{EDITOR_SOURCE}.{}", r.name);
        let tool = Tool {
            name: full.clone(),
            description: r.description,
            input_schema: r.input_schema,
            source: EDITOR_SOURCE.to_string(),
            read_only: r.read_only,
        };
        self.lock()?.insert(r.name, (tool, timeout));
        Ok(full)
    }

    /// Removes a tool; an error naming the registered ones when it is not one.
    pub fn unregister(&self, name: &str) -> Result<()> {
        let mut tools = self.lock()?;
        if tools.remove(name).is_none() {
            return Err(Error::invalid_params(format!(
                "no tool `{name}` is registered by this client; registered: {}",
                crate::error::known(tools.keys().cloned())
            )));
        }
        Ok(())
    }

    /// Every tool, by name.
    pub fn list(&self) -> Vec<Tool> {
        self.lock()
            .map(|t| t.values().map(|(tool, _)| tool.clone()).collect())
            .unwrap_or_default()
    }

    /// The time limit of the tool `name`, when it is registered.
    pub fn timeout(&self, name: &str) -> Option<Duration> {
        self.lock().ok()?.get(name).map(|(_, t)| *t)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<String, (Tool, Duration)>>> {
        self.tools
            .lock()
            .map_err(|_| Error::internal("the hosted tools' lock was poisoned"))
    }
}

/// A client's answer `{content, isError}` as the model sees it: the text parts joined, the
/// images kept.
pub fn answer(content: Vec<Part>, is_error: bool) -> ModuleAnswer {
    let mut text = Vec::new();
    let mut images = Vec::new();
    for part in content {
        match part {
            Part::Text { text: t } => text.push(t),
            Part::Image { .. } => images.push(part),
            Part::Json { value } => text.push(value.to_string()),
            other => text.push(serde_json::to_string(&other).unwrap_or_default()),
        }
    }
    ModuleAnswer {
        text: text.join("\n"),
        is_error,
        images,
        ..Default::default()
    }
}

/// The error of a call the client did not answer within `limit`.
pub fn timed_out(name: &str, limit: Duration) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!(
            "{EDITOR_SOURCE}.{name}: the client did not answer within {} s",
            limit.as_secs_f64()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn registration(name: &str, schema: Value) -> Registration {
        Registration {
            name: name.into(),
            description: "d".into(),
            input_schema: schema,
            read_only: true,
            timeout: None,
        }
    }

    #[test]
    fn registrations_are_checked_replaced_and_removed() {
        let tools = HostedTools::default();
        let object = json!({"type": "object"});
        assert_eq!(
            tools
                .register(registration("open_files", object.clone()))
                .unwrap(),
            "editor.open_files"
        );
        for bad in ["", "a.b", "a b", &"x".repeat(57)] {
            let e = tools
                .register(registration(bad, object.clone()))
                .unwrap_err();
            assert!(e.message.contains("must be 1 to 56"), "{}", e.message);
        }
        let longest = "x".repeat(56);
        let full = tools
            .register(registration(&longest, object.clone()))
            .unwrap();
        assert_eq!(full.replace('.', "__").len(), 64);
        tools.unregister(&longest).unwrap();
        let e = tools
            .register(registration("x", json!({"type": "string"})))
            .unwrap_err();
        assert!(e.message.contains("inputSchema"), "{}", e.message);
        let mut r = registration("open_files", object);
        r.description = "new".into();
        r.timeout = Some(Duration::from_millis(10));
        tools.register(r).unwrap();
        assert_eq!(tools.list().len(), 1);
        assert_eq!(tools.list()[0].description, "new");
        assert_eq!(tools.timeout("open_files"), Some(Duration::from_millis(10)));
        let e = tools.unregister("nope").unwrap_err();
        assert!(
            e.message.contains("registered: open_files"),
            "{}",
            e.message
        );
        tools.unregister("open_files").unwrap();
        assert!(tools.list().is_empty());
    }

    #[test]
    fn an_answer_joins_text_and_keeps_images() {
        let a = answer(
            vec![
                Part::text("one"),
                Part::Image {
                    url: None,
                    media_type: Some("image/png".into()),
                    data: Some("AAAA".into()),
                },
                Part::text("two"),
            ],
            true,
        );
        assert_eq!(a.text, "one\ntwo");
        assert!(a.is_error);
        assert_eq!(a.images.len(), 1);
    }
}
