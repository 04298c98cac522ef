//! `genai sessions list|search|show|export|rename|delete`: the stored conversations.

use clap::Subcommand;
use genai_core::error::Error;
use genai_core::pricing::show;

#[derive(Subcommand)]
pub enum Command {
    /// List conversations, most recent first.
    List {
        /// How many to show.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        /// Only those updated since then: a date (2026-01-31) or an age (30m, 12h, 7d).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// Only those run on a model whose PROVIDER:MODEL contains this (any turn's model).
        #[arg(long, value_name = "TEXT")]
        model: Option<String>,
        /// Print JSON (the daemon's `ListConversations` records) instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Search every stored message for all the words of QUERY, best matches first.
    Search {
        /// The words to look for, all of them in any order.
        query: Vec<String>,
        /// How many messages to show.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        /// Print JSON (conversation id, title, message number, role, snippet) instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Show a conversation's messages (ID may be any unique prefix).
    Show {
        /// The conversation's id, or any unique prefix of it.
        id: String,
        /// Print JSON (the conversation's record and its stored messages) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a conversation as a Markdown document or as JSON (ID may be any unique prefix).
    Export {
        /// The conversation's id, or any unique prefix of it.
        id: String,
        /// `md`: a Markdown document; `json`: the same JSON as `show --json`.
        #[arg(long, value_enum, default_value_t = ExportFormat::Md)]
        format: ExportFormat,
    },
    /// Give a conversation a new title (ID may be any unique prefix).
    Rename {
        /// The conversation's id, or any unique prefix of it.
        id: String,
        /// The new title.
        title: String,
    },
    /// Delete a conversation (ID may be any unique prefix).
    Delete {
        /// The conversation's id, or any unique prefix of it.
        id: String,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    /// A Markdown document.
    Md,
    /// JSON, as `show --json`.
    Json,
}

/// `text` on one line of a listing: each line break, with the blanks around it, is shown as
/// ` ⏎ ` (a stored message may hold many lines, such as code).
fn one_line(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.join(" ⏎ ")
}

fn time(ms: i64) -> String {
    let t = genai_core::store::UtcTime::of(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

pub fn run(c: Command) -> Result<(), Error> {
    let store = super::open_store()?;
    match c {
        Command::List {
            limit,
            since,
            model,
            json,
        } => {
            let filter = genai_core::store::ListFilter {
                since: since.as_deref().map(super::since_ms).transpose()?,
                model,
                ..Default::default()
            };
            let (list, _) = store.list_conversations_where(limit.max(1), None, &filter)?;
            if json {
                super::print_json(&list);
                return Ok(());
            }
            if list.is_empty() {
                eprintln!("no conversations yet");
            }
            for c in list {
                // Who answered its last turn (a fallback's provider when one served).
                let by = c
                    .answered_by
                    .clone()
                    .unwrap_or_else(|| format!("{}:{}", c.provider, c.model));
                let size = match c.message_count {
                    // Kept for the tool calls its cancelled turn ran (nothing else was kept).
                    0 => cancelled(&store, &c.id)?,
                    n => format!("{n:>3} msgs"),
                };
                outln!(
                    "{}  {}  {size}  {:<24} {}",
                    c.id,
                    time(c.updated_at),
                    by,
                    one_line(&c.title)
                );
            }
        }
        Command::Search { query, limit, json } => {
            use std::io::IsTerminal;
            let (open, close) = if json {
                ("", "")
            } else if std::io::stdout().is_terminal() && super::turn::colour() {
                ("\x1b[1;33m", "\x1b[0m")
            } else {
                ("[", "]")
            };
            let found = store.search(&query.join(" "), limit.max(1), open, close)?;
            if json {
                let list: Vec<_> = found
                    .iter()
                    .map(|f| {
                        serde_json::json!({
                            "conversationId": f.conversation_id, "title": f.title,
                            "seq": f.seq, "role": f.role, "snippet": f.snippet,
                        })
                    })
                    .collect();
                super::print_json(&list);
                return Ok(());
            }
            if found.is_empty() {
                eprintln!("no message matches");
            }
            for f in found {
                outln!(
                    "{}  {}\n    [{} #{}] {}",
                    f.conversation_id,
                    one_line(&f.title),
                    f.role,
                    f.seq,
                    one_line(&f.snippet)
                );
            }
        }
        Command::Show { id, json: true }
        | Command::Export {
            id,
            format: ExportFormat::Json,
        } => {
            let id = store.resolve_id(&id)?;
            let rec = store.conversation(&id)?;
            let (messages, _) = store.history(&id, usize::MAX / 2, None)?;
            let decisions: Vec<serde_json::Value> = store
                .decisions(&id)?
                .into_iter()
                .map(|(turn, d)| {
                    serde_json::json!({"turnId": turn, "toolCallId": d.call_id, "tool": d.tool,
                        "argument": d.argument, "decision": d.decision, "by": d.by})
                })
                .collect();
            let mut shown = serde_json::json!({"conversation": rec, "messages": messages});
            // The permission decisions of its tool calls, when it made some.
            if !decisions.is_empty() {
                shown["decisions"] = decisions.into();
            }
            super::print_json(&shown);
        }
        Command::Export {
            id,
            format: ExportFormat::Md,
        } => {
            let id = store.resolve_id(&id)?;
            let (messages, _) = store.history(&id, usize::MAX / 2, None)?;
            if let Some(r) = store.conversation(&id)? {
                outln!(
                    "# {}
", r.title
                );
                outln!(
                    "{} · {}:{} · feature {} · {}\n",
                    r.id,
                    r.provider,
                    r.model,
                    r.feature,
                    time(r.created_at)
                );
            }
            let mut transcript = super::transcript::Transcript::default();
            for m in messages {
                let role = m.message.role.as_str();
                match answered_by(&m) {
                    Some(by) => outln!("## {role} ({by})\n"),
                    None => outln!("## {role}\n"),
                }
                outln!("{}\n", transcript.markdown(&m.message));
            }
        }
        Command::Rename { id, title } => {
            let id = store.resolve_id(&id)?;
            store.rename_conversation(&id, &title)?;
            eprintln!("renamed {id}");
        }
        Command::Show { id, json: false } => {
            let id = store.resolve_id(&id)?;
            let rec = store.conversation(&id)?;
            let (messages, _) = store.history(&id, usize::MAX / 2, None)?;
            if let Some(r) = rec {
                outln!(
                    "# {} ({}:{}, feature {})\n",
                    r.title,
                    r.provider,
                    r.model,
                    r.feature
                );
            }
            if messages.is_empty() {
                outln!(
                    "Its only turn was cancelled: nothing of it was kept but the tool calls that \
                     ran before (below).\n"
                );
            }
            let mut spent = Vec::new();
            let mut transcript = super::transcript::Transcript::default();
            for m in messages {
                let mut by = answered_by(&m).map_or(String::new(), |by| format!(" · {by}"));
                if let Some(u) = m.usage {
                    by.push_str(&format!(" · {} tokens · {}", u.total(), show(m.cost)));
                    spent.push(genai_core::store::UsageRow {
                        key: String::new(),
                        title: None,
                        turns: 1,
                        usage: u,
                        cost: m.cost,
                        unpriced: u64::from(m.cost.is_none()),
                        gateway_requests: 0,
                    });
                }
                let body = transcript.plain(&m.message);
                let sep = if body.contains('\n') { "\n" } else { " " };
                outln!("[{}{by}]{sep}{body}\n", m.message.role.as_str());
            }
            let decisions = store.decisions(&id)?;
            if !decisions.is_empty() {
                outln!("Permission decisions:");
                for (turn, d) in decisions {
                    outln!("  turn {turn}: {}", d.detail());
                }
                outln!();
            }
            if !spent.is_empty() {
                let total = genai_core::store::UsageRow::total("", &spent);
                outln!("{}", super::usage::spent(&total));
            }
        }
        Command::Delete { id } => {
            let id = store.resolve_id(&id)?;
            store.delete_conversation(&id)?;
            eprintln!("deleted {id}");
        }
    }
    Ok(())
}

/// Who answered a reply: `PROVIDER:MODEL`, or the model alone in rows older than the
/// provider's column; `None` for other messages.
fn answered_by(m: &genai_core::store::StoredMessage) -> Option<String> {
    if m.message.role != genai_core::message::Role::Assistant {
        return None;
    }
    match (&m.provider, &m.model) {
        (Some(provider), Some(model)) => Some(format!("{provider}:{model}")),
        (None, Some(model)) => Some(model.clone()),
        _ => None,
    }
}

/// What a conversation with no message is: a cancelled turn, kept for the tool calls that
/// ran before it was cancelled.
fn cancelled(store: &genai_core::store::Store, id: &str) -> Result<String, Error> {
    let ran = store
        .decisions(id)?
        .iter()
        .filter(|(_, d)| d.decision == "allow")
        .count();
    let s = if ran == 1 { "" } else { "s" };
    Ok(format!("cancelled turn, {ran} call{s} ran"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::since_ms;

    #[test]
    fn a_listing_shows_many_lines_on_one() {
        assert_eq!(
            one_line("fn main() {\r\n    let x = 1;\n\n}\n"),
            "fn main() { ⏎ let x = 1; ⏎ }"
        );
        assert_eq!(one_line("  plain  words "), "plain  words");
    }

    #[test]
    fn since_takes_dates_and_ages() {
        assert_eq!(since_ms("1970-01-02").unwrap(), 86_400_000);
        assert_eq!(time(since_ms("2026-03-01").unwrap()), "2026-03-01 00:00");
        assert_eq!(time(since_ms("2024-02-29").unwrap()), "2024-02-29 00:00");
        let age = genai_core::store::now_ms() - since_ms("2h").unwrap();
        assert!((7_200_000..7_260_000).contains(&age), "{age}");
        for bad in ["yesterday", "2026-13-01", "5w", "h"] {
            assert!(since_ms(bad).is_err(), "{bad}");
        }
    }
}
