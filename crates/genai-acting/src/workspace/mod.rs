//! The built-in tool source `workspace`: the model reads, lists, searches and edits the files
//! under one root folder, runs commands there (sandboxed on Linux) and fetches pages. The root
//! is the working directory (`genai ask`, `genai chat`) or the client's workspace (daemon, ACP).
//!
//! This module owns what each tool does and on what (`describe`, for the permission policy).
//! It must never decide whether a call may run: the feature's guard asks the policy, the hooks
//! and the user first, and hands each call the checkpoint to keep before a file changes.

pub mod command;
pub(crate) mod editor;
pub mod files;
pub(crate) mod listing;
pub mod paths;
pub mod plan;
pub mod sandbox;
#[cfg(all(test, target_os = "linux"))]
mod sandbox_tests;
pub(crate) mod search;

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::permission::Kind;
pub use editor::{Editor, EditorCall};
use genai_base::error::{Error, Result};
use genai_base::tool::{FileEdit, Tool};
pub(crate) use paths::Root;

/// The source's name: its tools are `workspace.read_file`, ...
pub const SOURCE: &str = "workspace";

/// The most a fetched page may weigh.
const MAX_PAGE_BYTES: u64 = 2 << 20;

/// The most of a fetched page's text the model gets.
const MAX_PAGE_CHARS: usize = 50_000;

/// The workspace of one conversation.
pub struct Workspace {
    root: Root,
}

/// What one call does and on what, for the permission policy and the hooks.
#[derive(Debug, Clone)]
pub struct Described {
    pub kind: Kind,
    /// The root-relative path, the command line or the URL.
    pub subject: Option<String>,
}

/// A file's content before or after a change, for its checkpoint.
#[derive(Debug, Clone, Copy)]
pub enum Content<'a> {
    /// What the disk holds.
    OnDisk,
    /// What the editor holds (`None`: no such file).
    Known(Option<&'a [u8]>),
}

/// What a call needs beside its arguments.
pub struct CallContext<'a> {
    /// Called with a file's absolute path right before it is written (`false`), and after
    /// (`true`), with what it holds.
    pub on_write: &'a (dyn Fn(&Path, bool, Content<'_>) -> Result<()> + Send + Sync),
    /// Files `search` must not open (the secret files no rule names).
    pub secret: &'a (dyn Fn(&str) -> bool + Send + Sync),
    /// How a command is confined; `None`: not sandboxed.
    pub sandbox: Option<sandbox::Sandbox>,
    /// The client's editor, when it holds the files or runs the commands, and this call.
    pub editor: Option<(&'a dyn Editor, EditorCall)>,
}

/// What a call answered: the model's text, and the file it changed.
#[derive(Debug, Clone, Default)]
pub struct Called {
    pub text: String,
    pub edit: Option<FileEdit>,
}

