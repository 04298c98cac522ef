//! Reading one subagent definition: the YAML front matter between `---` lines (the same
//! splitting and lenient reading as command files, `command::file`), then the system prompt.
//! genai's own files have every field checked; Claude Code's keep the fields genai
//! understands (`name`, `description`, `tools`, `model`) and list the others as unused.
//!
//! It owns the definition format and the mapping of Claude Code's tool names to the
//! workspace's. It never looks for files nor runs an agent.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{Definition, ModelChoice};
use crate::command::file::{field_line, lenient_fields, read_with, scalar, split, yaml_error};
use crate::command::{BadFile, Dialect, Place};
use crate::permission::Mode;

/// The front matter of genai's own definitions.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    name: Option<String>,
    description: Option<String>,
    tools: Option<ToolList>,
    model: Option<String>,
    mode: Option<Mode>,
}

/// Tools as a YAML list, or one comma-separated string (Claude Code's form).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolList {
    Text(String),
    List(Vec<String>),
}

impl ToolList {
    fn names(self) -> Vec<String> {
        let all = match self {
            ToolList::Text(s) => s.split(',').map(str::to_string).collect(),
            ToolList::List(v) => v,
        };
        all.into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// The workspace tool a name stands for: genai's (`workspace.read_file`, `read_file`) or
/// Claude Code's (`Read`, `Grep`, `Glob`, `LS`, `Bash`, `Edit`, `MultiEdit`, `Write`,
/// `WebFetch`, `TodoWrite`); `None` for a name genai has no tool for.
pub fn workspace_tool(name: &str) -> Option<&'static str> {
    let bare = name.strip_prefix("workspace.").unwrap_or(name);
    Some(match bare {
        "read_file" | "Read" => "workspace.read_file",
        "list" | "Glob" | "LS" => "workspace.list",
        "search" | "Grep" => "workspace.search",
        "edit_file" | "Edit" | "MultiEdit" => "workspace.edit_file",
        "write_file" | "Write" => "workspace.write_file",
        "run_command" | "Bash" => "workspace.run_command",
        "fetch" | "WebFetch" => "workspace.fetch",
        "plan" | "TodoWrite" => "workspace.plan",
        _ => return None,
    })
}

/// Reads the definition file `path` of `dialect`; `stem` is its file name without `.md`.
pub fn parse(
    stem: &str,
    path: &Path,
    dialect: Dialect,
    place: Place,
) -> Result<Definition, BadFile> {
    read_with(stem, path, |text| {
        parse_text(stem, text, dialect, place, Some(path))
    })
}

/// Reads a definition from its text; the error is `PATH:LINE: what is wrong`.
pub fn parse_text(
    stem: &str,
    text: &str,
    dialect: Dialect,
    place: Place,
    path: Option<&Path>,
) -> Result<Definition, String> {
    let shown = path.map_or_else(|| format!("<{stem}>"), |p| p.display().to_string());
    let at = |line: usize, msg: &str| format!("{shown}:{line}: {msg}");
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body, _) = split(text).map_err(|(line, msg)| at(line, &msg))?;
    let mut d = Definition {
        name: stem.to_string(),
        description: String::new(),
        tools: None,
        unknown_tools: Vec::new(),
        model: ModelChoice::Inherit,
        mode: None,
        place,
        path: path.map(Path::to_path_buf),
        unused: Vec::new(),
        system: body.trim().to_string(),
    };
    let mut names = None;
    match dialect {
        Dialect::Genai => {
            let f: Front = match front {
                Some(front) if !front.trim().is_empty() => {
                    serde_yaml_ng::from_str(front).map_err(|e| {
                        let (line, msg) = yaml_error(&e);
                        at(line + 1, &format!("front matter: {msg}"))
                    })?
                }
                _ => Front::default(),
            };
            let line = |field: &str| front.map_or(1, |f| field_line(f, field));
            d.name = f.name.unwrap_or(d.name);
            d.description = f.description.unwrap_or_default();
            d.model = f
                .model
                .map_or(ModelChoice::Inherit, |m| ModelChoice::read(&m));
            d.mode = f.mode;
            names = f.tools.map(ToolList::names);
            if let Some(unknown) = names.iter().flatten().find(|n| workspace_tool(n).is_none()) {
                return Err(at(
                    line("tools"),
                    &format!(
                        "tools: `{unknown}` is not a workspace tool: use read_file, list, search, edit_file, write_file, run_command, fetch or plan"
                    ),
                ));
            }
        }
        Dialect::ClaudeCode | Dialect::Codex => {
            for (key, value) in front.map(lenient_fields).unwrap_or_default() {
                match (key.as_str(), value) {
                    ("name", Value::String(s)) => d.name = s.trim().to_string(),
                    ("description", Value::String(s)) => d.description = s,
                    ("model", v) => d.model = ModelChoice::read(&scalar(&v)),
                    ("tools", Value::String(s)) => names = Some(ToolList::Text(s).names()),
                    ("tools", Value::Array(a)) => {
                        names = Some(a.iter().map(scalar).filter(|s| !s.is_empty()).collect())
                    }
                    (_, v) => d.unused.push(format!("{key}: {}", scalar(&v))),
                }
            }
        }
    }
    if let Some(names) = names {
        let mut tools: Vec<String> = Vec::new();
        for n in names {
            match workspace_tool(&n) {
                Some(t) if !tools.iter().any(|have| have == t) => tools.push(t.to_string()),
                Some(_) => {}
                None => d.unknown_tools.push(n),
            }
        }
        d.tools = Some(tools);
    }
    if !crate::command::valid_name(&d.name) || d.name.contains(':') {
        return Err(at(
            1,
            &format!(
                "`{}` cannot name a subagent: use letters, digits, `-`, `_` and `.` only",
                d.name
            ),
        ));
    }
    if d.system.is_empty() {
        return Err(at(
            1,
            "the definition has no system prompt: write the subagent's instructions after the front matter",
        ));
    }
    if d.description.trim().is_empty() {
        d.description = d.system.lines().next().unwrap_or_default().to_string();
    }
    Ok(d)
}
