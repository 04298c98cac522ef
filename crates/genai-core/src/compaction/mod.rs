//! Compaction: when the messages of a conversation's request near its model's context, the
//! oldest turns are sent as a summary instead (written by the same model, or by
//! `[compaction] agent`), keeping the system prompt (the project's `AGENTS.md` is in it), the
//! last turns, and the file paths and decisions the summary names. On by default
//! (`[compaction]`); a `/compact` does it at once whatever the size.
//!
//! It owns when to compact, which turns go, the summary kept for the next requests (summaries
//! grow by the turns added since, never from scratch) and the error when even the last turn
//! cannot fit. It must never change the stored history (it returns what is sent) nor talk to
//! a client (the agent hands what it did, a [`Compacted`], to its caller).

pub(crate) mod window;

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::message::Message;
use crate::middleware::{Helpers, TextCache};
use window::{estimate_all, Room};

/// `[compaction]`: how conversations are compacted when they near their model's context.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactionConfig {
    /// Whether conversations are compacted (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The agent of the config that writes the summaries (default: the conversation's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The last turns always sent whole (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_turns: Option<u32>,
    /// The share of the room left for the messages at which a request is compacted (default
    /// 0.8, between 0.1 and 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// The context size of models that declare none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    /// The reply's share of the context when the model sets no reply limit (`max_tokens`);
    /// default a quarter of the context, at most 1024.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserve_tokens: Option<u64>,
}

/// What one compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// The turns now sent as their summary, from the conversation's start.
    pub turns: usize,
    /// About how many tokens the request's messages took before and after.
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// Who wrote the summary: `the conversation's model` or `agent NAME`.
    pub by: String,
}

impl Compacted {
    /// One line for a terminal or a log: `compacted 6 turns: about 1900 → 450 tokens (...)`.
    pub fn describe(&self) -> String {
        format!(
            "compacted the {} earliest turn(s) into a summary by {}: about {} → {} tokens sent (the history keeps every turn)",
            self.turns, self.by, self.tokens_before, self.tokens_after
        )
    }
}

/// How a summary is written from a summary prompt: by the conversation's own model.
pub(crate) type Summarise<'a> =
    &'a (dyn Fn(Vec<Message>) -> BoxFuture<'a, Result<String>> + Send + Sync);

/// What a request sends after compaction.
pub(crate) struct Prepared {
    /// The messages to send instead (`None`: as they are).
    pub(crate) messages: Option<Vec<Message>>,
    /// What a compaction made now did.
    pub(crate) compacted: Option<Compacted>,
    /// A line for the turn's details.
    pub(crate) note: Option<String>,
}

impl Prepared {
    fn unchanged() -> Prepared {
        Prepared {
            messages: None,
            compacted: None,
            note: None,
        }
    }
}

/// The summary the next requests reuse: the first `upto` messages (after the system ones),
/// `turns` turns, as one text.
#[derive(Clone)]
struct Kept {
    upto: usize,
    turns: usize,
    /// The key of the summarised messages' transcript: a history that no longer starts with
    /// them (another conversation's) does not reuse it.
    key: String,
    summary: String,
}

/// The compaction of one agent's requests, with the summary it keeps.
pub(crate) struct Compaction {
    keep_turns: usize,
    threshold: f64,
    context_tokens: Option<u64>,
    reserve_tokens: Option<u64>,
    agent: Option<String>,
    helpers: Arc<dyn Helpers>,
    cache: Arc<TextCache>,
    kept: Mutex<Option<Kept>>,
}

/// The tokens a summariser's piece of transcript may take when the context is not known.
const UNKNOWN_ROOM: usize = 4096;
/// The room kept for the summary itself when choosing which turns go.
const SUMMARY_ROOM: usize = 200;

