//! `genai mcp`: genai as an MCP server over stdin/stdout, for Claude Code, Codex and other MCP
//! clients (docs/MCP-SERVER.md). Protocol only on stdout; logs go to stderr.
//!
//! It turns the flags into the server's options and checks them before anything is served;
//! the server is `genai_mcp`.

use std::path::PathBuf;

use genai_core::error::Error;
use genai_core::permission::{Layers, Mode, Policy};
use genai_core::session::PermissionFlags;

use super::conversation::usage;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The workspace folder the tools work in and the commands are looked up from (default:
    /// the working directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// What tool calls may do without asking: read-only, ask (reads run; edits and commands
    /// ask), edit (edits run; commands ask) or full. Default: the config's `[permissions]
    /// mode`, else ask. A call that asks goes to the client as an elicitation, or is refused
    /// when the client cannot answer one.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<Mode>,
    /// A rule whose calls run without asking (repeatable), such as
    /// --allow 'run_command(cargo test*)' or --allow 'edit_file(src/**)'.
    #[arg(long, value_name = "RULE")]
    pub allow: Vec<String>,
    /// A rule whose calls are refused (repeatable); deny beats ask beats allow.
    #[arg(long, value_name = "RULE")]
    pub deny: Vec<String>,
}

pub async fn run(args: Args) -> Result<(), Error> {
    let root = match args.root {
        Some(r) => r,
        None => std::env::current_dir().map_err(|e| usage(format!("no working folder: {e}")))?,
    };
    if !root.is_dir() {
        return Err(usage(format!(
            "--root {} is not a folder: give the workspace folder the tools may work in",
            root.display()
        )));
    }
    // A bad rule is the user's mistake, said before the client connects.
    Policy::new(Layers {
        flag_allow: args.allow.clone(),
        flag_deny: args.deny.clone(),
        ..Default::default()
    })?;
    let options = genai_mcp::Options {
        root,
        permissions: PermissionFlags {
            mode: args.mode,
            allow: args.allow,
            deny: args.deny,
        },
    };
    super::serve_stdio("genai mcp", |fw| {
        genai_mcp::serve(fw, options, super::stdio::stdin(), super::stdio::stdout())
    })
    .await
}
