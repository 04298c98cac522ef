//! The project's permission file and the user's saved "always" answers.
//!
//! This module owns reading `ROOT/.genai/permissions.toml` and the one file, in genai's config
//! folder, that keeps every project's "always" answers keyed by the project root. It must never
//! write inside a project: answers belong to the user, and a cloned repository must not be able
//! to ship them. What the rules mean is [`super`]'s business.

use std::path::{Path, PathBuf};

use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table};

use super::rules::Rule;
use super::PermissionsConfig;
use genai_base::error::{Error, ErrorKind, Result};

/// Where a project keeps its permission settings, relative to its root.
pub(crate) const PROJECT_FILE: &str = ".genai/permissions.toml";

fn config_error(message: String) -> Error {
    Error::new(ErrorKind::Config, message)
}

/// Reads `ROOT/.genai/permissions.toml`: none when the project has no such file; a file that
/// is not valid is an error naming it and the line.
pub fn load_project(root: &Path) -> Result<Option<(PathBuf, PermissionsConfig)>> {
    let file = root.join(PROJECT_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(config_error(format!("cannot read {}: {e}", file.display()))),
    };
    let config: PermissionsConfig = toml::from_str(&text).map_err(|e| {
        let at = e.span().map(|span| {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            format!("line {line}: ")
        });
        config_error(format!(
            "{}: {}{} (the file takes `mode`, `allow`, `ask` and `deny`, as [permissions] in \
             your config)",
            file.display(),
            at.unwrap_or_default(),
            e.message()
        ))
    })?;
    Ok(Some((file, config)))
}

/// The "always" answers of every project, in one TOML file of the user's (the lead passes
/// `CONFIG_DIR/projects.toml`):
///
/// ```toml
/// [[project]]
/// root = "/home/me/src/genai"
/// allow = ["workspace.run_command(cargo test *)"]
/// ```
#[derive(Debug, Clone)]
pub struct SavedRules {
    file: PathBuf,
}

impl SavedRules {
    /// The saved answers kept in `file` (which need not exist yet).
    pub fn new(file: impl Into<PathBuf>) -> SavedRules {
        SavedRules { file: file.into() }
    }

    /// The rules saved for the project at `root`; none when the file or the project's entry
    /// does not exist.
    pub fn rules(&self, root: &Path) -> Result<Vec<String>> {
        let doc = self.read()?;
        let key = root_key(root);
        let Some(projects) = self.projects(&doc)? else {
            return Ok(Vec::new());
        };
        let Some(entry) = projects.iter().find(|t| is_root(t, &key)) else {
            return Ok(Vec::new());
        };
        match entry.get("allow") {
            None => Ok(Vec::new()),
            Some(item) => item
                .as_array()
                .and_then(|a| a.iter().map(|v| v.as_str().map(String::from)).collect())
                .ok_or_else(|| {
                    config_error(format!(
                        "{}: `allow` of the project {key} must be a list of rule strings",
                        self.file.display()
                    ))
                }),
        }
    }

    /// Saves `rule` for the project at `root`: creates the folders and the file, keeps the
    /// other projects' entries and the file's comments, adds nothing twice, and writes through
    /// a temporary file renamed over the old one. A bad rule is an error and is not saved.
    pub fn add(&self, root: &Path, rule: &str) -> Result<()> {
        let rule = Rule::parse(rule)?.text().to_string();
        let mut doc = self.read()?;
        let key = root_key(root);
        self.projects(&doc)?;
        let projects = doc
            .entry("project")
            .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
            .as_array_of_tables_mut()
            .ok_or_else(|| self.not_projects())?;
        let found = projects.iter().position(|t| is_root(t, &key));
        let at = match found {
            Some(at) => at,
            None => {
                let mut entry = Table::new();
                entry["root"] = toml_edit::value(key.as_str());
                entry["allow"] = toml_edit::value(Array::new());
                projects.push(entry);
                projects.len() - 1
            }
        };
        let Some(entry) = projects.get_mut(at) else {
            return Err(Error::internal("saved answers: the project entry vanished"));
        };
        let allow = entry
            .entry("allow")
            .or_insert_with(|| toml_edit::value(Array::new()))
            .as_array_mut()
            .ok_or_else(|| {
                config_error(format!(
                    "{}: `allow` of the project {key} must be a list of rule strings",
                    self.file.display()
                ))
            })?;
        if allow.iter().any(|v| v.as_str() == Some(rule.as_str())) {
            return Ok(());
        }
        allow.push(rule);
        self.write(&doc)
    }

