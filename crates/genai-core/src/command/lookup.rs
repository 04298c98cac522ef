//! Finding commands: the folders searched from a working folder, nearest first, and the set
//! of commands they hold by name, the first place holding a name winning:
//!
//! 1. `.genai/commands/` of the working folder, then of each folder above it (not the home
//!    folder itself), then `.claude/commands/` the same way;
//! 2. the config folder's `commands/`, then `~/.claude/commands/` (`$CLAUDE_CONFIG_DIR`);
//! 3. Codex's `$CODEX_HOME/prompts/` (default `~/.codex/prompts/`);
//! 4. `[lsp.actions.NAME]` of the config, then the built-in commands.
//!
//! A file in a subfolder is named `FOLDER:NAME`. A file that cannot be read keeps its name,
//! so using it says what is wrong rather than running another. It reads folders only; it
//! never renders nor runs a command.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use super::{BadFile, Command, Dialect, Place};
use crate::error::{Error, Result};

/// A folder commands are read from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Folder {
    pub(crate) path: PathBuf,
    pub(crate) place: Place,
    pub(crate) dialect: Dialect,
}

/// How deep subfolders are read (`a:b:name`).
const MAX_DEPTH: usize = 3;

/// The folders commands are searched in from `cwd`, in order ([`folders_of`]'s, then Codex's
/// prompts); those that do not exist are left out.
pub(crate) fn folders(cwd: &Path, config_dir: Option<&Path>) -> Vec<Folder> {
    let mut out = folders_of("commands", cwd, config_dir);
    let codex = from_env("CODEX_HOME").or_else(|| dirs::home_dir().map(|h| h.join(".codex")));
    if let Some(path) = codex.map(|c| c.join("prompts")) {
        if path.is_dir() && !out.iter().any(|f| f.path == path) {
            out.push(Folder {
                path,
                place: Place::Codex,
                dialect: Dialect::Codex,
            });
        }
    }
    out
}

/// The folders named `kind` (`commands`, `agents`) from `cwd`, nearest first: `.genai/KIND`
/// in `cwd` and each folder above it, then `.claude/KIND` the same way, the config folder's
/// `KIND`, and Claude Code's user folder's; those that do not exist are left out.
pub(crate) fn folders_of(kind: &str, cwd: &Path, config_dir: Option<&Path>) -> Vec<Folder> {
    let above = above(cwd);
    let mut out = Vec::new();
    let mut add = |path: PathBuf, place, dialect| {
        if path.is_dir() && !out.iter().any(|f: &Folder| f.path == path) {
            out.push(Folder {
                path,
                place,
                dialect,
            });
        }
    };
    for d in &above {
        add(d.join(".genai").join(kind), Place::Project, Dialect::Genai);
    }
    for d in &above {
        let dir = d.join(".claude").join(kind);
        add(dir, Place::ClaudeProject, Dialect::ClaudeCode);
    }
    if let Some(c) = config_dir {
        add(c.join(kind), Place::User, Dialect::Genai);
    }
    let claude =
        from_env("CLAUDE_CONFIG_DIR").or_else(|| dirs::home_dir().map(|h| h.join(".claude")));
    if let Some(c) = claude {
        add(c.join(kind), Place::ClaudeUser, Dialect::ClaudeCode);
    }
    out
}

/// A folder named by the environment variable `var`, when set and not empty.
fn from_env(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The working folder and each folder above it, nearest first, up to the home folder (not
/// itself): where a project's `.genai/` and `.claude/` folders are looked for.
pub(crate) fn above(cwd: &Path) -> Vec<&Path> {
    let home = dirs::home_dir();
    cwd.ancestors()
        .take_while(|d| home.as_deref() != Some(*d))
        .collect()
}

/// Whether a file's name can be typed after `/` and `-t`: each `:` part letters, digits,
/// `-`, `_` and `.`.
pub fn valid_name(name: &str) -> bool {
    name.split(':').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
    })
}

