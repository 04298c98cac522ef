//! `bench-local --tools` against llama-server on the same work: llama-server is given, through
//! its `/completion` endpoint, the very prompt genai rendered (its tool instructions in the
//! chat template) and the very GBNF grammar genai samples with (forced, or lazy with genai's
//! trigger word). Its own tool handling would not do: on templates without a tool convention
//! (the PyPI Gemma and SmolLM2 files) it writes free text even when a call is `required`, so
//! tokens/s would set constrained decoding beside free decoding. It only measures.
//!
//! genai's side tells its prompt and grammar in the serve's trace log (`constrained prompt`,
//! both as JSON strings); each prompt is sent alone once to read them.

use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use crate::http_stream::stream_request;
use crate::local_concurrency::{Serve, PROMPTS};
use crate::{Options, Res};

/// What genai decodes for one prompt.
pub struct Constrained {
    pub prompt: String,
    pub grammar: String,
    /// The words that switch a lazy grammar on; none when it constrains the whole reply.
    pub triggers: Option<Vec<String>>,
}

impl Constrained {
    /// llama-server's `/completion` body for this prompt and grammar, greedy, `tokens` at most.
    pub fn body(&self, tokens: u32) -> Value {
        let mut body = json!({
            "prompt": self.prompt,
            "n_predict": tokens,
            "temperature": 0,
            "stream": true,
            "grammar": self.grammar,
        });
        if let Some(words) = &self.triggers {
            body["grammar_lazy"] = json!(true);
            // 1: a trigger word (llama.cpp's COMMON_GRAMMAR_TRIGGER_TYPE_WORD).
            body["grammar_triggers"] = words
                .iter()
                .map(|w| json!({"type": 1, "value": w}))
                .collect();
        }
        body
    }
}

/// The prompt and grammar genai uses for each of the first `n` prompts: a serve with the
/// engine's trace log, each prompt sent alone, the log read afterwards.
pub fn genai_constrained(
    genai: &std::path::Path,
    env: &dyn Fn(&mut Command, &std::path::Path),
    opts: &Options,
    n: usize,
) -> Res<Vec<Constrained>> {
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a temp folder: {e}"))?;
    let log = dir.path().join("serve.log");
    let file = std::fs::File::create(&log).map_err(|e| e.to_string())?;
    let serve = Serve::start(
        genai,
        env,
        opts,
        1,
        file.into(),
        Some("genai_local::engine=trace"),
    )?;
    for prompt in PROMPTS.iter().cycle().take(n) {
        let request = Serve::request(opts, prompt, opts.tokens);
        stream_request(
            serve.port,
            "/genai/local",
            Some(&serve.token),
            &request,
            Instant::now(),
        )?;
    }
    drop(serve);
    let text = std::fs::read_to_string(&log).map_err(|e| e.to_string())?;
    let found: Vec<Constrained> = text
        .lines()
        .filter(|l| l.contains("constrained prompt"))
        .map(parse_line)
        .collect::<Res<_>>()?;
    match found.len() == n {
        true => Ok(found),
        false => Err(format!(
            "genai's trace log told {} constrained prompts for {n} requests",
            found.len()
        )),
    }
}

/// The fields of one `constrained prompt` trace line (each a JSON value after `name=`).
fn parse_line(line: &str) -> Res<Constrained> {
    let field = |name: &str| -> Res<Value> {
        let at = line
            .find(&format!(" {name}="))
            .ok_or_else(|| format!("no {name} in the trace line"))?;
        let rest = &line[at + name.len() + 2..];
        serde_json::Deserializer::from_str(rest)
            .into_iter::<Value>()
            .next()
            .ok_or_else(|| format!("no value for {name}"))?
            .map_err(|e| format!("{name}: {e}"))
    };
    let string = |name: &str| -> Res<String> {
        field(name)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("{name} is not a string"))
    };
    Ok(Constrained {
        prompt: string("prompt")?,
        grammar: string("grammar")?,
        triggers: serde_json::from_value(field("triggers")?).map_err(|e| e.to_string())?,
    })
}
