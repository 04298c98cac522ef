//! The one permission policy: before every tool call (the built-in workspace tools, MCP tools
//! and plugin modules alike, in every front-end) the core asks `Policy::decide` whether to
//! allow it, ask the user, or deny it.
//!
//! This module owns the modes, the order in which rules are weighed, and which files are
//! secret. It must never prompt, run or log anything: it answers from the rules it was given
//! (`rules` parses and matches one rule, `project` reads the project's file and the saved
//! "always" answers).
//!
//! # Tools and calls
//!
//! Tools are named `SOURCE.tool`: the built-in `workspace.read_file`, `workspace.list`,
//! `workspace.search`, `workspace.edit_file`, `workspace.write_file`, `workspace.run_command`
//! and `workspace.fetch`; `SERVER.tool` for MCP tools; `MODULE.function` for plugin modules.
//! A call ([`Request`]) has a `Kind` (read, edit, execute, fetch, or another tool, read-only
//! when its MCP server marks it `readOnlyHint`) and a subject: the root-relative path (`.` for
//! the root) for reads, listings, searches, edits and writes; the command line for
//! `run_command`; the URL for `fetch`; none for other tools.
//!
//! # Modes
//!
//! | kind | read-only, plan | ask | edit | full |
//! |---|---|---|---|---|
//! | read | allow | allow | allow | allow |
//! | fetch | ask | ask | ask | allow |
//! | edit | deny | ask | allow | allow |
//! | execute | deny | ask | ask | allow |
//! | other, read-only | allow | allow | allow | allow |
//! | other | deny | allow | allow | allow |
//!
//! The mode is `--mode`'s, else `[permissions] mode` of the user's config, else `ask`. `plan`
//! decides as `read-only` does, and its refusals say how to carry the plan out.
//!
//! # Rules
//!
//! `[permissions]` in the user's config has `allow`, `ask` and `deny` lists of rules, each
//! `TOOL` or `TOOL(PATTERN)`. TOOL is a full name (`workspace.run_command`,
//! `github.create_issue`), a source (`workspace`, `github`: all its tools), `SOURCE.*` (the
//! same), or a workspace tool's short name (`read_file`, `list`, `search`, `edit_file`,
//! `write_file`, `run_command`, `fetch`). PATTERN depends on the call:
//! * a path: a gitignore-style glob on the root-relative path. `*` stays within one folder,
//!   `**` crosses folders; a pattern with no `/` matches at any depth (`*.md` is `**/*.md`),
//!   one with a `/` is relative to the root (`src/**`, `/Cargo.toml`); a pattern matching a
//!   folder covers what is inside it.
//! * a command line: `*` matches any run of characters, spaces included; the pattern matches
//!   the whole command line (trimmed), and a trailing ` *` also matches the bare command
//!   (`cargo test *` matches `cargo test` and `cargo test --lib`). A line chaining commands
//!   with `;`, `&&`, `||`, `|`, `&`, a newline, backticks, `$(`, `<(` or `>(` is allowed by
//!   allow rules only when EVERY command in it matches some allow rule; a deny or ask rule
//!   applies when ANY command in it matches.
//! * a URL: `domain:docs.rs` matches that host and its subdomains (not `docs.rs.evil.com`);
//!   anything else is a glob on the whole URL, where `*` matches anything.
//!
//! A rule with a pattern never matches a call with no subject. A bad rule is an error.
//!
//! # Order
//!
//! 1. A matching deny rule denies (from the user's config, the project file, or `--deny`).
//! 2. A call on a secret file is denied unless an allow or ask rule matching it names the
//!    file: its pattern's last segment is more than wildcards (`read_file(.env)`,
//!    `read_file(**/.env*)`; not a bare `read_file`, `read_file(**)` or `edit_file(src/**)`).
//!    The `full` mode does not unlock secrets either.
//! 3. A matching ask rule asks.
//! 4. A matching allow rule (the user's config, saved "always" answers, `--allow`) allows.
//! 5. Otherwise the mode decides.
//!
//! Secret files, at any depth: `.env` and `.env.*` (not `.env.example`, `.env.sample`,
//! `.env.template`), `*.pem`, `*.key`, `id_rsa*`, `id_ed25519*`, `id_ecdsa*`, `*.p12`,
//! `*.pfx`, `.npmrc`, `.pypirc`, `.netrc`, `credentials.json`, `.git-credentials`, and the
//! `.ssh`, `.aws` and `.gnupg` folders with everything in them (case does not matter); plus
//! the files genai adds (`Policy::add_secret`, such as its own key file).
//!
//! # The project file
//!
//! `.genai/permissions.toml` under the project root has the same shape as `[permissions]`,
//! but a repository may only tighten: its deny and ask rules apply, its mode applies only when
//! stricter (`read-only` < `plan` < `ask` < `edit` < `full`), and its allow rules and a looser mode are
//! ignored, each with a note (`Policy::notes`). Saved "always" answers live in the user's
//! config folder, never in the repository (`project::SavedRules`).

