//! One permission rule: parsing a rule string (`TOOL` or `TOOL(PATTERN)`) and whether it
//! matches one tool call.
//!
//! This module owns the rule syntax, the three pattern languages (paths, command lines, URLs)
//! and how a command line splits into the commands it chains. It must never decide a call on
//! its own (deny-beats-ask-beats-allow, secrets and modes are [`super::Policy`]'s), nor read
//! any file.

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;

use super::Kind;
use genai_base::error::{Error, ErrorKind, Result};

/// The source of the built-in tools.
pub(crate) const WORKSPACE: &str = "workspace";

/// The built-in tools by short name (`read_file` means `workspace.read_file`).
pub(crate) const WORKSPACE_TOOLS: [&str; 7] = [
    "read_file",
    "list",
    "search",
    "edit_file",
    "write_file",
    "run_command",
    "fetch",
];

/// What a rule looks like, said by every error about a bad one.
const EXPECTED: &str = "expected TOOL or TOOL(PATTERN): TOOL is a full tool name \
     (workspace.run_command, github.create_issue), a source (workspace, github), SOURCE.*, or a \
     workspace tool's short name (read_file, list, search, edit_file, write_file, run_command, \
     fetch); PATTERN is a path glob (src/**, *.md), a command (cargo test *), or for fetch \
     domain:HOST or a URL glob";

/// One parsed rule, such as `workspace`, `github.*`, `read_file(**/.env*)` or
/// `run_command(cargo test *)`.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tools: Tools,
    pattern: Option<Pattern>,
}

/// Which tools a rule names.
#[derive(Debug, Clone)]
enum Tools {
    /// One tool by its full name (`workspace.read_file`, `github.create_issue`).
    One(String),
    /// Every tool of a source (`workspace`, `github`, `github.*`).
    Source(String),
}

/// A rule's pattern, compiled in each language the rule's tools may need: a source-wide rule
/// (`workspace(src/**)`) meets paths, commands and URLs alike, and the request's [`Kind`]
/// says which one applies.
#[derive(Debug, Clone)]
struct Pattern {
    /// False when the pattern is only wildcards in its last segment (`**`, `*`, `src/**`):
    /// such a pattern does not name a file, so it does not unlock a secret one.
    names_file: bool,
    path: Option<GlobMatcher>,
    command: Option<Regex>,
    url: Option<UrlPattern>,
}

/// A fetch pattern: `domain:HOST` or a glob on the whole URL.
#[derive(Debug, Clone)]
enum UrlPattern {
    Domain(String),
    Glob(GlobMatcher),
}

/// Which language a subject speaks, from the kind of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubjectKind {
    Path,
    Command,
    Url,
}

fn subject_kind(kind: Kind) -> Option<SubjectKind> {
    match kind {
        Kind::Read | Kind::Edit => Some(SubjectKind::Path),
        Kind::Execute => Some(SubjectKind::Command),
        Kind::Fetch => Some(SubjectKind::Url),
        Kind::Other { .. } => None,
    }
}

/// The language of a built-in tool's subject.
fn workspace_subject(short: &str) -> SubjectKind {
    match short {
        "run_command" => SubjectKind::Command,
        "fetch" => SubjectKind::Url,
        _ => SubjectKind::Path,
    }
}

fn bad_rule(text: &str, problem: &str) -> Error {
    Error::new(
        ErrorKind::Config,
        format!("bad permission rule `{text}`: {problem}; {EXPECTED}"),
    )
}

impl Rule {
    /// Parses a rule string; a bad one is an error naming it and saying the expected shape.
    pub fn parse(text: &str) -> Result<Rule> {
        let trimmed = text.trim();
        let (tool, pattern) = match trimmed.find('(') {
            None if trimmed.contains(')') => return Err(bad_rule(text, "a `)` without `(`")),
            None => (trimmed, None),
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(bad_rule(text, "the pattern does not end with `)`"));
                };
                if inner.trim().is_empty() {
                    return Err(bad_rule(text, "the pattern in `()` is empty"));
                }
                (trimmed[..open].trim_end(), Some(inner.trim()))
            }
        };
        let tools = parse_tools(text, tool)?;
        let kinds: Vec<SubjectKind> = match &tools {
            Tools::Source(_) => vec![SubjectKind::Path, SubjectKind::Command, SubjectKind::Url],
            Tools::One(name) => match name.strip_prefix("workspace.") {
                Some(short) => vec![workspace_subject(short)],
                // Other tools have no subject: their pattern never matches.
                None => Vec::new(),
            },
        };
        let pattern = match pattern {
            None => None,
            Some(p) => Some(Pattern::compile(text, p, &kinds)?),
        };
        Ok(Rule {
            text: trimmed.to_string(),
            tools,
            pattern,
        })
    }

    /// The rule as written (trimmed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the rule names the tool `tool` (a full name such as `workspace.fetch`).
    pub(crate) fn names_tool(&self, tool: &str) -> bool {
        match &self.tools {
            Tools::One(name) => name == tool,
            Tools::Source(source) => tool
                .split_once('.')
                .is_some_and(|(s, name)| s == source && !name.is_empty()),
        }
    }

    /// Whether the rule matches a call of `tool` of this `kind` on `subject`, one part of the
    /// call's subject (one command of a chain: see [`command_parts`]). A rule with a pattern
    /// never matches a call with no subject.
    pub fn matches(&self, tool: &str, kind: Kind, subject: Option<&str>) -> bool {
        if !self.names_tool(tool) {
            return false;
        }
        let Some(pattern) = &self.pattern else {
            return true;
        };
        let Some(subject) = subject else {
            return false;
        };
        match subject_kind(kind) {
            Some(SubjectKind::Path) => pattern
                .path
                .as_ref()
                .is_some_and(|glob| path_matches(glob, subject)),
            Some(SubjectKind::Command) => pattern
                .command
                .as_ref()
                .is_some_and(|re| re.is_match(subject.trim())),
            Some(SubjectKind::Url) => pattern
                .url
                .as_ref()
                .is_some_and(|url| url.matches(subject.trim())),
            None => false,
        }
    }

    /// Whether the rule matches this call AND names its file: its pattern's last segment is
    /// more than wildcards (`.env`, `**/.env*`, `*.pem`, not `**`, `*` or `src/**`). Only such
    /// a rule unlocks a secret file.
    pub(crate) fn names_file(&self, tool: &str, kind: Kind, subject: Option<&str>) -> bool {
        self.pattern.as_ref().is_some_and(|p| p.names_file) && self.matches(tool, kind, subject)
    }
}

