//! One turn of a gateway request on the core, whatever API it came in: the client's whole
//! history, its tools and schema go to a fresh agent (`Framework::request_agent`: the model
//! chosen as `genai ask -m` chooses, its middleware and structured output), whose one model
//! call is the turn. Its reply comes back whole, or as the pieces the model streams.
//!
//! It owns running the turn and handing its pieces over. It must never run a tool (the
//! client runs the calls it gets back and sends their results in its next request), never
//! store anything, and never outlive its client: dropping the stream of pieces cancels the
//! turn, which drops the request upstream.

use std::sync::{Arc, Mutex};

use futures::Stream;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use genai_core::agent::{AIAgent, Answerer, Delta, PromptOutcome, ToolLoop};
use genai_core::config::ToolMode;
use genai_core::error::Result;
use genai_core::format::{ModelReply, ResponseSchema, ToolCallDelta, ToolSpec};
use genai_core::message::Message;

/// What one request asks of the core.
pub(crate) struct Turn {
    pub(crate) agent: AIAgent,
    /// The history, system message first when there is one.
    pub(crate) messages: Vec<Message>,
    /// The client's tools, offered as the format's native tools.
    pub(crate) tools: Vec<ToolSpec>,
    pub(crate) schema: Option<ResponseSchema>,
    /// Whether another deployment takes the request if this turn's provider fails: then the
    /// provider does not retry on its own.
    pub(crate) fails_over: bool,
}

/// A piece of a streamed turn, then how it ended.
#[derive(Debug)]
pub(crate) enum Piece {
    Text(String),
    Reasoning(String),
    /// A piece of the signature of the reasoning streamed so far.
    Signature(String),
    Call(ToolCallDelta),
    /// The last piece: the whole reply (what was streamed, with the finish reason and usage),
    /// or why the turn failed.
    Done(Result<ModelReply>),
}

/// Who answered a turn: the model as `PROVIDER:MODEL`, and the fallback agent's name when
/// the agent's own provider failed and one of its fallbacks answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Served {
    pub(crate) model: String,
    pub(crate) fallback: Option<String>,
    /// The price of the model that answered, when one is known.
    pub(crate) price: Option<genai_core::pricing::Price>,
}

/// `PROVIDER:MODEL`, as the gateway names the model that serves a request; joined without
/// `format!` (twice per request: when it is chosen and when it answers).
pub(crate) fn served_name(provider: &str, model: &str) -> String {
    [provider, ":", model].concat()
}

impl From<&Answerer> for Served {
    fn from(a: &Answerer) -> Served {
        Served {
            model: served_name(&a.provider, &a.model),
            fallback: a.fallback.clone(),
            price: a.price.as_ref().map(|p| p.price),
        }
    }
}

/// Who is answering a streamed turn, as the agent said before its first piece.
pub(crate) struct Answering(Arc<Mutex<Served>>);

impl Answering {
    pub(crate) fn served(&self) -> Served {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Runs the turn to its whole reply, and says who answered it.
pub(crate) async fn whole(turn: Turn) -> Result<(ModelReply, Served)> {
    let parts = Parts {
        messages: turn.messages,
        tools: turn.tools,
        schema: turn.schema,
        fails_over: turn.fails_over,
    };
    let outcome = run(&turn.agent, parts, None, None, &CancellationToken::new()).await?;
    let served = Served::from(&outcome.answerer);
    Ok((outcome.reply, served))
}

/// Runs the turn in the background; its pieces come as the model streams them, `Done` last.
/// Dropping the stream cancels the turn.
pub(crate) fn streamed(turn: Turn) -> (Answering, impl Stream<Item = Piece> + Send + 'static) {
    let agent = turn.agent;
    let parts = Parts {
        messages: turn.messages,
        tools: turn.tools,
        schema: turn.schema,
        fails_over: turn.fails_over,
    };
    let who = Arc::new(Mutex::new(Served::default()));
    let answering = Answering(who.clone());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let guard = cancel.clone().drop_guard();
    tokio::spawn(
        async move {
            let text = tx.clone();
            let on_delta = move |d: Delta<'_>| {
                let piece = match d {
                    Delta::Text(t) => Piece::Text(t.to_string()),
                    Delta::Reasoning(r) => Piece::Reasoning(r.to_string()),
                    Delta::ReasoningSignature(s) => Piece::Signature(s.to_string()),
                    Delta::Progress(_) => return,
                    Delta::Answering(a) => {
                        if let Ok(mut who) = who.lock() {
                            *who = Served::from(a);
                        }
                        return;
                    }
                };
                let _ = text.send(piece);
            };
            let calls = tx.clone();
            let on_call = move |d: &ToolCallDelta| {
                let _ = calls.send(Piece::Call(d.clone()));
            };
            let done = run(&agent, parts, Some(&on_delta), Some(&on_call), &cancel).await;
            let _ = tx.send(Piece::Done(done.map(|o| o.reply)));
        }
        // Within the request's turn span, whose child its model request is.
        .in_current_span(),
    );
    let pieces = futures::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        let piece = rx.recv().await?;
        Some((piece, (rx, guard)))
    });
    (answering, pieces)
}

/// What a turn sends beside its agent.
struct Parts {
    messages: Vec<Message>,
    tools: Vec<ToolSpec>,
    schema: Option<ResponseSchema>,
    fails_over: bool,
}

/// The turn on its agent: one request, the model's tool calls returned to the caller (none
/// run: `max_steps` is 0), native tool calls only (a text protocol would put genai's own
/// words in the client's conversation).
async fn run(
    agent: &AIAgent,
    turn: Parts,
    on_delta: Option<&(dyn Fn(Delta<'_>) + Send + Sync)>,
    on_call: Option<&(dyn Fn(&ToolCallDelta) + Send + Sync)>,
    cancel: &CancellationToken,
) -> Result<PromptOutcome> {
    let Parts {
        messages,
        tools,
        schema,
        fails_over,
    } = turn;
    let run_none = |_calls| -> futures::future::BoxFuture<'_, Vec<genai_core::message::Part>> {
        Box::pin(async { Vec::new() })
    };
    let tool_loop = ToolLoop {
        specs: tools,
        max_steps: 0,
        run: &run_none,
        on_call_delta: on_call,
        mode: ToolMode::Native,
        budget: None,
        spent_elsewhere: None,
    };
    let offered = (!tool_loop.specs.is_empty()).then_some(&tool_loop);
    let sent = agent.send_prompt_as(messages, on_delta, cancel, offered, schema.as_ref());
    match fails_over {
        true => genai_core::provider::http::failing_over(sent).await,
        false => sent.await,
    }
}
