//! `genai ask --output-format stream-json`: a turn followed as one JSON object per line on
//! stdout (`genai_protocol::events::StreamEvent`), for a script or a CI job to read as it
//! happens. Text and reasoning pieces are coalesced: a line goes out when the text so far holds
//! a line break, or 100 ms after its first piece came.
//!
//! It owns the lines of the stream and how a run's end is told (`status` and the exit code,
//! [`ended`], which `ask`'s other formats share). It writes events and nothing else on stdout;
//! it must never decide what a turn is (the front-ends do), and after a failed write on stdout
//! (its reader went away) it writes nothing more and cancels the turn.

use std::io::Write;
use std::time::Duration;

use genai_core::error::Error;
use genai_core::feature::port::TurnEvent;
use genai_core::feature::TurnOutcome;
use genai_core::message::Usage;
use genai_core::session::TurnStream;
use tokio::time::Instant;

use super::changes::{line_counts, Changed};

/// One line of the stream.
pub type Event = genai_protocol::events::StreamEvent<Usage>;

/// The task call a subagent's event is nested under, and the subagent's name.
type Nest = Option<(String, String)>;

/// How long a piece of text waits for more before it goes out on its own.
const COALESCE: Duration = Duration::from_millis(100);

/// Stdout as a stream of events; after a failed write it writes nothing more.
#[derive(Default)]
pub struct Events {
    pub failed: Option<std::io::Error>,
}

impl Events {
    /// Writes one event as a line.
    pub fn write(&mut self, event: &Event) {
        self.write_in(event, &None);
    }

    /// Writes one event as a line, nested under a subagent's task call when `nest` says so
    /// (`genai_protocol::events::StreamLine`'s fields).
    fn write_in(&mut self, event: &Event, nest: &Nest) {
        if self.failed.is_some() {
            return;
        }
        let mut value = serde_json::to_value(event).unwrap_or_default();
        if let (Some((call_id, agent)), Some(o)) = (nest, value.as_object_mut()) {
            o.insert("parent_tool_use_id".into(), call_id.clone().into());
            o.insert("subagent".into(), agent.clone().into());
        }
        let mut line = serde_json::to_vec(&value).unwrap_or_default();
        line.push(b'\n');
        let mut out = std::io::stdout().lock();
        if let Err(e) = out.write_all(&line).and_then(|_| out.flush()) {
            self.failed = Some(e);
        }
    }
}

/// What following a turn brought.
pub struct Followed {
    pub outcome: TurnOutcome,
    /// Tool calls the permission policy (or a hook) refused.
    pub refused: usize,
    /// The files the turn's tools changed.
    pub changed: Changed,
    /// Ctrl-C cancelled the turn.
    pub interrupted: bool,
    /// The exit code the run ends with, as its `result` line says.
    pub code: i32,
}

/// Text or reasoning waiting to go out, and when its first piece came.
struct Pending {
    reasoning: bool,
    text: String,
    since: Instant,
}

impl Pending {
    fn event(reasoning: bool, text: String) -> Event {
        match reasoning {
            true => Event::Reasoning { text },
            false => Event::Text { text },
        }
    }
}