/// Reads the TOOL part of a rule.
fn parse_tools(text: &str, tool: &str) -> Result<Tools> {
    let name_ok = |s: &str| {
        !s.is_empty()
            && !s
                .chars()
                .any(|c| c.is_whitespace() || matches!(c, '(' | ')' | '*' | '"' | '\'' | '`'))
    };
    if WORKSPACE_TOOLS.contains(&tool) {
        return Ok(Tools::One(format!("{WORKSPACE}.{tool}")));
    }
    if tool.is_empty() {
        return Err(bad_rule(text, "the tool is missing"));
    }
    match tool.split_once('.') {
        None if name_ok(tool) => Ok(Tools::Source(tool.to_string())),
        None => Err(bad_rule(
            text,
            &format!("`{tool}` is not a tool or source name"),
        )),
        Some((source, _)) if !name_ok(source) => {
            Err(bad_rule(text, &format!("`{source}` is not a source name")))
        }
        Some((source, "*")) => Ok(Tools::Source(source.to_string())),
        Some((source, name)) if source == WORKSPACE && !WORKSPACE_TOOLS.contains(&name) => {
            Err(bad_rule(
                text,
                &format!(
                    "`{name}` is not a workspace tool (they are {})",
                    WORKSPACE_TOOLS.join(", ")
                ),
            ))
        }
        Some((_, name)) if name_ok(name) => Ok(Tools::One(tool.to_string())),
        Some(_) => Err(bad_rule(text, &format!("`{tool}` is not a tool name"))),
    }
}

impl Pattern {
    /// Compiles `pattern` in each language of `kinds`.
    fn compile(text: &str, pattern: &str, kinds: &[SubjectKind]) -> Result<Pattern> {
        let last = pattern
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("");
        let mut compiled = Pattern {
            names_file: last.chars().any(|c| !matches!(c, '*' | '?')),
            path: None,
            command: None,
            url: None,
        };
        for kind in kinds {
            match kind {
                SubjectKind::Path => compiled.path = Some(path_glob(text, pattern)?),
                SubjectKind::Command => compiled.command = Some(command_regex(text, pattern)?),
                SubjectKind::Url => compiled.url = Some(UrlPattern::compile(text, pattern)?),
            }
        }
        Ok(compiled)
    }
}

/// A path pattern as gitignore reads it: `/` separates folders (`\` too), `*` stays in one
/// folder and `**` crosses them; a pattern with no `/` (but a trailing one) matches at any
/// depth (`*.md` is `**/*.md`), one with a `/` is relative to the root (a leading `/` only
/// anchors), and a trailing `/` means the folder's contents.
fn path_glob(text: &str, pattern: &str) -> Result<GlobMatcher> {
    let pattern = pattern.replace('\\', "/");
    let (body, folder) = match pattern.strip_suffix('/') {
        Some(body) => (body, true),
        None => (pattern.as_str(), false),
    };
    let anchored = body.contains('/');
    let body = body.strip_prefix('/').unwrap_or(body);
    let mut glob = if anchored {
        body.to_string()
    } else {
        format!("**/{body}")
    };
    if folder {
        glob.push_str("/**");
    }
    GlobBuilder::new(&glob)
        .literal_separator(true)
        .backslash_escape(false)
        // As the file systems there: `SECRET/x` is `secret/x` on macOS and Windows.
        .case_insensitive(cfg!(any(target_os = "macos", windows)))
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| bad_rule(text, &format!("the path pattern is not a valid glob ({e})")))
}

