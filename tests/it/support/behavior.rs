//! How the Ollama and Gemini fakes answer one model call ([`Behavior`]): the reply, its pieces,
//! delays, tool calls and the fault ([`Mode`]). Each wire turns it into its own bytes; this
//! never knows one.

use std::time::Duration;

/// How a fake answers one model call.
#[derive(Clone, Debug)]
pub struct Behavior {
    /// The assistant text.
    pub reply: String,
    /// Number of content pieces the reply is streamed in (0 is taken as 1).
    pub chunks: usize,
    /// Delay before each streamed piece, and before a whole body.
    pub delay: Duration,
    pub mode: Mode,
    /// Model name echoed in answers; when empty, the one the request named.
    pub model: String,
    /// Tool calls the model makes after its text: each a wire name and its arguments as JSON
    /// text (the wire decides how they travel).
    pub tool_calls: Vec<(String, String)>,
}

impl Default for Behavior {
    fn default() -> Self {
        Behavior {
            reply: "Hello from the fake provider.".to_string(),
            chunks: 4,
            delay: Duration::ZERO,
            mode: Mode::Ok,
            model: String::new(),
            tool_calls: Vec::new(),
        }
    }
}

impl Behavior {
    pub fn reply(text: &str, chunks: usize) -> Behavior {
        Behavior {
            reply: text.to_string(),
            chunks,
            ..Behavior::default()
        }
    }

    pub fn error(status: u16, message: &str) -> Behavior {
        Behavior {
            mode: Mode::Error {
                status,
                message: message.to_string(),
            },
            ..Behavior::default()
        }
    }

    /// A reply of `text` (may be empty) and these calls: (wire name, JSON arguments).
    pub fn calls(text: &str, calls: &[(&str, &str)]) -> Behavior {
        Behavior {
            reply: text.to_string(),
            tool_calls: calls
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect(),
            ..Behavior::default()
        }
    }

    pub fn mode(mode: Mode) -> Behavior {
        Behavior {
            mode,
            ..Behavior::default()
        }
    }
}

#[derive(Clone, Debug)]
pub enum Mode {
    /// A normal, complete answer.
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
