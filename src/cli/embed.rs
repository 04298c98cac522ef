//! `genai embed`: texts turned into vectors by an embeddings model. Each TEXT argument is one
//! text (several make one batch); with none, or `-`, stdin is one text, or with `--lines` each
//! of its non-empty lines is one. `-m` names the model as `genai ask -m` does (default:
//! `[defaults] embedding_model`, else the local engine's model). Plain output is one vector a
//! line as a JSON array, in the texts' order; `--json` adds the model, the usage and the cost.
//!
//! It reads the command line and prints what `Framework::embed` returns. It must never store
//! anything nor choose a model itself (`select` does).

use std::io::Read;
use std::sync::Arc;

use genai_core::error::Error;
use genai_core::select::ModelChoice;
use genai_core::session::{Embedded, Framework};
use genai_core::store::Store;
use serde_json::json;

use super::conversation::usage;

#[derive(clap::Args)]
pub struct Args {
    /// The texts, one vector each; none, or `-`, reads stdin.
    pub texts: Vec<String>,
    /// The model: `PROVIDER:MODEL`, an agent or a provider (default: `[defaults]
    /// embedding_model`, else `local`).
    #[arg(short, long)]
    pub model: Option<String>,
    /// The vectors' length, for models that can shorten them.
    #[arg(long, value_name = "N")]
    pub dimensions: Option<u32>,
    /// Stdin holds one text a line (empty lines skipped) instead of one text.
    #[arg(long)]
    pub lines: bool,
    /// Print JSON: `{model, provider, vectors, usage: {inputTokens}, cost}`.
    #[arg(long)]
    pub json: bool,
}

/// The texts of the command line: its words, or stdin.
fn texts(args: &Args) -> Result<Vec<String>, Error> {
    if !args.texts.is_empty() && args.texts != ["-"] {
        if args.lines {
            return Err(usage(
                "--lines splits stdin: give the texts as arguments, or pipe them with --lines",
            ));
        }
        return Ok(args.texts.clone());
    }
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| usage(format!("cannot read stdin: {e}")))?;
    Ok(split(&input, args.lines))
}

/// Stdin as texts: one, or one a non-empty line with `lines`.
fn split(input: &str, lines: bool) -> Vec<String> {
    if lines {
        return input
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
    }
    let text = input.trim_end_matches(['\n', '\r']);
    if text.trim().is_empty() {
        return Vec::new();
    }
    vec![text.to_string()]
}

pub async fn run(args: Args) -> Result<(), Error> {
    let texts = texts(&args)?;
    if texts.is_empty() {
        return Err(usage(
            "nothing to embed: give texts as arguments, or pipe them on stdin (--lines: one a line)",
        ));
    }
    let (_, config, registry) = super::load()?;
    let fw = Arc::new(Framework::new(
        config,
        registry,
        Arc::new(Store::scratch()?),
    ));
    let name = args.model.clone().unwrap_or_else(|| fw.embedding_model());
    let model = fw.request_model(&ModelChoice::Named(name))?;
    let embedded = fw.embed(&model, texts, args.dimensions).await?;
    print(&embedded, args.json);
    Ok(())
}

fn print(e: &Embedded, as_json: bool) {
    if as_json {
        super::print_json(&json!({
            "model": e.model,
            "provider": e.provider,
            "vectors": e.embeddings.vectors,
            "usage": {"inputTokens": e.embeddings.input_tokens},
            "cost": e.cost,
        }));
        return;
    }
    for v in &e.embeddings.vectors {
        outln!("{}", serde_json::to_string(v).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_is_one_text_or_one_a_line() {
        assert_eq!(split("a b\nc\n", false), ["a b\nc"]);
        assert_eq!(split("a b\n\nc\n", true), ["a b", "c"]);
        assert!(split("\n  \n", false).is_empty());
        assert!(split("\n  \n", true).is_empty());
    }
}
