//! `genai commands list|show|new|edit`: the commands (prompts kept as files) seen from the
//! working folder, one shown as its file says or rendered exactly as it would be sent, a new
//! file from a template, and a file opened in `$VISUAL`/`$EDITOR` (a built-in one is copied
//! into the project first, so the copy overrides it). The lookup and rendering are
//! `genai_core::command`'s and the framework's; this file only prints and edits files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Subcommand;
use genai_core::command::{Command as Cmd, Place};
use genai_core::error::{Error, ErrorKind};
use genai_core::session::Framework;
use genai_core::store::Store;
use serde_json::json;

use super::conversation::usage;

#[derive(Subcommand)]
pub enum Command {
    /// List the commands with where each comes from; files that cannot be read are listed
    /// with what is wrong.
    List {
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
        /// Also list the enabled MCP servers' prompts (`SERVER.PROMPT`), starting them.
        #[arg(long)]
        mcp: bool,
    },
    /// Show a command's file: where it is, its settings and arguments, its prompt; with
    /// --render, print exactly the message `genai ask -t NAME ARGS...` would send.
    Show {
        /// The command's name (`FOLDER:NAME` in a subfolder, `SERVER.PROMPT` for MCP).
        name: String,
        /// Print the rendered message instead (piped stdin is the input).
        #[arg(long)]
        render: bool,
        /// With --render: NAME=VALUE arguments, then the text.
        args: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a new command file from a template: `.genai/commands/NAME.md` of the project (the
    /// repository's top, else the working folder), or with --user the config folder's.
    New {
        /// The new command's name (`FOLDER:NAME` writes it in a subfolder).
        name: String,
        /// In the config folder's `commands/` (for every project).
        #[arg(long)]
        user: bool,
        /// The description to start with.
        #[arg(long)]
        description: Option<String>,
    },
    /// Open a command's file in $VISUAL or $EDITOR (vi without them); a built-in command is
    /// copied into the project's `.genai/commands/` first. The file is checked afterwards.
    Edit {
        /// The command's name.
        name: String,
    },
}

pub async fn run(command: Command) -> i32 {
    match run_inner(command).await {
        Ok(code) => code,
        Err(e) => super::fail(&e),
    }
}

fn framework() -> Result<(Framework, PathBuf), Error> {
    let (paths, config, registry) = super::load()?;
    let fw = Framework::new(config, registry, Arc::new(Store::scratch()?)).with_home(&paths);
    let cwd = std::env::current_dir().map_err(|e| usage(format!("no working folder: {e}")))?;
    Ok((fw, cwd))
}

pub(super) fn place_name(p: Place) -> &'static str {
    match p {
        Place::Project => "project",
        Place::ClaudeProject => "claude-project",
        Place::User => "user",
        Place::ClaudeUser => "claude-user",
        Place::Codex => "codex",
        Place::Config => "config",
        Place::Builtin => "built-in",
    }
}

async fn run_inner(command: Command) -> Result<i32, Error> {
    let (fw, cwd) = framework()?;
    let commands = fw.commands(&cwd);
    match command {
        Command::List { json, mcp } => {
            let prompts = match mcp {
                true => fw.mcp_commands(None).await,
                false => Vec::new(),
            };
            fw.close_all();
            if json {
                let v = json!({
                    "commands": commands.list().collect::<Vec<_>>(),
                    "mcpPrompts": prompts.iter().map(|p| json!({
                        "name": genai_core::session::mcp_command_name(p),
                        "description": p.description,
                    })).collect::<Vec<_>>(),
                    "errors": commands.bad().collect::<Vec<_>>(),
                });
                super::print_json(&v);
                return Ok(0);
            }
            let width = commands.list().map(|c| c.name.len()).max().unwrap_or(0);
            for c in commands.list() {
                outln!(
                    "{:width$}  {:14}  {}",
                    c.name,
                    place_name(c.place),
                    c.description
                );
            }
            for p in &prompts {
                let name = genai_core::session::mcp_command_name(p);
                let about = p.description.clone().unwrap_or_default();
                outln!("{name:width$}  {:14}  {about}", "mcp");
            }
            for bad in commands.bad() {
                eprintln!("genai: {}", bad.message);
            }
            Ok(0)
        }
        Command::Show {
            name,
            render: true,
            args,
            json,
        } => {
            // Read as `genai ask -t` reads them, so the text is the one it sends.
            let mut invocation = commands.invocation(&name, &args)?;
            invocation.input = super::ask::piped_input()?;
            let ready = fw
                .prepare_command(&commands, &cwd, None, &name, &invocation)
                .await;
            fw.close_all();
            let ready = ready?;
            if json {
                super::print_json(&json!({"text": ready.text(), "settings": ready.settings}));
            } else {
                outln!("{}", ready.text());
            }
            Ok(0)
        }
        Command::Show {
            name, args, json, ..
        } => {
            if !args.is_empty() {
                return Err(usage(
                    "arguments go with --render: genai commands show NAME --render NAME=VALUE...",
                ));
            }
            let c = commands.find(&name)?;
            if json {
                super::print_json(c);
            } else {
                show(c);
            }
            Ok(0)
        }
        Command::New {
            name,
            user,
            description,
        } => {
            let dir = match user {
                true => fw
                    .config_dir()
                    .map(|d| d.join("commands"))
                    .ok_or_else(|| usage("no config folder"))?,
                false => project_root(&cwd).join(".genai/commands"),
            };
            let path = new_file(&dir, &name, description.as_deref())?;
            outln!("{}", path.display());
            Ok(0)
        }
        Command::Edit { name } => {
            // A file that does not parse is opened too, to be mended.
            let path = match commands.bad().find(|b| b.name == name) {
                Some(bad) => bad.path.clone(),
                None => {
                    let c = commands.find(&name)?;
                    match (&c.path, c.place) {
                        (Some(p), _) => p.clone(),
                        (None, Place::Builtin) => {
                            copy_builtin(&project_root(&cwd).join(".genai/commands"), c)?
                        }
                        (None, _) => {
                            return Err(usage(format!(
                                "`{name}` is [lsp.actions.{name}] in the config: edit the config, or make it a file with genai commands new {name}"
                            )))
                        }
                    }
                }
            };
            open_editor(&path)?;
            let again = fw.commands(&cwd);
            if let Err(e) = again.find(&name) {
                eprintln!("genai: {}", e.message);
                return Ok(2);
            }
            Ok(0)
        }
    }
}

/// Prints a command as its file says.
fn show(c: &Cmd) {
    outln!("{}: {}", c.name, c.description);
    outln!("from: {} ({})", c.origin(), place_name(c.place));
    if let Some(hint) = &c.argument_hint {
        outln!("arguments: {hint}");
    }
    for a in &c.arguments {
        let default = a
            .default
            .as_deref()
            .map_or("required".to_string(), |d| format!("default {d:?}"));
        let about = a.description.as_deref().unwrap_or("");
        outln!("argument {}: {about} ({default})", a.name);
    }
    let settings = serde_json::to_value(&c.settings).unwrap_or_default();
    if let Some(map) = settings.as_object() {
        for (k, v) in map {
            outln!("{k}: {v}");
        }
    }
    for u in &c.unused {
        outln!("not used by genai: {u}");
    }
    outln!();
    outln!("{}", c.body.trim_end());
}

/// The repository's top above `cwd` (the folder holding `.git`), else `cwd`.
fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

fn new_file(dir: &Path, name: &str, description: Option<&str>) -> Result<PathBuf, Error> {
    if !genai_core::command::valid_name(name) {
        return Err(usage(format!(
            "`{name}` cannot name a command: use letters, digits, `-`, `_` and `.` (FOLDER:NAME for a subfolder)"
        )));
    }
    let path = dir.join(format!("{}.md", name.replace(':', "/")));
    if path.exists() {
        return Err(usage(format!(
            "{} exists already: genai commands edit {name}",
            path.display()
        )));
    }
    let description = description.unwrap_or("What this command does");
    let text = format!(
        "---\ndescription: {}\n# model: openai:gpt-4o-mini\n# arguments:\n#   - name: lang\n#     default: English\n---\nThe prompt. {{{{input}}}} is piped stdin or the editor's selection; {{{{args}}}} the words after the command.\n",
        serde_json::to_string(description).unwrap_or_default()
    );
    write_new(&path, &text)?;
    Ok(path)
}

fn copy_builtin(dir: &Path, c: &Cmd) -> Result<PathBuf, Error> {
    let path = dir.join(format!("{}.md", c.name));
    if !path.exists() {
        let text = format!(
            "---\ndescription: {}\ntitle: {}\napply: {}\n---\n{}",
            serde_json::to_string(&c.description).unwrap_or_default(),
            serde_json::to_string(&c.title).unwrap_or_default(),
            serde_json::to_value(c.apply)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            c.body
        );
        write_new(&path, &text)?;
        eprintln!(
            "genai: copied the built-in `{}` to {}; this file overrides it",
            c.name,
            path.display()
        );
    }
    Ok(path)
}

fn write_new(path: &Path, text: &str) -> Result<(), Error> {
    let failed = |e: std::io::Error| {
        Error::new(
            ErrorKind::Internal,
            format!("cannot write {}: {e}", path.display()),
        )
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    std::fs::write(path, text).map_err(failed)
}

/// Opens `path` in `$VISUAL`, `$EDITOR` or vi, waiting for it to exit.
fn open_editor(path: &Path) -> Result<(), Error> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string());
    // The variable may hold arguments (`code --wait`): the shell splits it.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(path)
        .status()
        .map_err(|e| usage(format!("cannot start the editor `{editor}`: {e}")))?;
    if !status.success() {
        return Err(usage(format!("the editor `{editor}` failed ({status})")));
    }
    Ok(())
}
