//! A subagent's events (`TurnEvent::Subagent`, nested under the parent's `task` call) as the
//! daemon's `OnSubagentEvent` notices: its start, its tool calls, the policy's decisions, their
//! results, the files it changed, its plan, its text coalesced to whole lines, its usage and
//! cost, and its end with a status.
//!
//! It owns the translation and the text waiting for the end of its line, per task call. It
//! must never decide anything about the subagent, nor change what the parent's final
//! `OnFeatureResponse` says (the port still adds its changed files to the turn's).

use std::collections::HashMap;
use std::sync::Mutex;

use genai_core::error::ErrorKind;
use genai_core::feature::port::{TurnEvent, TurnRef};
use genai_core::feature::TurnOutcome;
use genai_core::message::Usage;
use genai_protocol::subagent::{SubagentEvent, SubagentNotice};

type Event = SubagentEvent<Usage>;

/// The text of each running task call (turn id, call id) not yet sent: what came after its
/// last line break.
#[derive(Default)]
pub(crate) struct Subagents {
    text: Mutex<HashMap<(String, String), String>>,
}

impl Subagents {
    /// The notices `event` of the subagent `agent`, run by the task call `call_id` of `turn`,
    /// makes: none for a piece of text without a line break, or of a tool call; else the text
    /// that waited, then the event's own.
    pub(crate) fn notices(
        &self,
        turn: &TurnRef,
        call_id: &str,
        agent: &str,
        event: TurnEvent,
    ) -> Vec<SubagentNotice<Usage>> {
        let key = (turn.turn_id.clone(), call_id.to_string());
        let mut events = Vec::new();
        match event {
            TurnEvent::Chunk(delta) => {
                if let Some(lines) = self.lines(&key, &delta) {
                    events.push(Event::Text { text: lines });
                }
            }
            TurnEvent::Reasoning(_) | TurnEvent::ToolCall(_) => {}
            event => {
                events.extend(self.rest(&key));
                events.extend(translate(event));
            }
        }
        events
            .into_iter()
            .map(|event| SubagentNotice {
                conversation_id: turn.conversation_id.clone(),
                turn_id: turn.turn_id.clone(),
                call_id: call_id.to_string(),
                agent: agent.to_string(),
                event,
            })
            .collect()
    }

    /// Forgets the text of the turn's task calls (the turn ended; a subagent's end already
    /// sent its own).
    pub(crate) fn ended(&self, turn_id: &str) {
        if let Ok(mut t) = self.text.lock() {
            t.retain(|(turn, _), _| turn != turn_id);
        }
    }

    /// Adds `delta` to the call's text; answers what now ends with a line break.
    fn lines(&self, key: &(String, String), delta: &str) -> Option<String> {
        let mut t = self.text.lock().ok()?;
        let text = t.entry(key.clone()).or_default();
        text.push_str(delta);
        let end = text.rfind('\n')?;
        let rest = text.split_off(end + 1);
        Some(std::mem::replace(text, rest))
    }

    /// The call's text that waited, taken.
    fn rest(&self, key: &(String, String)) -> Option<Event> {
        let text = self.text.lock().ok()?.remove(key)?;
        (!text.is_empty()).then_some(Event::Text { text })
    }
}

/// The notices' events of one (non-text) event of a subagent.
fn translate(event: TurnEvent) -> Vec<Event> {
    match event {
        TurnEvent::Started { prompt } => vec![Event::Started { prompt }],
        TurnEvent::ToolStarted {
            id,
            name,
            arguments,
        } => vec![Event::ToolCall {
            id,
            name,
            arguments,
        }],
        TurnEvent::Decision(d) => vec![Event::Permission {
            id: d.call_id,
            name: d.tool,
            subject: d.argument,
            decision: d.decision,
            by: d.by,
        }],
        TurnEvent::ToolFinished {
            id,
            name,
            output,
            is_error,
            edit,
        } => {
            let mut events = vec![Event::ToolResult {
                id,
                name,
                output,
                is_error,
            }];
            if let Some(edit) = edit.filter(|_| !is_error) {
                let path = edit.path.to_string_lossy().into_owned();
                events.push(Event::FileChanged { path });
            }
            events
        }
        TurnEvent::Plan { entries } => vec![Event::Plan { entries }],
        TurnEvent::Done(outcome) => vec![
            Event::Usage {
                usage: outcome.usage,
                cost: outcome.cost,
            },
            Event::Finished {
                status: status(&outcome).to_string(),
                error: outcome.error.map(|e| e.message),
            },
        ],
        // Its compaction, actions and steps stay in the turn's details.
        _ => Vec::new(),
    }
}

/// How a subagent ended: `success`, `error`, `budget_reached` or `cancelled`.
fn status(outcome: &TurnOutcome) -> &'static str {
    match (&outcome.error, outcome.stopped) {
        (Some(e), _) if e.kind == ErrorKind::Cancelled => "cancelled",
        (Some(_), _) => "error",
        (None, Some(_)) => "budget_reached",
        (None, None) => "success",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn() -> TurnRef {
        TurnRef {
            conversation_id: "c1".into(),
            turn_id: "t1".into(),
        }
    }

    fn events(s: &Subagents, event: TurnEvent) -> Vec<Event> {
        s.notices(&turn(), "call_1", "helper", event)
            .into_iter()
            .map(|n| {
                assert_eq!(
                    (&*n.conversation_id, &*n.turn_id, &*n.call_id, &*n.agent),
                    ("c1", "t1", "call_1", "helper")
                );
                n.event
            })
            .collect()
    }

    #[test]
    fn text_goes_out_by_whole_lines_and_the_rest_before_the_next_event() {
        let s = Subagents::default();
        assert_eq!(events(&s, TurnEvent::Chunk("Rea".into())), vec![]);
        assert_eq!(
            events(&s, TurnEvent::Chunk("ding\nthe fi".into())),
            vec![Event::Text {
                text: "Reading\n".into()
            }]
        );
        let failed = TurnOutcome {
            error: Some(genai_core::error::Error::new(
                ErrorKind::ProviderError,
                "down",
            )),
            ..Default::default()
        };
        assert_eq!(
            events(&s, TurnEvent::Done(failed)),
            vec![
                Event::Text {
                    text: "the fi".into()
                },
                Event::Usage {
                    usage: None,
                    cost: None
                },
                Event::Finished {
                    status: "error".into(),
                    error: Some("down".into())
                },
            ]
        );
        assert!(s.text.lock().unwrap().is_empty());
    }

    #[test]
    fn a_cancelled_or_stopped_subagent_says_so() {
        let cancelled = TurnOutcome {
            error: Some(genai_core::error::Error::new(
                ErrorKind::Cancelled,
                "cancelled",
            )),
            ..Default::default()
        };
        assert_eq!(status(&cancelled), "cancelled");
        assert_eq!(status(&TurnOutcome::default()), "success");
    }
}