impl From<String> for Called {
    fn from(text: String) -> Called {
        Called { text, edit: None }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    path: Option<String>,
    glob: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old_text: String,
    new_text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandArgs {
    command: String,
    timeout_s: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FetchArgs {
    url: String,
}

/// Runs file work (a walk over a large tree, a big read) where it does not hold up the
/// runtime's other tasks: `block_in_place` on a multi-threaded runtime, inline otherwise.
fn blocking<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// The text the editor holds for `abs` (a file on the disk); `None` when it cannot say (an
/// editor that reads only the buffers it has open), and the disk is read instead.
async fn held_text(editor: &dyn Editor, call: &EditorCall, abs: &Path) -> Option<String> {
    match editor.read_text(call, abs).await {
        Ok(text) => Some(text),
        Err(e) => {
            tracing::info!(
                "the editor did not read {}: {}; the disk is read instead",
                abs.display(),
                e.message
            );
            None
        }
    }
}

/// The arguments of `tool`, or an error the model can act on.
fn args<T: serde::de::DeserializeOwned>(tool: &str, arguments: &Value) -> Result<T> {
    serde_json::from_value(arguments.clone())
        .map_err(|e| Error::invalid_params(format!("bad arguments for {SOURCE}.{tool}: {e}")))
}

/// One tool's row: name, description, what it does, its arguments' schema.
fn tool(name: &str, description: &str, read_only: bool, schema: Value) -> Tool {
    Tool {
        name: format!("{SOURCE}.{name}"),
        description: description.to_string(),
        input_schema: schema,
        source: SOURCE.to_string(),
        read_only,
    }
}

impl Workspace {
    /// The workspace over `root` (which must be a folder).
    pub fn new(root: &Path) -> Result<Workspace> {
        Ok(Workspace {
            root: Root::new(root)?,
        })
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The source's tools, but `plan` (a conversation's, offered beside them: [`plan::tool`]).
    pub fn tools() -> Vec<Tool> {
        let path =
            json!({"type": "string", "description": "A path relative to the workspace root."});
        vec![
            tool(
                "read_file",
                "Read a text file of the workspace, lines numbered from 1. Use offset and limit for a part of a long file.",
                true,
                json!({"type": "object", "properties": {
                    "path": path,
                    "offset": {"type": "integer", "minimum": 1, "description": "The first line to read (1-based)."},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read."}
                }, "required": ["path"], "additionalProperties": false}),
            ),
            tool(
                "list",
                "List the files and folders under a folder of the workspace (recursively, .gitignore honoured), optionally filtered by a glob such as **/*.rs.",
                true,
                json!({"type": "object", "properties": {
                    "path": path,
                    "glob": {"type": "string", "description": "Only files matching this glob."}
                }, "additionalProperties": false}),
            ),
            tool(
                "search",
                "Search the workspace's files for a regular expression (.gitignore honoured); answers path:line:text.",
                true,
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string", "description": "A regular expression (Rust syntax)."},
                    "path": path,
                    "glob": {"type": "string", "description": "Only files matching this glob."}
                }, "required": ["pattern"], "additionalProperties": false}),
            ),
            tool(
                "edit_file",
                "Replace one exact, unique occurrence of old_text in a file by new_text; answers the unified diff.",
                false,
                json!({"type": "object", "properties": {
                    "path": path,
                    "old_text": {"type": "string", "description": "The exact text to replace; it must occur once."},
                    "new_text": {"type": "string", "description": "The text that replaces it."}
                }, "required": ["path", "old_text", "new_text"], "additionalProperties": false}),
            ),
            tool(
                "write_file",
                "Create a file, or replace a file's whole content.",
                false,
                json!({"type": "object", "properties": {
                    "path": path,
                    "content": {"type": "string", "description": "The file's new content."}
                }, "required": ["path", "content"], "additionalProperties": false}),
            ),
            tool(
                "run_command",
                "Run a shell command in the workspace root (sh -c); answers its output and exit status.",
                false,
                json!({"type": "object", "properties": {
                    "command": {"type": "string", "description": "The command line."},
                    "timeout_s": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Seconds before it is killed (default 120)."}
                }, "required": ["command"], "additionalProperties": false}),
            ),
            tool(
                "fetch",
                "Fetch a web page (http or https) as text.",
                true,
                json!({"type": "object", "properties": {
                    "url": {"type": "string", "description": "The page's URL."}
                }, "required": ["url"], "additionalProperties": false}),
            ),
        ]
    }

