//! The `fit-context` middleware: when the messages of a request would not fit the model's
//! context with the reply's tokens reserved, the oldest turns are dropped, or summarised by
//! another agent (`strategy = "summarize"`, `agent = "NAME"`), keeping the system message and
//! the last turns (`keep_turns`, default 1). The context size is the `context_tokens` setting,
//! else the model's declared one (its `num_ctx` parameter); the reply's share is the model's
//! `max_tokens` (or its format's name for it), else `reserve_tokens` (default 1024).
//!
//! It owns which turns go; the token estimate, the room, the transcript and the summary's
//! prompt and cache are `crate::compaction::window`'s, which compaction shares. Its notes say
//! what it did.

use std::sync::Arc;

use async_trait::async_trait;

use super::{BuildContext, Capabilities, Helpers, Kind, Middleware, Request, TextCache};
use crate::compaction::window::{self, estimate, Room};
use crate::error::{Error, ErrorKind, Result};
use crate::message::Message;

/// Drops or summarises the oldest turns when a request would not fit the model's context.
pub(crate) const KIND: Kind = Kind {
    name: "fit-context",
    build,
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Drop,
    Summarize,
}

struct FitContext {
    /// Named in the error that asks for `context_tokens`.
    name: String,
    context_tokens: Option<u64>,
    reserve_tokens: u64,
    keep_turns: usize,
    strategy: Strategy,
    agent: Option<String>,
    helpers: Arc<dyn Helpers>,
    cache: Arc<TextCache>,
}

fn build(ctx: &BuildContext<'_>) -> Result<Arc<dyn Middleware>> {
    ctx.check_settings(&[
        "kind",
        "context_tokens",
        "reserve_tokens",
        "keep_turns",
        "strategy",
        "agent",
    ])?;
    let strategy = match ctx.string("strategy")?.as_deref() {
        None | Some("drop") => Strategy::Drop,
        Some("summarize" | "summarise") => Strategy::Summarize,
        Some(other) => {
            return Err(ctx.bad(format!(
                "`strategy` is \"drop\" or \"summarize\", not {other:?}"
            )))
        }
    };
    let agent = ctx.string("agent")?;
    if strategy == Strategy::Summarize && agent.is_none() {
        return Err(ctx.bad(
            "strategy \"summarize\" needs `agent`, the agent of the config that writes the summary",
        ));
    }
    let keep_turns = ctx.integer("keep_turns")?.unwrap_or(1).max(1) as usize;
    Ok(Arc::new(FitContext {
        name: ctx.name.to_string(),
        context_tokens: ctx.integer("context_tokens")?,
        reserve_tokens: ctx.integer("reserve_tokens")?.unwrap_or(1024),
        keep_turns,
        strategy,
        agent,
        helpers: ctx.helpers.clone(),
        cache: ctx.cache.clone(),
    }))
}

impl FitContext {
    /// The tokens the messages may take, and how that was worked out.
    fn budget(&self, model: &Capabilities) -> Result<(usize, String)> {
        let context = self
            .context_tokens
            .or_else(|| window::declared_context(&model.parameters))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Config,
                    format!("the context size of {} is not known: set context_tokens in [middleware.{}]", model.model, self.name),
                )
            })?;
        let room = Room::of(context, &model.parameters, self.reserve_tokens);
        Ok((room.budget(), room.describe()))
    }

    async fn summary(&self, dropped: &[Message]) -> Result<String> {
        let agent = self.agent.as_deref().unwrap_or_default();
        let text = window::transcript(dropped);
        window::cached_summary(&self.cache, text, |prompt| {
            self.helpers.ask_agent(agent, prompt)
        })
        .await
    }
}