/// The `.md` files of a folder with their command names, sorted; Codex reads its folder only.
fn files(folder: &Folder) -> Vec<(String, PathBuf)> {
    let depth = match folder.dialect {
        Dialect::Codex => 1,
        _ => MAX_DEPTH,
    };
    let mut out = Vec::new();
    let walk = walkdir_sorted(&folder.path, depth);
    for path in walk {
        let Ok(relative) = path.strip_prefix(&folder.path) else {
            continue;
        };
        let Some(stem) = relative.to_str().and_then(|s| s.strip_suffix(".md")) else {
            continue;
        };
        let name = stem.replace(['/', '\\'], ":");
        out.push((name, path));
    }
    out
}

/// The files under `dir` down to `depth` levels, sorted by path (hidden entries skipped).
pub(crate) fn walkdir_sorted(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_none_or(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if path.is_dir() {
            if depth > 1 {
                out.extend(walkdir_sorted(&path, depth - 1));
            }
        } else {
            out.push(path);
        }
    }
    out
}

/// The commands seen from a working folder, by name.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    /// The command each name runs, or why its file cannot be read.
    entries: BTreeMap<String, std::result::Result<Command, BadFile>>,
}

impl Commands {
    /// Reads every folder of [`folders`], then `[lsp.actions]` and the built-in commands.
    pub(crate) fn load(
        cwd: &Path,
        config_dir: Option<&Path>,
        lsp_actions: &BTreeMap<String, crate::config::lsp::LspActionConfig>,
    ) -> Commands {
        let mut commands = Commands::default();
        for folder in folders(cwd, config_dir) {
            for (name, path) in files(&folder) {
                if commands.entries.contains_key(&name) {
                    continue;
                }
                let read = match valid_name(&name) {
                    true => super::file::parse(&name, &path, folder.dialect, folder.place),
                    false => Err(BadFile {
                        message: format!(
                            "{}: `{name}` cannot name a command: rename the file with letters, digits, `-`, `_` and `.` only",
                            path.display()
                        ),
                        name: name.clone(),
                        path,
                    }),
                };
                commands.entries.insert(name, read);
            }
        }
        for c in super::from_lsp_actions(lsp_actions)
            .into_iter()
            .chain(super::builtin())
        {
            commands.entries.entry(c.name.clone()).or_insert(Ok(c));
        }
        commands
    }

    /// The commands that can run, by name.
    pub fn list(&self) -> impl Iterator<Item = &Command> {
        self.entries.values().filter_map(|e| e.as_ref().ok())
    }

    /// The files that cannot be read (each hides any command of its name further down).
    pub fn bad(&self) -> impl Iterator<Item = &BadFile> {
        self.entries.values().filter_map(|e| e.as_ref().err())
    }

    /// The command `name`; an error says what is wrong with its file, or that there is none.
    pub fn find(&self, name: &str) -> Result<&Command> {
        let name = name.strip_prefix('/').unwrap_or(name);
        match self.entries.get(name) {
            Some(Ok(c)) => Ok(c),
            Some(Err(bad)) => Err(bad.error()),
            None => {
                let names: Vec<&str> = self.entries.keys().map(String::as_str).collect();
                Err(Error::invalid_params(format!(
                    "no command `{name}`: there are {} (genai commands list shows where each comes from)",
                    names.join(", ")
                )))
            }
        }
    }

    /// What running `name` with the words after it gives: a command's `NAME=VALUE` arguments
    /// and text ([`split_words`](super::split_words)), or, for a `SERVER.PROMPT` no file names,
    /// leading `NAME=VALUE` words as the MCP prompt's arguments; else why it cannot run.
    pub fn invocation(&self, name: &str, words: &[String]) -> Result<super::Invocation> {
        let bare = name.strip_prefix('/').unwrap_or(name);
        if !self.contains(bare) && bare.contains('.') {
            return Ok(super::split_free(words));
        }
        super::split_words(self.find(name)?, words)
    }

    /// Whether `name` is a command here (readable or not).
    pub fn contains(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }
}

/// A fingerprint of the command files seen from `cwd` (paths, sizes, times): it changes when
/// a file is added, removed or edited, so a front-end can tell its client the new list.
pub fn fingerprint(cwd: &Path, config_dir: Option<&Path>) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for folder in folders(cwd, config_dir) {
        for (_, path) in files(&folder) {
            path.hash(&mut h);
            if let Ok(m) = std::fs::metadata(&path) {
                m.len().hash(&mut h);
                m.modified().ok().hash(&mut h);
            }
        }
    }
    h.finish()
}
