//! `genai undo` and `genai checkpoints`: a turn's file changes put back byte for byte from the
//! checkpoints genai keeps in its data folder (never in the user's repository), and the turns
//! that have some.
//!
//! It shows and asks; the checkpoints' logic is `genai_core::checkpoint`, the same the daemon's
//! `Undo` and `ListCheckpoints` and chat's `/undo` use.

use genai_core::checkpoint::{Checkpoints, TurnChanges, UndoAction, UndoTarget, Undone};
use genai_core::config::Paths;
use genai_core::error::Error;

/// `genai undo`.
#[derive(clap::Args, Debug)]
pub struct UndoArgs {
    /// The conversation whose last changed turn is undone (any unique prefix), in whichever
    /// project it was made; default: the last turn made in this folder's project (this folder
    /// or a parent of it as its root).
    #[arg(long, value_name = "ID")]
    pub cid: Option<String>,
    /// The turn to undo (its id or a unique prefix, as `genai checkpoints` lists).
    #[arg(long, value_name = "ID")]
    pub turn: Option<String>,
    /// Restore files that changed since the turn too (their current content is lost).
    #[arg(long)]
    pub force: bool,
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `genai checkpoints`.
#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Only the turns of this conversation (any unique prefix).
    #[arg(long, value_name = "ID")]
    pub cid: Option<String>,
    /// How many turns to list, newest first.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The checkpoints of genai's data folder.
fn open() -> Result<Checkpoints, Error> {
    Checkpoints::open(&Paths::from_env()?.data_dir)
}

/// A conversation id from a prefix the history knows; else as given (a `--no-log`
/// conversation has checkpoints but no history).
fn conversation(given: Option<String>) -> Option<String> {
    given.map(|g| {
        super::open_store()
            .and_then(|s| s.resolve_id(&g))
            .unwrap_or(g)
    })
}

/// Shows what an undo did.
pub fn show_undone(u: &Undone) -> String {
    let mut text = format!(
        "undid turn {} of conversation {} in {}:",
        u.turn_id, u.conversation_id, u.root
    );
    for f in &u.files {
        let what = match f.action {
            UndoAction::Restored => "restored",
            UndoAction::Removed => "removed (the turn created it)",
            UndoAction::Unchanged => "already as before",
        };
        text.push_str(&format!("\n  {}: {what}", f.path));
    }
    for folder in &u.removed_folders {
        text.push_str(&format!(
            "\n  {folder}/: removed (the turn created it; empty again)"
        ));
    }
    text
}

pub fn run_undo(args: UndoArgs) -> Result<(), Error> {
    // Without --cid or --turn, only this project's turns: never another folder's.
    let project = match args.cid.is_none() && args.turn.is_none() {
        true => {
            let cwd = std::env::current_dir()
                .map_err(|e| Error::invalid_params(format!("no working folder: {e}")))?;
            Some(std::fs::canonicalize(&cwd).unwrap_or(cwd))
        }
        false => None,
    };
    let undone = open()?.undo(
        UndoTarget {
            conversation: conversation(args.cid),
            turn: args.turn,
            project,
        },
        args.force,
    )?;
    if args.json {
        super::print_json(&undone);
    } else {
        outln!("{}", show_undone(&undone));
    }
    Ok(())
}

/// One listed turn, for people.
fn show_turn(t: &TurnChanges) -> String {
    let when = genai_core::store::UtcTime::of(t.time).rfc3339();
    let undone = if t.undone { " (undone)" } else { "" };
    format!(
        "{when}  turn {}  conversation {}{undone}\n  {}: {}",
        t.turn_id,
        t.conversation_id,
        t.root,
        t.files.join(", ")
    )
}

pub fn run_list(args: ListArgs) -> Result<(), Error> {
    let turns = open()?.list(conversation(args.cid).as_deref(), args.limit)?;
    if args.json {
        super::print_json(&turns);
    } else if turns.is_empty() {
        eprintln!("genai: no turn has changed files yet");
    } else {
        for t in &turns {
            outln!("{}", show_turn(t));
        }
    }
    Ok(())
}
