//! How a fake answers one model call ([`Behavior`]): the reply, its pieces, delays, tool calls,
//! the usage it reports and the fault, whose kinds are each wire's own (`M`: a `Mode` enum per
//! fake; the Ollama and Gemini fakes share [`Mode`]). Each wire turns it into its own bytes;
//! this never knows one.

use std::time::Duration;

use serde_json::{json, Value};

/// A wire's faults, with the answer its fake gives when a test names none.
pub trait Faults: Clone + Default {
    /// The default reply.
    const REPLY: &'static str;
    /// The default number of streamed pieces.
    const CHUNKS: usize;
}

/// How a fake answers one model call.
#[derive(Clone, Debug)]
pub struct Behavior<M> {
    /// The assistant text.
    pub reply: String,
    /// Number of content pieces the reply is streamed in (0 is taken as 1). The split is on
    /// char boundaries; some wires always send exactly this many, empty ones included.
    pub chunks: usize,
    /// Delay before each streamed piece, and before a whole body (an error body included).
    pub delay: Duration,
    pub mode: M,
    /// Model name echoed in answers (by the wires that echo one); when empty, the request's.
    pub model: String,
    /// Tool calls the model makes after its text: (id, wire name, arguments as JSON text). The
    /// wire decides how they travel; wires without call ids leave the id out.
    pub tool_calls: Vec<(String, String, String)>,
    /// Usage reported as read from the prompt cache (wires that report it).
    pub cache_read: u64,
    /// Usage reported as written to the prompt cache (wires that report it).
    pub cache_creation: u64,
    /// What the model thinks before its text, in the wire's reasoning shape (wires that have
    /// one); empty: none. The Anthropic fake thinks whenever the request enables `thinking`.
    pub reasoning: String,
}

impl<M: Faults> Default for Behavior<M> {
    fn default() -> Self {
        Behavior {
            reply: M::REPLY.to_string(),
            chunks: M::CHUNKS,
            delay: Duration::ZERO,
            mode: M::default(),
            model: String::new(),
            tool_calls: Vec::new(),
            cache_read: 0,
            cache_creation: 0,
            reasoning: String::new(),
        }
    }
}

impl<M: Faults> Behavior<M> {
    pub fn reply(text: &str, chunks: usize) -> Self {
        Behavior {
            reply: text.to_string(),
            chunks,
            ..Behavior::default()
        }
    }

    /// A reply of `text` in the wire's default number of pieces.
    pub fn text(text: &str) -> Self {
        Behavior {
            reply: text.to_string(),
            ..Behavior::default()
        }
    }

    /// A reply of `text` (may be empty) and these calls: (wire name, JSON arguments), with ids
    /// `call_1`, `call_2`, ...
    pub fn calls(text: &str, calls: &[(&str, &str)]) -> Self {
        Behavior {
            reply: text.to_string(),
            tool_calls: calls
                .iter()
                .enumerate()
                .map(|(i, (n, a))| (format!("call_{}", i + 1), n.to_string(), a.to_string()))
                .collect(),
            ..Behavior::default()
        }
    }

    /// This behaviour, thinking `reasoning` first.
    pub fn thinking(self, reasoning: &str) -> Self {
        Behavior {
            reasoning: reasoning.to_string(),
            ..self
        }
    }

    pub fn mode(mode: M) -> Self {
        Behavior {
            mode,
            ..Behavior::default()
        }
    }
}

impl<M> Behavior<M> {
    /// The model named in answers: this behaviour's, or `requested` when it names none.
    pub fn model_or(&self, requested: &str) -> String {
        if self.model.is_empty() {
            requested.to_string()
        } else {
            self.model.clone()
        }
    }

    /// The tool calls with their arguments parsed (an empty object where they are not JSON):
    /// (id, wire name, arguments).
    pub fn calls_with_json_arguments(&self) -> impl Iterator<Item = (&str, &str, Value)> {
        self.tool_calls.iter().map(|(id, name, args)| {
            let args = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
            (id.as_str(), name.as_str(), args)
        })
    }
}

impl Behavior<Mode> {
    pub fn error(status: u16, message: &str) -> Self {
        Behavior::mode(Mode::Error {
            status,
            message: message.to_string(),
        })
    }
}

/// The faults of the Ollama and Gemini fakes.
#[derive(Clone, Debug, Default)]
pub enum Mode {
    /// A normal, complete answer.
    #[default]
    Ok,
    /// This HTTP status with the provider's error body; 429 also sends `retry-after: 1`.
    Error { status: u16, message: String },
    /// Streaming: the first `after` pieces, then the connection closes without the final
    /// record or the terminating chunk. Not streaming: half the body, then close.
    CutAfter { after: usize },
    /// The first `after` pieces, then a piece that is not JSON, then the rest.
    Malformed { after: usize },
    /// Read the request, never answer (until the client goes away: a disconnect).
    Stall,
    /// A 200 answer that refuses the prompt (a safety block), in the wire's own way.
    Blocked { reason: String },
}

impl Faults for Mode {
    const REPLY: &'static str = "Hello from the fake provider.";
    const CHUNKS: usize = 4;
}