impl Compaction {
    /// The compaction `config` asks for (`None` when it is off); a bad setting is an error
    /// naming it.
    pub(crate) fn of(
        config: &CompactionConfig,
        helpers: Arc<dyn Helpers>,
        cache: Arc<TextCache>,
    ) -> Result<Option<Compaction>> {
        if config.enabled == Some(false) {
            return Ok(None);
        }
        let threshold = config.threshold.unwrap_or(0.8);
        if !(0.1..=1.0).contains(&threshold) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("[compaction] threshold = {threshold}: give a share of the context between 0.1 and 1 (default 0.8)"),
            ));
        }
        if config.keep_turns == Some(0) {
            return Err(Error::new(
                ErrorKind::Config,
                "[compaction] keep_turns = 0: at least the last turn is sent whole (default 2)",
            ));
        }
        Ok(Some(Compaction {
            keep_turns: config.keep_turns.unwrap_or(2) as usize,
            threshold,
            context_tokens: config.context_tokens,
            reserve_tokens: config.reserve_tokens,
            agent: config.agent.clone(),
            helpers,
            cache,
            kept: Mutex::new(None),
        }))
    }

    /// The room of a model whose context is `declared` (its provider's or its parameters'),
    /// else `[compaction] context_tokens`; `None`: unknown, nothing is compacted.
    pub(crate) fn room(
        &self,
        declared: Option<u64>,
        parameters: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<Room> {
        let context = declared.or(self.context_tokens)?;
        let reserve = self.reserve_tokens.unwrap_or((context / 4).min(1024));
        Some(Room::of(context, parameters, reserve))
    }

    /// Who writes the summaries.
    fn by(&self) -> String {
        match &self.agent {
            Some(a) => format!("agent {a}"),
            None => "the conversation's model".to_string(),
        }
    }

    /// The summary kept for a request whose messages (after the system ones) are `rest`,
    /// when they start with the messages it summarises.
    fn kept_for(&self, rest: &[Message]) -> Option<Kept> {
        let kept = self.kept.lock().ok()?.clone()?;
        let same = kept.upto <= rest.len()
            && TextCache::key(
                "compacted",
                window::transcript(&rest[..kept.upto]).as_bytes(),
            ) == kept.key;
        same.then_some(kept)
    }

    /// The messages of one request: as they are while they fit `room`'s threshold; else the
    /// oldest turns as their summary (the one kept, or a new one). `force` (`/compact`)
    /// summarises every turn but the last `keep_turns` whatever the size. An error when even
    /// the last turn does not fit.
    pub(crate) async fn prepare(
        &self,
        messages: &[Message],
        room: Option<Room>,
        summarise: Summarise<'_>,
        force: bool,
    ) -> Result<Prepared> {
        let total = estimate_all(messages);
        let (system, rest) = window::split_system(messages.to_vec());
        let kept = self.kept_for(&rest);
        let threshold = room.map(|r| (r.budget() as f64 * self.threshold) as usize);
        if !force {
            match (&kept, threshold) {
                (Some(k), _) => {
                    let sent = self.sent(&system, &rest, k);
                    let after = estimate_all(&sent);
                    // A summary kept (`/compact` made it, whatever the size) serves while
                    // the request fits.
                    if threshold.is_none_or(|t| after <= t) {
                        return Ok(Prepared {
                            note: Some(reused(k.turns, total, after)),
                            messages: Some(sent),
                            compacted: None,
                        });
                    }
                }
                (None, None) => return Ok(Prepared::unchanged()),
                (None, Some(t)) if total <= t => return Ok(Prepared::unchanged()),
                (None, Some(_)) => {}
            }
        }
        let starts = window::turn_starts(&rest);
        let fixed = estimate_all(&system);
        let tail = |n: usize| estimate_all(&rest[starts[n]..]);
        if let (Some(room), Some(&last)) = (room, starts.last()) {
            let needed = fixed + estimate_all(&rest[last..]);
            if needed > room.budget() {
                return Err(too_big(needed, fixed, &room));
            }
        }
        let done = kept.as_ref().map_or(0, |k| k.turns);
        let turns = match (force, room, threshold) {
            (false, Some(room), Some(threshold)) => {
                // Down to half the threshold when the kept turns allow it, so the summary
                // serves the next turns too; else as few turns as fit.
                let most = starts.len().saturating_sub(self.keep_turns);
                let first = done.max(1);
                (first..=most)
                    .find(|&n| fixed + SUMMARY_ROOM + tail(n) <= threshold / 2)
                    .or_else(|| {
                        (first..starts.len()).find(|&n| fixed + SUMMARY_ROOM + tail(n) <= threshold)
                    })
                    .or_else(|| (first..starts.len()).find(|&n| fixed + tail(n) <= room.budget()))
                    .unwrap_or(starts.len().saturating_sub(1))
            }
            _ => starts.len().saturating_sub(self.keep_turns),
        };
        let fresh = turns > done && starts.len() >= 2;
        let k = match (fresh, kept) {
            (false, _) if force => {
                return Err(Error::invalid_params(format!(
                    "nothing to compact: the conversation has {} turn(s), the last {} are kept whole ([compaction] keep_turns) and {done} are already sent as their summary",
                    starts.len(),
                    self.keep_turns
                )))
            }
            (false, Some(k)) => k,
            (false, None) => return Ok(Prepared::unchanged()),
            (true, kept) => {
                let upto = starts[turns];
                let summary = self
                    .summarise_upto(&rest, kept.as_ref(), upto, room, summarise)
                    .await?;
                let key = TextCache::key("compacted", window::transcript(&rest[..upto]).as_bytes());
                Kept {
                    upto,
                    turns,
                    key,
                    summary,
                }
            }
        };
        let sent = self.sent(&system, &rest, &k);
        let tokens_after = estimate_all(&sent);
        if let Some(room) = room.filter(|r| tokens_after > r.budget()) {
            return Err(too_big(tokens_after, fixed, &room));
        }
        let turns = k.turns;
        if let Ok(mut slot) = self.kept.lock() {
            *slot = Some(k);
        }
        if !fresh {
            return Ok(Prepared {
                note: Some(reused(turns, total, tokens_after)),
                messages: Some(sent),
                compacted: None,
            });
        }
        let compacted = Compacted {
            turns,
            tokens_before: total,
            tokens_after,
            by: self.by(),
        };
        Ok(Prepared {
            note: Some(format!("compaction: {}", compacted.describe())),
            messages: Some(sent),
            compacted: Some(compacted),
        })
    }

    /// The messages sent with a kept summary: the system ones with the summary and the files
    /// the summarised turns touched, then the turns after it.
    fn sent(&self, system: &[Message], rest: &[Message], k: &Kept) -> Vec<Message> {
        let mut note = k.summary.clone();
        let files = window::touched_files(&rest[..k.upto]);
        if !files.is_empty() {
            note.push_str(&format!(
                "\nFiles the earlier turns' tool calls named: {}",
                files.join(", ")
            ));
        }
        let mut out = window::with_summary(system.to_vec(), &note);
        out.extend(rest[k.upto..].iter().cloned());
        out
    }

    /// The summary of `rest[..upto]`: the kept one grown by the turns after it, or a new one,
    /// a piece of transcript at a time so each request fits the summariser's room.
    async fn summarise_upto(
        &self,
        rest: &[Message],
        kept: Option<&Kept>,
        upto: usize,
        room: Option<Room>,
        summarise: Summarise<'_>,
    ) -> Result<String> {
        let (mut summary, from) = match kept.filter(|k| k.upto <= upto) {
            Some(k) => (Some(k.summary.clone()), k.upto),
            None => (None, 0),
        };
        let room = room.map_or(UNKNOWN_ROOM, |r| r.budget());
        let lines: Vec<String> = rest[from..upto]
            .iter()
            .map(|m| window::transcript(std::slice::from_ref(m)))
            .collect();
        let mut pieces: Vec<String> = Vec::new();
        let mut piece = String::new();
        // Room for the prompt and the summary so far, the rest for transcript.
        let per_piece = room.saturating_sub(SUMMARY_ROOM * 2).max(64) * 4;
        for line in lines {
            let line: String = match line.chars().count() > per_piece {
                true => line.chars().take(per_piece).collect::<String>() + " […]",
                false => line,
            };
            if !piece.is_empty() && piece.len() + line.len() > per_piece {
                pieces.push(std::mem::take(&mut piece));
            }
            piece.push_str(&line);
            piece.push('\n');
        }
        if !piece.is_empty() {
            pieces.push(piece);
        }
        for piece in pieces {
            let text = match &summary {
                Some(s) => format!("The summary so far: {s}\n\nWhat followed:\n{piece}"),
                None => piece,
            };
            let written = window::cached_summary(&self.cache, text, |prompt| async move {
                match &self.agent {
                    Some(agent) => self
                        .helpers
                        .ask_agent(agent, prompt)
                        .await
                        .map_err(|e| e.reworded(|m| format!("compaction: {m}"))),
                    None => summarise(prompt).await,
                }
            })
            .await?;
            summary = Some(written);
        }
        Ok(summary.unwrap_or_default())
    }
}

/// The details' line of a request sent with a kept summary.
fn reused(turns: usize, before: usize, after: usize) -> String {
    format!("compaction: the {turns} earliest turn(s) sent as their summary (about {before} → {after} tokens)")
}

/// The error of a turn that cannot fit even alone, with the sizes and what to do.
fn too_big(needed: usize, fixed: usize, room: &Room) -> Error {
    Error::new(
        ErrorKind::InvalidParams,
        format!(
            "this turn does not fit the model's context even after compaction: it needs about {needed} tokens ({fixed} of them the system prompt and the project's context files), and the messages have {} ({}): shorten the message or the files sent with it, lower the reply's max_tokens, start a new conversation, or use a model with a larger context (a local model's context_size)",
            room.budget(),
            room.describe()
        ),
    )
}