mod mode;
pub mod project;
pub mod rules;

pub use mode::{Decision, Kind, Mode};

use std::path::PathBuf;
use std::sync::LazyLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use genai_base::error::{Error, ErrorKind, Result};
use rules::{command_parts, normalize_path, url_host, Rule, WORKSPACE};

/// A decision and what made it, for people: ``rule deny `X` (your config)``, `mode ask`,
/// `secret file: named by no rule`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The answer.
    pub decision: Decision,
    /// What decided it.
    pub by: String,
}

/// One tool call to decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The tool's full name: `workspace.read_file`, `SERVER.tool`, `MODULE.function`.
    pub tool: &'a str,
    /// What the call does.
    pub kind: Kind,
    /// The root-relative path (`.` for the root), the command line, the URL, or none.
    pub subject: Option<&'a str>,
}

/// A set of permission settings: `[permissions]` of the user's config, and the project file
/// `.genai/permissions.toml`.
#[derive(Deserialize, Serialize, JsonSchema, Default, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// `read-only`, `plan`, `ask` (the default), `edit` or `full`.
    pub(crate) mode: Option<Mode>,
    /// Rules of calls that run without asking: `TOOL` or `TOOL(PATTERN)`.
    #[serde(default)]
    pub(crate) allow: Vec<String>,
    /// Rules of calls that are always asked.
    #[serde(default)]
    pub(crate) ask: Vec<String>,
    /// Rules of calls that are refused.
    #[serde(default)]
    pub(crate) deny: Vec<String>,
    /// Whether the workspace's commands may use the network (default: no). Only the user's
    /// config can turn it on; a project file's `true` is ignored.
    #[serde(default)]
    pub network: bool,
}

/// Everything a policy is made of, loosest source last.
#[derive(Clone, Debug, Default)]
pub struct Layers {
    /// `[permissions]` of the user's config.
    pub user: PermissionsConfig,
    /// The project file and its settings, if the project has one (`project::load_project`).
    pub project: Option<(PathBuf, PermissionsConfig)>,
    /// The "always" answers saved for this project (`project::SavedRules::rules`).
    pub saved: Vec<String>,
    /// `--mode`.
    pub flag_mode: Option<Mode>,
    /// `--allow` rules.
    pub flag_allow: Vec<String>,
    /// `--deny` rules.
    pub flag_deny: Vec<String>,
}

/// Where a rule came from, as a verdict names it.
const FROM_USER: &str = "your config";
const FROM_SAVED: &str = "saved answer";
const FROM_FLAG_ALLOW: &str = "--allow";
const FROM_FLAG_DENY: &str = "--deny";

/// A rule and where it came from.
#[derive(Debug, Clone)]
struct Entry {
    rule: Rule,
    from: &'static str,
}

/// The permission policy of one session: the mode, the rules, and the secret files.
#[derive(Debug, Clone)]
pub struct Policy {
    mode: Mode,
    /// The project file's mode: no mode switch goes past it.
    ceiling: Option<Mode>,
    deny: Vec<Entry>,
    ask: Vec<Entry>,
    allow: Vec<Entry>,
    secrets: Vec<String>,
    notes: Vec<String>,
}

/// Parses `texts` as rules from `from`; a bad one is an error saying where it was: a usage
/// error when it came from a flag, a configuration error otherwise.
fn entries(texts: &[String], from: &'static str, place: &str) -> Result<Vec<Entry>> {
    let kind = match from {
        FROM_FLAG_ALLOW | FROM_FLAG_DENY => ErrorKind::InvalidParams,
        _ => ErrorKind::Config,
    };
    texts
        .iter()
        .map(|text| {
            Rule::parse(text)
                .map(|rule| Entry { rule, from })
                .map_err(|e| Error::new(kind, format!("{place}: {}", e.message)))
        })
        .collect()
}