    /// What calling `function` with `arguments` does and on what; an error when the arguments
    /// are wrong or a path leaves the root (the call is refused before any rule is asked).
    pub fn describe(&self, function: &str, arguments: &Value) -> Result<Described> {
        let path = |given: &str| -> Result<String> {
            let abs = self.root.resolve(given)?;
            Ok(self.root.relative(&abs))
        };
        let read = |given: Option<&str>| -> Result<Described> {
            Ok(Described {
                kind: Kind::Read,
                subject: Some(path(given.unwrap_or("."))?),
            })
        };
        let write = |given: &str| -> Result<Described> {
            let relative = path(given)?;
            Ok(Described {
                kind: Kind::Edit,
                subject: Some(relative),
            })
        };
        match function {
            "read_file" => read(Some(&args::<ReadArgs>(function, arguments)?.path)),
            "list" => read(args::<ListArgs>(function, arguments)?.path.as_deref()),
            "search" => read(args::<SearchArgs>(function, arguments)?.path.as_deref()),
            "edit_file" => write(&args::<EditArgs>(function, arguments)?.path),
            "write_file" => write(&args::<WriteArgs>(function, arguments)?.path),
            "run_command" => Ok(Described {
                kind: Kind::Execute,
                subject: Some(
                    args::<CommandArgs>(function, arguments)?
                        .command
                        .trim()
                        .to_string(),
                ),
            }),
            // Touches nothing: a bad plan is the call's error (`call`), not a refusal.
            plan::NAME => Ok(Described {
                kind: Kind::Read,
                subject: None,
            }),
            "fetch" => {
                let url = args::<FetchArgs>(function, arguments)?.url;
                if !genai_base::fetch::is_url(&url) {
                    return Err(Error::invalid_params(format!(
                        "`{url}` is not an http or https URL"
                    )));
                }
                Ok(Described {
                    kind: Kind::Fetch,
                    subject: Some(url),
                })
            }
            other => Err(Error::invalid_params(format!(
                "the workspace has no tool `{other}`; it has {}",
                genai_base::error::known(Self::tools().iter().map(|t| t.name.clone()))
            ))),
        }
    }

    /// Runs one call (already allowed) and answers what the model is told.
    pub async fn call(
        &self,
        function: &str,
        arguments: &Value,
        cx: CallContext<'_>,
    ) -> Result<Called> {
        let root = &self.root;
        let editor = cx.editor.as_ref().map(|(e, call)| (*e, call));
        let reads = editor.filter(|(e, _)| e.reads());
        match function {
            "read_file" => {
                let a: ReadArgs = args(function, arguments)?;
                match reads {
                    Some((e, call)) => {
                        let abs = root.resolve(&a.path)?;
                        let rel = root.relative(&abs);
                        files::existing_file_size(
                            &abs,
                            &rel,
                            "read_file",
                            "use list to see the files",
                        )?;
                        match held_text(e, call, &abs).await {
                            Some(text) => files::render_text(&rel, &text, a.offset, a.limit),
                            None => files::read_file(root, &a.path, a.offset, a.limit),
                        }
                        .map(Called::from)
                    }
                    None => files::read_file(root, &a.path, a.offset, a.limit).map(Called::from),
                }
            }
            "list" => {
                let a: ListArgs = args(function, arguments)?;
                listing::list(root, a.path.as_deref(), a.glob.as_deref()).map(Called::from)
            }
            "search" => {
                let a: SearchArgs = args(function, arguments)?;
                search::search(
                    root,
                    &a.pattern,
                    a.path.as_deref(),
                    a.glob.as_deref(),
                    cx.secret,
                )
                .map(Called::from)
            }
            "edit_file" | "write_file" => {
                let change = self.plan_change(function, arguments, reads).await?;
                let edit = change.edit();
                let text = match editor.filter(|(e, _)| e.writes()) {
                    Some((e, call)) => {
                        let old = change.old.as_deref().map(str::as_bytes);
                        (cx.on_write)(&change.path, false, Content::Known(old))?;
                        e.write_text(call, &change.path, &edit.new_text).await?;
                        (cx.on_write)(&change.path, true, Content::Known(Some(&change.bytes)))?;
                        files::answer(&change)
                    }
                    None => blocking(|| {
                        let before = match reads {
                            Some(_) => Content::Known(change.old.as_deref().map(str::as_bytes)),
                            None => Content::OnDisk,
                        };
                        (cx.on_write)(&change.path, false, before)?;
                        let answer = files::apply(root, &change)?;
                        (cx.on_write)(&change.path, true, Content::OnDisk)?;
                        Ok::<_, Error>(answer)
                    })?,
                };
                Ok(Called {
                    text,
                    edit: Some(edit),
                })
            }
            "run_command" => {
                let a: CommandArgs = args(function, arguments)?;
                let timeout = a
                    .timeout_s
                    .map_or(command::DEFAULT_TIMEOUT, Duration::from_secs);
                if let Some((e, call)) = editor.filter(|(e, _)| e.runs_commands()) {
                    let timeout = timeout.clamp(command::MIN_TIMEOUT, command::MAX_TIMEOUT);
                    let out = e
                        .run_command(call, &a.command, root.path(), timeout)
                        .await?;
                    return Ok(out.for_model().into());
                }
                let mut env = genai_base::process::minimal_env(&[]);
                if let Some(s) = &cx.sandbox {
                    env.retain(|(name, _)| name != "TMPDIR");
                    env.push(("TMPDIR".into(), s.temp.clone().into_os_string()));
                }
                let out = command::run(command::CommandRequest {
                    command: a.command,
                    cwd: root.path().to_path_buf(),
                    timeout,
                    env,
                    sandbox: cx.sandbox,
                })
                .await?;
                let mut text = out.for_model();
                for note in &out.notes {
                    text.push_str(&format!("\n(sandbox: {note})"));
                }
                Ok(text.into())
            }
            plan::NAME => Ok(plan::answer(&plan::entries(arguments)?).into()),
            "fetch" => {
                let a: FetchArgs = args(function, arguments)?;
                let fetched = genai_base::fetch::download(&a.url, "page", MAX_PAGE_BYTES, |_| {
                    Error::invalid_params(format!(
                        "{} is larger than the {} MiB a fetched page may weigh",
                        a.url,
                        MAX_PAGE_BYTES >> 20
                    ))
                })
                .await?;
                let (_, mut text) = genai_base::fetch::page_text(&a.url, fetched)?;
                if text.len() > MAX_PAGE_CHARS {
                    text.truncate(text.floor_char_boundary(MAX_PAGE_CHARS));
                    text.push_str("\n… (the page goes on; cut here)");
                }
                Ok(text.into())
            }
            other => Err(Error::invalid_params(format!(
                "the workspace has no tool `{other}`"
            ))),
        }
    }

