//! `genai agents list|show`: the subagents (agent definitions kept as files, handed work by
//! the model's `task` tool) seen from the working folder, and one definition as genai reads
//! it. The lookup and the format are `genai_core::subagent`'s; this file only prints.

use clap::Subcommand;
use genai_core::config::Paths;
use genai_core::error::Error;
use genai_core::subagent::{Definition, Definitions, ModelChoice};
use serde_json::json;

use super::commands::place_name;
use super::conversation::usage;

#[derive(Subcommand)]
pub enum Command {
    /// List the subagents with where each comes from; files that cannot be read are listed
    /// with what is wrong.
    List {
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Show a subagent's definition: where it is, its tools, model and mode, its system prompt.
    Show {
        /// The subagent's name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: Command) -> i32 {
    match run_inner(command) {
        Ok(code) => code,
        Err(e) => super::fail(&e),
    }
}

fn run_inner(command: Command) -> Result<i32, Error> {
    let paths = Paths::from_env()?;
    let cwd = std::env::current_dir().map_err(|e| usage(format!("no working folder: {e}")))?;
    let defs = Definitions::load(&cwd, Some(&paths.config_dir));
    match command {
        Command::List { json: true } => {
            super::print_json(&json!({
                "agents": defs.list().collect::<Vec<_>>(),
                "errors": defs.bad().collect::<Vec<_>>(),
            }));
        }
        Command::List { json: false } => {
            let width = defs.list().map(|d| d.name.len()).max().unwrap_or(0);
            for d in defs.list() {
                outln!(
                    "{:width$}  {:14}  {}",
                    d.name,
                    place_name(d.place),
                    d.description
                );
            }
            for bad in defs.bad() {
                eprintln!("genai: {}", bad.message);
            }
            if defs.list().next().is_none() && defs.bad().next().is_none() {
                eprintln!(
                    "genai: no subagents: write one in .genai/agents/NAME.md (or Claude Code's .claude/agents/)"
                );
            }
        }
        Command::Show { name, json } => {
            let d = defs.find(&name)?;
            match json {
                true => super::print_json(d),
                false => show(d),
            }
        }
    }
    Ok(0)
}

/// Whether a subagent is defined for the working folder, so that a turn here may run
/// several at once (and the local engine should keep a slot for each).
pub(super) fn any_defined() -> bool {
    let (Ok(paths), Ok(cwd)) = (Paths::from_env(), std::env::current_dir()) else {
        return false;
    };
    !Definitions::load(&cwd, Some(&paths.config_dir)).is_empty()
}

/// Prints a definition as genai reads it.
fn show(d: &Definition) {
    outln!("{}: {}", d.name, d.description);
    if let Some(p) = &d.path {
        outln!("from: {} ({})", p.display(), place_name(d.place));
    }
    match &d.tools {
        Some(t) => outln!("tools: {} (those of them the parent has)", t.join(", ")),
        None => outln!("tools: the parent's"),
    }
    for t in &d.unknown_tools {
        outln!("not a genai tool, left out: {t}");
    }
    match &d.model {
        ModelChoice::Inherit => outln!("model: the parent's"),
        ModelChoice::Named(m) => outln!("model: {m}"),
    }
    if let Some(m) = d.mode {
        outln!("mode: {} (when stricter than the parent's)", m.as_str());
    }
    for u in &d.unused {
        outln!("not used by genai: {u}");
    }
    outln!();
    outln!("{}", d.system);
}