impl Policy {
    /// The policy of these layers; a bad rule in any of them is an error naming it and where
    /// it was.
    pub fn new(layers: Layers) -> Result<Policy> {
        let mut notes = Vec::new();
        let mut mode = layers.flag_mode.or(layers.user.mode).unwrap_or_default();
        let project = project::PROJECT_FILE;
        let mut deny = entries(&layers.user.deny, FROM_USER, "[permissions] deny")?;
        let mut ask = entries(&layers.user.ask, FROM_USER, "[permissions] ask")?;
        let mut allow = entries(&layers.user.allow, FROM_USER, "[permissions] allow")?;
        if let Some((file, config)) = &layers.project {
            let place = file.display().to_string();
            deny.extend(entries(&config.deny, project, &place)?);
            ask.extend(entries(&config.ask, project, &place)?);
            match config.mode {
                Some(m) if m < mode => mode = m,
                Some(m) if m > mode => notes.push(format!(
                    "ignored: {project} sets mode `{m}`, but a project file can only tighten \
                     what your config allows (your mode is `{mode}`)"
                )),
                _ => {}
            }
            for rule in &config.allow {
                notes.push(format!(
                    "ignored: {project} allows `{rule}`, but a project file can only tighten \
                     what your config allows"
                ));
            }
        }
        allow.extend(entries(&layers.saved, FROM_SAVED, "saved answers")?);
        allow.extend(entries(&layers.flag_allow, FROM_FLAG_ALLOW, "--allow")?);
        deny.extend(entries(&layers.flag_deny, FROM_FLAG_DENY, "--deny")?);
        Ok(Policy {
            mode,
            ceiling: layers.project.as_ref().and_then(|(_, c)| c.mode),
            deny,
            ask,
            allow,
            secrets: Vec::new(),
            notes,
        })
    }

    /// The mode in force (after a stricter project mode).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Changes the mode (a client's mode switch); a project file's stricter mode still wins.
    /// Answers the mode in force.
    pub fn set_mode(&mut self, mode: Mode) -> Mode {
        self.mode = self.ceiling.map_or(mode, |c| mode.min(c));
        self.mode
    }

    /// What was ignored of the project file, one sentence each, to show the user once.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Makes one more root-relative path secret (genai's own key file when inside the root).
    pub fn add_secret(&mut self, path_relative: &str) {
        let path = normalize_path(path_relative);
        if !self.secrets.contains(&path) {
            self.secrets.push(path);
        }
    }

    /// Adds an "always" answer at once, so the running turn honours it; a bad rule is an
    /// error.
    pub fn add_saved(&mut self, rule: &str) -> Result<()> {
        let entry = entries(&[rule.to_string()], FROM_SAVED, "saved answer")?;
        self.allow.extend(entry);
        Ok(())
    }

    /// Whether a root-relative path is secret: by [`is_secret`] or added by
    /// [`Policy::add_secret`]. Tools that walk folders (`list`, `search`) skip such files.
    pub fn is_secret(&self, relative: &str) -> bool {
        let path = normalize_path(relative);
        is_secret(&path) || self.secrets.iter().any(|s| s.eq_ignore_ascii_case(&path))
    }

    /// Whether an allow or ask rule names this secret file for reading (`read_file(.env)`),
    /// so that the user may send it deliberately (`genai ask -f .env` with such a rule).
    pub fn names_secret(&self, relative: &str) -> bool {
        let tool = format!("{WORKSPACE}.read_file");
        self.ask
            .iter()
            .chain(&self.allow)
            .any(|e| e.rule.names_file(&tool, Kind::Read, Some(relative)))
    }

    /// Decides a call as [`Policy::decide`] does, in `at_most` when that mode is stricter than
    /// the policy's (a subagent's definition narrows, never widens).
    pub fn decide_within(&self, r: &Request, at_most: Option<Mode>) -> Verdict {
        // Modes are ordered strictest first.
        match at_most.filter(|m| *m < self.mode) {
            Some(m) => Policy {
                mode: m,
                ..self.clone()
            }
            .decide(r),
            None => self.decide(r),
        }
    }

    /// Decides a call: deny rules, then secret files, then ask rules, then allow rules, then
    /// the mode (see the module's documentation).
    pub fn decide(&self, r: &Request) -> Verdict {
        let parts: Vec<Option<&str>> = match (r.kind, r.subject) {
            (Kind::Execute, Some(command)) => {
                command_parts(command).into_iter().map(Some).collect()
            }
            (_, subject) => vec![subject],
        };
        let hits = |e: &&Entry| parts.iter().any(|p| e.rule.matches(r.tool, r.kind, *p));
        if let Some(e) = self.deny.iter().find(hits) {
            return by_rule(Decision::Deny, &[e]);
        }
        let secret = matches!(r.kind, Kind::Read | Kind::Edit)
            && r.subject.is_some_and(|path| self.is_secret(path));
        if secret {
            let named = self
                .ask
                .iter()
                .chain(&self.allow)
                .any(|e| e.rule.names_file(r.tool, r.kind, r.subject));
            if !named {
                return Verdict {
                    decision: Decision::Deny,
                    by: "secret file: named by no rule".to_string(),
                };
            }
        }
        if let Some(e) = self.ask.iter().find(hits) {
            return by_rule(Decision::Ask, &[e]);
        }
        // Every command of a chain must be allowed, each by some allow rule.
        let allowed: Option<Vec<&Entry>> = parts
            .iter()
            .map(|p| {
                self.allow
                    .iter()
                    .find(|e| e.rule.matches(r.tool, r.kind, *p))
            })
            .collect();
        if let Some(entries) = allowed {
            return by_rule(Decision::Allow, &entries);
        }
        let decision = self.mode.decide(r.kind);
        Verdict {
            decision,
            by: self.mode.verdict_by(decision),
        }
    }