    /// The change an edit_file or write_file call would make, for a diff view before it is
    /// allowed (planned again when it runs).
    pub async fn preview(
        &self,
        function: &str,
        arguments: &Value,
        reads: Option<(&dyn Editor, EditorCall)>,
    ) -> Result<FileEdit> {
        let change = self
            .plan_change(function, arguments, reads.as_ref().map(|(e, c)| (*e, c)))
            .await?;
        Ok(change.edit())
    }

    /// The change an edit_file or write_file call makes, planned on the editor's text when it
    /// reads the files, else on the disk's.
    async fn plan_change(
        &self,
        function: &str,
        arguments: &Value,
        reads: Option<(&dyn Editor, &EditorCall)>,
    ) -> Result<files::Change> {
        let root = &self.root;
        let (given, edit) = if function == "edit_file" {
            let a: EditArgs = args(function, arguments)?;
            (a.path.clone(), Ok(a))
        } else {
            let a: WriteArgs = args(function, arguments)?;
            (a.path.clone(), Err(a))
        };
        let Some((e, call)) = reads else {
            return match edit {
                Ok(a) => files::plan_edit(root, &a.path, &a.old_text, &a.new_text),
                Err(a) => files::plan_write(root, &a.path, &a.content),
            };
        };
        let abs = root.resolve(&given)?;
        let rel = root.relative(&abs);
        match edit {
            Ok(a) => {
                files::existing_file_size(&abs, &rel, "edit_file", "use write_file to create it")?;
                match held_text(e, call, &abs).await {
                    Some(text) => files::edit_text(abs, rel, &text, &a.old_text, &a.new_text),
                    None => files::plan_edit(root, &a.path, &a.old_text, &a.new_text),
                }
            }
            Err(a) => {
                if abs.is_dir() {
                    return Err(Error::invalid_params(format!(
                        "`{rel}` is a folder: give the path of a file to write"
                    )));
                }
                if !abs.exists() {
                    return Ok(files::write_text(abs, rel, None, &a.content));
                }
                match held_text(e, call, &abs).await {
                    Some(old) => Ok(files::write_text(abs, rel, Some(&old), &a.content)),
                    None => files::plan_write(root, &a.path, &a.content),
                }
            }
        }
    }
}
