//! What fits a model's context, shared by compaction and the `fit-context` middleware: the
//! token estimate (about four characters a token, a flat count per image), the room the
//! messages have (the context less the reply's share), where each turn starts, the transcript
//! a summariser reads, the summary prompt, its cache, and where a summary goes in the messages
//! sent.
//!
//! It decides nothing about when to compact and asks no model itself: its callers do.

use serde_json::{Map, Value};

use crate::error::Result;
use crate::message::{Message, Part, Role};
use crate::middleware::TextCache;

/// The parameters that name a reply's most tokens, by format.
const REPLY_LIMITS: &[&str] = &[
    "max_tokens",
    "max_completion_tokens",
    "num_predict",
    "maxTokens",
    "max_output_tokens",
];
/// The parameters that declare the model's context.
pub(crate) const CONTEXT_SIZES: &[&str] = &["num_ctx"];
/// Tokens counted for an image.
const IMAGE_TOKENS: usize = 800;

/// What a summariser is asked to do with the transcript of the turns it summarises.
pub(crate) const SUMMARY_PROMPT: &str = "Summarise this earlier part of a conversation in a few sentences, keeping names, numbers, the file paths named, the decisions made and open questions. Answer with the summary only.";

/// How the summary of earlier turns opens where it is sent.
pub(crate) const SUMMARY_HEADING: &str = "Earlier in this conversation (summarised): ";

/// About how many tokens a message takes.
pub(crate) fn estimate(m: &Message) -> usize {
    fn parts(of: &[Part]) -> usize {
        of.iter()
            .map(|p| match p {
                Part::Text { text } => text.chars().count().div_ceil(4),
                Part::Reasoning { text, .. } => text.chars().count().div_ceil(4),
                Part::Json { value } => value.to_string().len().div_ceil(4),
                Part::ToolCall {
                    name, arguments, ..
                } => (name.len() + arguments.to_string().len()).div_ceil(4),
                Part::ToolResult { content, .. } => parts(content),
                Part::Image { .. } => IMAGE_TOKENS,
            })
            .sum()
    }
    4 + parts(&m.content)
}

/// About how many tokens some messages take.
pub(crate) fn estimate_all(messages: &[Message]) -> usize {
    messages.iter().map(estimate).sum()
}

fn first_u64(parameters: &Map<String, Value>, names: &[&str]) -> Option<u64> {
    names
        .iter()
        .find_map(|n| parameters.get(*n).and_then(Value::as_u64))
}

/// The context size a model's parameters declare (`num_ctx`), if any.
pub(crate) fn declared_context(parameters: &Map<String, Value>) -> Option<u64> {
    first_u64(parameters, CONTEXT_SIZES)
}

/// The room the messages of a request have: the context less the reply's share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Room {
    pub(crate) context: u64,
    /// The reply's share: the model's reply limit (`max_tokens` or its format's name for
    /// it), else the caller's default.
    pub(crate) reserve: u64,
}

impl Room {
    /// The room of `context` tokens for a model of these parameters; `reserve` is the reply's
    /// share when the parameters set no reply limit.
    pub(crate) fn of(context: u64, parameters: &Map<String, Value>, reserve: u64) -> Room {
        let reserve = first_u64(parameters, REPLY_LIMITS).unwrap_or(reserve);
        Room { context, reserve }
    }

    /// The tokens the messages may take.
    pub(crate) fn budget(&self) -> usize {
        self.context.saturating_sub(self.reserve) as usize
    }

    /// `C tokens of context − R for the reply`, how errors and notes say it.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} tokens of context − {} for the reply",
            self.context, self.reserve
        )
    }
}

/// The system messages apart from the others.
pub(crate) fn split_system(messages: Vec<Message>) -> (Vec<Message>, Vec<Message>) {
    messages.into_iter().partition(|m| m.role == Role::System)
}

/// Where each turn of `rest` (messages with no system one) starts: at each user message.
pub(crate) fn turn_starts(rest: &[Message]) -> Vec<usize> {
    rest.iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .map(|(i, _)| i)
        .collect()
}

/// The text of some messages, one `role: text` line each (what the summariser reads).
pub(crate) fn transcript(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| {
            let mut text = m.text();
            for (_, name, args) in m.calls() {
                text.push_str(&format!(" [calls {name}({args})]"));
            }
            for p in &m.content {
                if let Part::ToolResult { content, .. } = p {
                    text.push_str(&crate::format::wire::text_of(content));
                }
            }
            format!("{}: {}", m.role.as_str(), text.trim())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file paths the tool calls of some messages named (their `path`, `file` or `paths`
/// arguments), each once, in order.
pub(crate) fn touched_files(messages: &[Message]) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    let mut add = |v: &Value| {
        if let Some(p) = v.as_str().filter(|p| !p.trim().is_empty()) {
            if !files.iter().any(|f| f == p) {
                files.push(p.to_string());
            }
        }
    };
    for m in messages {
        for (_, _, args) in m.calls() {
            for key in ["path", "file", "file_path"] {
                args.get(key).into_iter().for_each(&mut add);
            }
            if let Some(Value::Array(paths)) = args.get("paths") {
                paths.iter().for_each(&mut add);
            }
        }
    }
    files
}

/// A summary from the cache, or what `ask` writes from the summary prompt and `text` (kept in
/// the cache by a hash of `text`, so the same turns are never summarised twice).
pub(crate) async fn cached_summary<F, Fut>(
    cache: &TextCache,
    text: String,
    ask: F,
) -> Result<String>
where
    F: FnOnce(Vec<Message>) -> Fut,
    Fut: std::future::Future<Output = Result<String>>,
{
    let key = TextCache::key("summary", text.as_bytes());
    if let Some(s) = cache.get(&key) {
        return Ok(s);
    }
    let prompt = vec![Message::system(SUMMARY_PROMPT), Message::user(text)];
    let summary = ask(prompt).await?.trim().to_string();
    cache.put(key, summary.clone());
    Ok(summary)
}

/// The system messages with the summary of earlier turns added to the first (or as one when
/// there is none).
pub(crate) fn with_summary(mut system: Vec<Message>, summary: &str) -> Vec<Message> {
    let note = format!("{SUMMARY_HEADING}{summary}");
    match system.first_mut() {
        Some(sys) => sys.content.push(Part::text(format!("\n\n{note}"))),
        None => system.push(Message::system(note)),
    }
    system
}