    /// The rule an "allow always" answer to this call saves: for `run_command` the command's
    /// first word, and its second unless that is an option, then ` *`
    /// (`workspace.run_command(cargo test *)` for `cargo test --lib`); for edits and writes
    /// the file's folder (`workspace.edit_file(src/**)`; a file at the root: itself,
    /// `workspace.edit_file(/Cargo.toml)`); for `fetch` the URL's host
    /// (`workspace.fetch(domain:docs.rs)`); for anything else the bare tool name.
    pub fn always_rule(&self, r: &Request) -> String {
        let tool = r.tool;
        let Some(subject) = r.subject else {
            return tool.to_string();
        };
        match r.kind {
            Kind::Execute => {
                let first = command_parts(subject).into_iter().next().unwrap_or("");
                let mut words = first.split_whitespace();
                // A blank line or a glob as the program (a model's trick?) must not save a
                // rule covering every command: `?` is no wildcard, so such a rule stays narrow.
                let program = match words.next() {
                    Some(word) if !word.contains('*') => word.to_string(),
                    Some(word) => word.replace('*', "?"),
                    None => "?".to_string(),
                };
                match words.next() {
                    Some(second) if plain_word(second) => format!("{tool}({program} {second} *)"),
                    _ => format!("{tool}({program} *)"),
                }
            }
            Kind::Edit => {
                let path = normalize_path(subject);
                match path.rsplit_once('/') {
                    Some((folder, _)) => format!("{tool}({}/**)", globset::escape(folder)),
                    None => format!("{tool}(/{})", globset::escape(&path)),
                }
            }
            Kind::Fetch => match url_host(subject) {
                Some(host) => format!("{tool}(domain:{host})"),
                None => format!("{tool}({})", globset::escape(subject.trim())),
            },
            Kind::Read | Kind::Other { .. } => tool.to_string(),
        }
    }
}

/// A verdict naming the rules that made it.
fn by_rule(decision: Decision, entries: &[&Entry]) -> Verdict {
    let mut by: Vec<String> = Vec::new();
    for e in entries {
        let one = format!("`{}` ({})", e.rule.text(), e.from);
        if !by.contains(&one) {
            by.push(one);
        }
    }
    Verdict {
        decision,
        by: format!("rule {decision} {}", by.join(", ")),
    }
}

/// Whether a command's second word belongs in an "always" rule: a subcommand (`test`,
/// `status`), not an option, a quoted string or a glob.
fn plain_word(word: &str) -> bool {
    !word.starts_with('-')
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '+' | '@'))
}

/// The secret files, at any depth; `.env.*` is the pattern [`NOT_SECRET`] excepts from.
const SECRET_GLOBS: [&str; 20] = [
    "**/.env.*",
    "**/.env",
    "**/*.pem",
    "**/*.key",
    "**/id_rsa*",
    "**/id_ed25519*",
    "**/id_ecdsa*",
    "**/*.p12",
    "**/*.pfx",
    "**/.npmrc",
    "**/.pypirc",
    "**/.netrc",
    "**/credentials.json",
    "**/.git-credentials",
    "**/.ssh",
    "**/.ssh/**",
    "**/.aws",
    "**/.aws/**",
    "**/.gnupg",
    "**/.gnupg/**",
];

/// Examples of `.env` files, kept in repositories on purpose: not secret.
const NOT_SECRET: [&str; 3] = [".env.example", ".env.sample", ".env.template"];

static SECRETS: LazyLock<GlobSet> = LazyLock::new(|| {
    let mut set = GlobSetBuilder::new();
    for glob in SECRET_GLOBS {
        // The patterns are constants the tests compile: a failure here is a bug in this file.
        let glob = GlobBuilder::new(glob)
            .literal_separator(true)
            .case_insensitive(true)
            .build()
            .expect("secret glob");
        set.add(glob);
    }
    set.build().expect("secret globs")
});

/// Whether a root-relative path is a secret file (see the module's documentation), at any
/// depth, whatever its case.
pub fn is_secret(relative: &str) -> bool {
    let path = normalize_path(relative);
    let mut hits = SECRETS.matches(&path);
    let name = path.rsplit('/').next().unwrap_or(&path);
    if NOT_SECRET.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        hits.retain(|&i| i != 0);
    }
    !hits.is_empty()
}

#[cfg(test)]
mod tests;
