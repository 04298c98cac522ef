//! What a plugin module's answer asks of a `tools` turn besides its text: actions, whose
//! `[[CODE]]` markers are found in the reply, taken out of its summary and held back from
//! what streams; confirmations, asked of the user through the client and, on yes, posted to
//! the module's link; and a tool's ask to collect the user's next message.
//!
//! It must never decide whether a call may run (the guard does), nor run one: it sees answers
//! only.

use std::sync::Mutex;

use serde_json::Value;

use super::port::Confirmation;
use super::Turn;
use crate::tools::toolbox::Toolbox;

/// What one call's answer asks of the turn besides its text.
#[derive(Default)]
pub(super) struct Asks {
    pub(super) actions: Vec<Value>,
    pub(super) collect: Option<(String, String)>,
}

/// The marker of an action in a reply: its code, in `[[ ]]` unless it already is.
pub(super) fn marker(code: &str) -> String {
    if code.starts_with("[[") && code.ends_with("]]") {
        code.to_string()
    } else {
        format!("[[{code}]]")
    }
}

/// The actions whose markers appear in `text`, in the order they appear, and the text without
/// them.
pub(super) fn take_actions(text: &str, actions: &[Value]) -> (Vec<Value>, String) {
    let mut found: Vec<(usize, Value)> = Vec::new();
    let mut shown = text.to_string();
    for action in actions {
        let Some(code) = action.get("code").and_then(Value::as_str) else {
            continue;
        };
        let m = marker(code);
        let mut from = 0;
        while let Some(at) = text[from..].find(&m) {
            found.push((from + at, action.clone()));
            from += at + m.len();
        }
        shown = shown.replace(&m, "");
    }
    found.sort_by_key(|(at, _)| *at);
    (
        found.into_iter().map(|(_, a)| a).collect(),
        shown.trim().to_string(),
    )
}

/// Holds back streamed text that may be an action marker until it is complete: a known marker
/// is dropped, anything else passes (a `[[` not closed within a line, or within 256 bytes, is
/// text).
#[derive(Default)]
pub(super) struct MarkerFilter {
    held: String,
}

impl MarkerFilter {
    const LONGEST: usize = 256;

    /// Takes the next piece of text and returns what can be shown now.
    pub(super) fn push(&mut self, delta: &str, is_marker: impl Fn(&str) -> bool) -> String {
        self.held.push_str(delta);
        let mut shown = String::new();
        loop {
            let Some(at) = self.held.find("[[") else {
                // A last `[` may begin a marker.
                let keep = usize::from(self.held.ends_with('['));
                let cut = self.held.len() - keep;
                shown.push_str(&self.held[..cut]);
                self.held.drain(..cut);
                return shown;
            };
            shown.push_str(&self.held[..at]);
            self.held.drain(..at);
            match self.held.find("]]") {
                Some(end) => {
                    let candidate: String = self.held.drain(..end + 2).collect();
                    if !is_marker(&candidate) {
                        shown.push_str(&candidate);
                    }
                }
                None if self.held.len() > Self::LONGEST || self.held.contains('\n') => {
                    shown.push_str("[[");
                    self.held.drain(..2);
                }
                None => return shown,
            }
        }
    }

    /// What is still held at the end of the reply.
    pub(super) fn flush(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// What a tool's answer asks the user to confirm.
pub(super) struct Asked<'a> {
    pub(super) tool: &'a str,
    pub(super) call_id: &'a str,
    pub(super) text: &'a str,
    pub(super) link: &'a str,
}

/// Asks the user (through the client) to confirm what a tool asks; on yes, POSTs the link. The
/// returned text tells the model the outcome.
pub(super) async fn confirm(
    turn: &Turn,
    toolbox: &Toolbox,
    asked: Asked<'_>,
    log: &Mutex<Vec<String>>,
) -> (String, bool) {
    let Asked {
        tool,
        call_id,
        text,
        link,
    } = asked;
    let request = Confirmation {
        turn: turn.id.clone(),
        text: text.to_string(),
        link: link.to_string(),
        tool: tool.to_string(),
        tool_call_id: Some(call_id.to_string()),
    };
    let answer = turn.port.confirm(request).await;
    let confirmed = matches!(answer, Ok(true));
    let note = match &answer {
        Ok(true) => "accepted".to_string(),
        Ok(false) => "refused".to_string(),
        Err(e) => format!("not answered ({}): taken as refused", e.message),
    };
    if let Ok(mut l) = log.lock() {
        l.push(format!("confirmation for {tool}: {note}"));
    }
    if !confirmed {
        return (
            format!("{text}\nThe user did not confirm: the operation was not done."),
            false,
        );
    }
    match toolbox.confirm(tool, link).await {
        Ok(done) => (
            format!("{text}\nThe user confirmed. The tool answered: {done}"),
            false,
        ),
        Err(e) => (
            format!(
                "{text}\nThe user confirmed, but confirming failed: {}",
                e.message
            ),
            true,
        ),
    }
}