/// Whether `glob` matches the root-relative `path` or one of its folders (as in gitignore, a
/// pattern naming a folder covers what is inside it).
fn path_matches(glob: &GlobMatcher, path: &str) -> bool {
    let path = normalize_path(path);
    let mut at = path.len();
    loop {
        if glob.is_match(&path[..at]) {
            return true;
        }
        match path[..at].rfind('/') {
            Some(slash) => at = slash,
            None => return false,
        }
    }
}

/// A root-relative path with `/` separators (`\` read as one), without `.` segments and
/// with `..` resolved where it can be, so `src/../.env` is seen as `.env`; the root is `.`.
pub(crate) fn normalize_path(path: &str) -> String {
    let path = path.trim().replace('\\', "/");
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." if segments.last().is_some_and(|s| *s != "..") => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    if segments.is_empty() {
        ".".to_string()
    } else {
        segments.join("/")
    }
}

/// A command pattern: `*` matches any run of characters (spaces too), a run of whitespace
/// matches any run of whitespace, anything else itself; it matches the whole (trimmed)
/// command. A trailing ` *` also matches the bare command (`cargo test *` matches
/// `cargo test`). Written by hand: no glob crate lets `*` span spaces and `/` alike.
fn command_regex(text: &str, pattern: &str) -> Result<Regex> {
    let pattern = pattern.trim();
    let (body, optional_args) = match pattern.strip_suffix('*') {
        Some(head) if head.ends_with(char::is_whitespace) => (head.trim_end(), true),
        _ => (pattern, false),
    };
    let mut re = String::from("(?s)^");
    let mut in_space = false;
    for c in body.chars() {
        if c.is_whitespace() {
            if !in_space {
                re.push_str(r"\s+");
            }
            in_space = true;
            continue;
        }
        in_space = false;
        if c == '*' {
            re.push_str(".*");
        } else {
            re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
        }
    }
    if optional_args {
        re.push_str(r"(?:\s.*)?");
    }
    re.push('$');
    Regex::new(&re).map_err(|e| bad_rule(text, &format!("the command pattern is too large ({e})")))
}

/// The commands a command line runs, split at `;`, `&&`, `||`, `|`, `&`, newlines, backticks,
/// `$(`, `<(` and `>(` (`2>&1` and `&>` are redirections, not separators), each trimmed, the
/// empty ones dropped; a line with no command at all is the one empty part.
///
/// Quotes are not honoured on purpose: a separator inside quotes only splits more, which can
/// make an allow rule miss (the call is asked) or a deny rule hit, never the other way; and a
/// real shell runs `$(...)` and backticks inside double quotes anyway.
pub(crate) fn command_parts(command: &str) -> Vec<&str> {
    let bytes = command.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let next = bytes.get(i + 1).copied();
        let separator = match bytes[i] {
            b';' | b'\n' | b'\r' | b'`' | b'|' => 1,
            b'&' if i > 0 && matches!(bytes[i - 1], b'>' | b'<') => 0,
            b'&' if next == Some(b'>') => 0,
            b'&' => 1,
            b'$' | b'<' | b'>' if next == Some(b'(') => 2,
            _ => 0,
        };
        if separator > 0 {
            parts.push(command[start..i].trim());
            i += separator;
            start = i;
        } else {
            i += 1;
        }
    }
    parts.push(command[start..].trim());
    parts.retain(|p| !p.is_empty());
    if parts.is_empty() {
        parts.push("");
    }
    parts
}

impl UrlPattern {
    fn compile(text: &str, pattern: &str) -> Result<UrlPattern> {
        if let Some(host) = pattern.strip_prefix("domain:") {
            let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
            let ok = !host.is_empty()
                && !host.starts_with('.')
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
            if !ok {
                return Err(bad_rule(
                    text,
                    "a domain pattern is domain:HOST, such as domain:docs.rs (it covers the \
                     subdomains too)",
                ));
            }
            return Ok(UrlPattern::Domain(host));
        }
        GlobBuilder::new(pattern)
            .literal_separator(false)
            .backslash_escape(false)
            .build()
            .map(|g| UrlPattern::Glob(g.compile_matcher()))
            .map_err(|e| bad_rule(text, &format!("the URL pattern is not a valid glob ({e})")))
    }

    /// Whether `url` matches. The URL is read as the fetch tool's HTTP client reads it (the
    /// `url` crate, WHATWG rules), so `https://docs.rs@evil.com/` is on `evil.com`.
    fn matches(&self, url: &str) -> bool {
        let parsed = url::Url::parse(url).ok();
        match self {
            UrlPattern::Domain(domain) => parsed
                .as_ref()
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                .is_some_and(|host| {
                    let host = host.trim_end_matches('.');
                    host == domain
                        || host
                            .strip_suffix(domain.as_str())
                            .is_some_and(|sub| sub.ends_with('.'))
                }),
            UrlPattern::Glob(glob) => glob.is_match(parsed.as_ref().map_or(url, |u| u.as_str())),
        }
    }
}

/// The host of a URL as the fetch tool reaches it, lower case, if it has one.
pub(crate) fn url_host(url: &str) -> Option<String> {
    let parsed = url::Url::parse(url.trim()).ok()?;
    let host = parsed
        .host_str()?
        .trim_end_matches('.')
        .to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