/// Follows `turn` to its end, writing each event as it comes (after `start`), then its usage,
/// its error when it failed, and its `result` (the reply as JSON when `structured`).
pub async fn follow(
    mut turn: TurnStream,
    events: &mut Events,
    start: Event,
    structured: bool,
) -> Result<Followed, Error> {
    let checkpoint = turn.id().to_string();
    let Event::Start {
        conversation_id, ..
    } = &start
    else {
        return Err(Error::internal("an event stream begins with its start"));
    };
    let conversation_id = conversation_id.clone();
    events.write(&start);
    let mut pending: Option<Pending> = None;
    let mut refused = 0;
    let mut changed = Changed::default();
    let mut interrupted = false;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let outcome = loop {
        let due = pending.as_ref().map(|p| p.since + COALESCE);
        let event = tokio::select! {
            e = turn.next_event() => e,
            _ = &mut ctrl_c, if !interrupted => {
                interrupted = true;
                turn.cancel();
                continue;
            }
            _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                if let Some(p) = pending.take() {
                    events.write(&Pending::event(p.reasoning, p.text));
                }
                continue;
            }
        };
        let Some(event) = event else {
            return Err(Error::internal("the turn ended twice"));
        };
        // A subagent's events go out nested under its task call; its answer is that call's
        // result, so its text, the pieces of its calls, its start and its end (the parent's
        // `usage` and `result` count it) are not written.
        let (nest, event) = match event {
            TurnEvent::Subagent {
                call_id,
                agent,
                event,
            } => match *event {
                TurnEvent::Chunk(_)
                | TurnEvent::Reasoning(_)
                | TurnEvent::ToolCall(_)
                | TurnEvent::Started { .. }
                | TurnEvent::Done(_) => continue,
                event => (Some((call_id, agent)), event),
            },
            event => (None, event),
        };
        let piece = match &event {
            TurnEvent::Chunk(t) => Some((false, t)),
            TurnEvent::Reasoning(t) => Some((true, t)),
            _ => None,
        };
        if let Some((reasoning, text)) = piece {
            add_piece(&mut pending, events, reasoning, text);
        } else if !matches!(event, TurnEvent::ToolCall(_)) {
            // Whatever else happens goes after the text that came before it.
            if let Some(p) = pending.take() {
                events.write(&Pending::event(p.reasoning, p.text));
            }
        }
        match event {
            TurnEvent::ToolStarted {
                id,
                name,
                arguments,
            } => events.write_in(
                &Event::ToolCall {
                    id,
                    name,
                    arguments,
                },
                &nest,
            ),
            TurnEvent::Decision(d) => {
                refused += usize::from(d.decision != "allow");
                let decided = Event::Permission {
                    id: d.call_id,
                    name: d.tool,
                    subject: d.argument,
                    decision: d.decision,
                    by: d.by,
                };
                events.write_in(&decided, &nest);
            }
            TurnEvent::ToolFinished {
                id,
                name,
                output,
                is_error,
                edit,
            } => {
                let result = Event::ToolResult {
                    id,
                    name,
                    output,
                    is_error,
                };
                events.write_in(&result, &nest);
                if let Some(edit) = edit.filter(|_| !is_error) {
                    let (added, removed) = line_counts(&edit);
                    let file = Event::FileChanged {
                        path: edit.path.display().to_string(),
                        created: edit.old_text.is_none(),
                        added,
                        removed,
                        checkpoint: checkpoint.clone(),
                    };
                    events.write_in(&file, &nest);
                    changed.add(edit);
                }
            }
            TurnEvent::Compacted(c) => events.write(&Event::Compaction {
                turns: c.turns,
                tokens_before: c.tokens_before,
                tokens_after: c.tokens_after,
                by: c.by,
            }),
            TurnEvent::Plan { entries } => events.write_in(&Event::Plan { entries }, &nest),
            TurnEvent::Done(outcome) => break outcome,
            _ => {}
        }
        if events.failed.is_some() {
            // Nobody reads the events any more: the model stops.
            turn.cancel();
        }
    };
    if let Some(p) = pending.take() {
        events.write(&Pending::event(p.reasoning, p.text));
    }
    events.write(&Event::Usage {
        usage: outcome.usage,
        cost: outcome.cost,
    });
    if let Some(e) = &outcome.error {
        events.write(&Event::Error {
            kind: e.kind.as_str().to_string(),
            message: e.message.clone(),
        });
    }
    let (status, code) = ended(&outcome, refused, interrupted);
    let o = &outcome;
    events.write(&Event::Result {
        conversation_id,
        turn_id: checkpoint,
        status: status.to_string(),
        exit_code: code,
        reply: o
            .error
            .is_none()
            .then(|| reply_value(&o.summary, structured)),
        provider: o.provider.clone(),
        model: o.model.clone(),
        finish_reason: o.finish_reason.clone(),
        budget: o.stopped.map(|b| b.name().to_string()),
        refused,
        usage: o.usage,
        cost: o.cost,
    });
    Ok(Followed {
        outcome,
        refused,
        changed,
        interrupted,
        code,
    })
}

/// The exit codes of a run that ended without an error of its own (docs/CI.md).
pub const EXIT_BUDGET: i32 = 4;
pub const EXIT_REFUSED: i32 = 5;

/// How a run ended, as the `status` and the exit code: a failure's code (130 when cancelled),
/// else a budget reached (4), else a tool call refused (5), else success.
pub fn ended(outcome: &TurnOutcome, refused: usize, interrupted: bool) -> (&'static str, i32) {
    match (&outcome.error, outcome.stopped, refused) {
        (Some(_), _, _) if interrupted => ("cancelled", 130),
        (Some(e), _, _) => ("error", super::exit_code(e.kind)),
        (None, Some(_), _) => ("budget_reached", EXIT_BUDGET),
        (None, None, n) if n > 0 => ("refused", EXIT_REFUSED),
        _ => ("success", 0),
    }
}

/// The reply as `--json` and the event stream give it: the checked JSON as a value with a
/// schema, else the text.
pub fn reply_value(summary: &str, structured: bool) -> serde_json::Value {
    match structured {
        true => serde_json::from_str(summary).unwrap_or(serde_json::Value::Null),
        false => serde_json::Value::from(summary),
    }
}

/// Adds a piece of text or reasoning: what waited of the other kind goes out first, and the
/// text up to its last line break goes out at once.
fn add_piece(pending: &mut Option<Pending>, events: &mut Events, reasoning: bool, text: &str) {
    if pending.as_ref().is_some_and(|p| p.reasoning != reasoning) {
        if let Some(p) = pending.take() {
            events.write(&Pending::event(p.reasoning, p.text));
        }
    }
    let p = pending.get_or_insert_with(|| Pending {
        reasoning,
        text: String::new(),
        since: Instant::now(),
    });
    p.text.push_str(text);
    if let Some(end) = p.text.rfind('\n') {
        let rest = p.text.split_off(end + 1);
        let lines = std::mem::replace(&mut p.text, rest);
        events.write(&Pending::event(reasoning, lines));
        if p.text.is_empty() {
            *pending = None;
        } else {
            p.since = Instant::now();
        }
    }
}