#[async_trait]
impl Middleware for FitContext {
    async fn on_request(&self, request: Request<'_>) -> Result<Vec<Message>> {
        let (budget, how) = self.budget(request.model)?;
        let messages = request.messages;
        let total: usize = messages.iter().map(estimate).sum();
        if total <= budget {
            return Ok(messages);
        }
        // The system message stays; turns start at each user message.
        let (system, rest) = window::split_system(messages);
        let starts = window::turn_starts(&rest);
        let fixed: usize = system.iter().map(estimate).sum();
        let mut cut = 0; // rest[..cut] goes
        let mut turns_dropped = 0;
        for (n, start) in starts.iter().enumerate().skip(1) {
            let left: usize = rest[cut..].iter().map(estimate).sum();
            if fixed + left <= budget || starts.len() - n < self.keep_turns {
                break;
            }
            cut = *start;
            turns_dropped = n;
        }
        let kept: usize = fixed + rest[cut..].iter().map(estimate).sum::<usize>();
        if kept > budget {
            return Err(Error::invalid_params(format!(
                "the last {} turn(s) alone need about {kept} tokens, more than the {budget} the model has ({how})",
                starts.len() - turns_dropped
            )));
        }
        let dropped: Vec<Message> = rest[..cut].to_vec();
        let mut out = system;
        let action = match self.strategy {
            Strategy::Drop => "dropped",
            Strategy::Summarize => {
                let summary = self.summary(&dropped).await?;
                out = window::with_summary(out, &summary);
                "summarised"
            }
        };
        out.extend(rest.into_iter().skip(cut));
        request.notes.push(format!(
            "{action} the {turns_dropped} oldest turn(s) ({} messages, about {} tokens) to fit {budget} tokens ({how})",
            dropped.len(),
            total - kept
        ));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;
    use crate::middleware::testing::{build_with, caps, run, FakeHelpers};
    use serde_json::{json, Map};

    fn conversation(turns: usize) -> Vec<Message> {
        let mut m = vec![Message::system("Be brief.")];
        for i in 0..turns {
            m.push(Message::user(format!(
                "question {i} {}",
                "word ".repeat(100)
            )));
            m.push(Message::assistant(format!(
                "answer {i} {}",
                "word ".repeat(100)
            )));
        }
        m.push(Message::user("last question"));
        m
    }

    #[tokio::test]
    async fn the_oldest_turns_go_and_the_system_message_and_last_turns_stay() {
        let m = build_with(
            "fit",
            json!({"kind": "fit-context", "context_tokens": 1000, "keep_turns": 2}),
            FakeHelpers::answering(""),
        );
        let messages = conversation(6);
        let total: usize = messages.iter().map(estimate).sum();
        assert!(total > 800, "the test conversation is too short: {total}");
        let mut params = Map::new();
        params.insert("max_tokens".into(), json!(200));
        let model = Capabilities {
            parameters: params,
            ..caps()
        };
        let (sent, notes) = run(&m, messages.clone(), &model).await.unwrap();
        let sent_total: usize = sent.iter().map(estimate).sum();
        assert!(sent_total <= 800, "{sent_total}");
        assert_eq!(sent[0], Message::system("Be brief."));
        assert_eq!(sent.last().unwrap().text(), "last question");
        assert_eq!(
            sent[1].role,
            Role::User,
            "a turn starts with its user message"
        );
        assert!(notes[0].starts_with("dropped the "), "{notes:?}");
        assert!(
            notes[0].contains("1000 tokens of context − 200 for the reply"),
            "{notes:?}"
        );
        // Short enough: unchanged, nothing noted.
        let (same, notes) = run(&m, conversation(1), &model).await.unwrap();
        assert_eq!(same, conversation(1));
        assert!(notes.is_empty());
        // The last turn alone too long: a clear error.
        let huge = vec![Message::user("word ".repeat(5000))];
        let e = run(&m, huge, &model).await.unwrap_err();
        assert!(e.message.contains("alone need about"), "{e}");
    }

    #[tokio::test]
    async fn summarize_puts_the_agents_summary_in_the_system_message() {
        let helpers = FakeHelpers::answering("They asked six questions about words.");
        let m = build_with(
            "fit",
            json!({"kind": "fit-context", "context_tokens": 1900, "strategy": "summarize", "agent": "scribe"}),
            helpers.clone(),
        );
        let (sent, notes) = run(&m, conversation(6), &caps()).await.unwrap();
        assert!(sent[0].text().contains(
            "Earlier in this conversation (summarised): They asked six questions about words."
        ));
        assert!(notes[0].starts_with("summarised the "), "{notes:?}");
        let asked = helpers.asked();
        assert_eq!(asked[0].0, "scribe");
        assert!(asked[0].1[1].text().contains("user: question 0"));
        // The same history again: the summary comes from the cache.
        run(&m, conversation(6), &caps()).await.unwrap();
        assert_eq!(helpers.asked().len(), 1);
    }

    #[test]
    fn summarize_needs_an_agent_and_no_size_is_an_error() {
        let e = crate::middleware::testing::try_build(
            "fit",
            json!({"kind": "fit-context", "strategy": "summarize"}),
        )
        .unwrap_err();
        assert!(e.message.contains("needs `agent`"));
    }

    #[tokio::test]
    async fn an_unknown_context_size_is_a_clear_error() {
        let m = build_with(
            "fit",
            json!({"kind": "fit-context"}),
            FakeHelpers::answering(""),
        );
        let e = run(&m, conversation(1), &caps()).await.unwrap_err();
        assert!(
            e.message.contains("set context_tokens in [middleware.fit]"),
            "{e}"
        );
    }
}