    /// The file as a document; a missing file is the empty one.
    fn read(&self) -> Result<DocumentMut> {
        let text = match std::fs::read_to_string(&self.file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                return Err(config_error(format!(
                    "cannot read {}: {e}",
                    self.file.display()
                )))
            }
        };
        text.parse().map_err(|e| {
            config_error(format!(
                "{} is not valid TOML (fix or delete it; it holds your \"always\" answers): {e}",
                self.file.display()
            ))
        })
    }

    /// The `[[project]]` tables, if any; `project` of another shape is an error.
    fn projects<'d>(&self, doc: &'d DocumentMut) -> Result<Option<&'d ArrayOfTables>> {
        match doc.get("project") {
            None => Ok(None),
            Some(item) => item
                .as_array_of_tables()
                .map(Some)
                .ok_or_else(|| self.not_projects()),
        }
    }

    fn not_projects(&self) -> Error {
        config_error(format!(
            "{}: `project` must be [[project]] tables, each with `root` and `allow`",
            self.file.display()
        ))
    }

    /// Writes `doc` beside the file, then renames it over: a crash never leaves half a file.
    fn write(&self, doc: &DocumentMut) -> Result<()> {
        let cannot =
            |e: std::io::Error| config_error(format!("cannot write {}: {e}", self.file.display()));
        if let Some(dir) = self.file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| config_error(format!("cannot create {}: {e}", dir.display())))?;
        }
        let name = self
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "projects.toml".to_string());
        // A name of this process's own, so two genai processes never write the same file.
        let tmp = self.file.with_file_name(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            fastrand::u32(..)
        ));
        let written =
            std::fs::write(&tmp, doc.to_string()).and_then(|_| std::fs::rename(&tmp, &self.file));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(cannot(e));
        }
        Ok(())
    }
}

/// The key of a project: its root's absolute path, symbolic links resolved when it exists (so
/// two ways to one folder share its answers).
fn root_key(root: &Path) -> String {
    let absolute = std::fs::canonicalize(root)
        .or_else(|_| std::path::absolute(root))
        .unwrap_or_else(|_| root.to_path_buf());
    absolute.to_string_lossy().into_owned()
}

fn is_root(entry: &Table, key: &str) -> bool {
    entry.get("root").and_then(Item::as_str) == Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> tempfile::TempDir {
        match tempfile::tempdir() {
            Ok(d) => d,
            Err(e) => panic!("tempdir: {e}"),
        }
    }

    #[test]
    fn no_project_file_is_none() {
        let d = dir();
        assert!(matches!(load_project(d.path()), Ok(None)));
    }

    #[test]
    fn the_project_file_is_read() {
        let d = dir();
        std::fs::create_dir_all(d.path().join(".genai")).expect("mkdir");
        let text = "mode = \"read-only\"\ndeny = [\"fetch\"]\n";
        std::fs::write(d.path().join(PROJECT_FILE), text).expect("write");
        let (file, config) = load_project(d.path()).expect("load").expect("some");
        assert_eq!(file, d.path().join(PROJECT_FILE));
        assert_eq!(config.mode, Some(super::super::Mode::ReadOnly));
        assert_eq!(config.deny, ["fetch"]);
    }

    #[test]
    fn a_bad_project_file_names_the_file_and_line() {
        let d = dir();
        std::fs::create_dir_all(d.path().join(".genai")).expect("mkdir");
        let text = "deny = [\"fetch\"]\n\nalow = [\"x\"]\n";
        std::fs::write(d.path().join(PROJECT_FILE), text).expect("write");
        let e = load_project(d.path()).expect_err("bad file");
        assert!(
            e.message.contains("permissions.toml: line 3: "),
            "{}",
            e.message
        );
        assert!(e.message.contains("alow"), "{}", e.message);
    }

    #[test]
    fn saved_rules_round_trip_two_projects_and_keep_comments() {
        let d = dir();
        let file = d.path().join("config/genai/projects.toml");
        let saved = SavedRules::new(&file);
        let (one, two) = (d.path().join("one"), d.path().join("two"));
        std::fs::create_dir_all(&one).expect("mkdir");
        assert_eq!(saved.rules(&one).expect("rules"), Vec::<String>::new());

        saved.add(&one, "run_command(cargo test *)").expect("add");
        let text = std::fs::read_to_string(&file).expect("read");
        std::fs::write(&file, format!("# my answers, kept by hand\n{text}")).expect("write");
        saved
            .add(&two, "workspace.fetch(domain:docs.rs)")
            .expect("add");
        saved.add(&one, "workspace.edit_file(src/**)").expect("add");
        saved
            .add(&one, "run_command(cargo test *)")
            .expect("add again");

        assert_eq!(
            saved.rules(&one).expect("rules"),
            ["run_command(cargo test *)", "workspace.edit_file(src/**)"]
        );
        assert_eq!(
            saved.rules(&two).expect("rules"),
            ["workspace.fetch(domain:docs.rs)"]
        );
        let text = std::fs::read_to_string(&file).expect("read");
        assert!(text.starts_with("# my answers, kept by hand\n"), "{text}");
        assert_eq!(text.matches("[[project]]").count(), 2, "{text}");
        // No temporary file is left beside it.
        let left: Vec<_> = std::fs::read_dir(file.parent().expect("dir"))
            .expect("list")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn a_bad_rule_is_not_saved() {
        let d = dir();
        let saved = SavedRules::new(d.path().join("projects.toml"));
        let e = saved.add(d.path(), "run_command(").expect_err("bad rule");
        assert!(e.message.contains("`run_command(`"), "{}", e.message);
        assert!(!d.path().join("projects.toml").exists());
    }

    #[test]
    fn a_broken_saved_file_is_named() {
        let d = dir();
        let file = d.path().join("projects.toml");
        std::fs::write(&file, "project = 3\n").expect("write");
        let saved = SavedRules::new(&file);
        let e = saved.rules(d.path()).expect_err("bad shape");
        assert!(e.message.contains("projects.toml"), "{}", e.message);
        assert!(saved.add(d.path(), "fetch").is_err());
        std::fs::write(&file, "[[project]\n").expect("write");
        let e = saved.rules(d.path()).expect_err("bad toml");
        assert!(e.message.contains("not valid TOML"), "{}", e.message);
    }
}
