//! The folders `genai serve`'s WebSocket clients may root a conversation in (`[serve] roots`,
//! default the folder the serve was started in), and the check of a folder a client names: `~`
//! expanded, relative to the default root, then canonical (`..` and symbolic links resolved)
//! and inside one of them, else an invalid-params error that names them. It owns that policy
//! only: where it applies is `connection.rs`'s (`confine`), and it must never let a folder
//! through uncanonicalised, nor limit the stdio daemon.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::protocol::WorkspaceRoots;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::session::Framework;

/// The allowed folders, canonical, and the default root among them.
#[derive(Debug, Clone)]
pub struct Roots {
    allowed: Vec<PathBuf>,
    default: PathBuf,
    home: Option<PathBuf>,
}

impl Roots {
    /// From `[serve] roots` (none: `started_in` alone) and the folder the serve was started in,
    /// which is the default root when it lies inside them (else the first of them is). A
    /// configured folder that does not exist is left out with a warning; none at all is an
    /// error.
    pub fn new(configured: &[String], started_in: &Path, home: Option<&Path>) -> Result<Roots> {
        let started = canonical_folder(started_in).map_err(|why| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "the folder genai serve was started in, {}: {why}",
                    started_in.display()
                ),
            )
        })?;
        let mut allowed = Vec::new();
        for text in configured {
            let folder = expand_home(text.trim(), home)?;
            match canonical_folder(&folder) {
                Ok(found) => {
                    if !allowed.contains(&found) {
                        allowed.push(found);
                    }
                }
                Err(why) => tracing::warn!("serve.roots: {text} is left out: {why}"),
            }
        }
        if configured.is_empty() {
            allowed.push(started.clone());
        } else if allowed.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "serve.roots: none of {} is a folder here: a conversation of genai serve would have nowhere to work",
                    configured.join(", ")
                ),
            ));
        }
        let default = if inside(&started, &allowed) {
            started
        } else {
            allowed[0].clone()
        };
        Ok(Roots {
            allowed,
            default,
            home: home.map(Path::to_path_buf),
        })
    }

    /// Where a conversation works when its client names no folder.
    pub fn default_root(&self) -> &Path {
        &self.default
    }

    #[cfg(test)]
    pub(crate) fn allowed(&self) -> &[PathBuf] {
        &self.allowed
    }

    /// What `Initialize` tells a WebSocket client.
    pub fn shown(&self) -> WorkspaceRoots {
        WorkspaceRoots {
            default: self.default.display().to_string(),
            allowed: self
                .allowed
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
        }
    }

    /// The folder a client named (its `cwd`), canonical, when it lies inside an allowed one.
    pub(crate) fn admit(&self, asked: &str) -> Result<PathBuf> {
        if asked.trim().is_empty() {
            return Err(Error::invalid_params(format!(
                "`cwd` is empty: name a folder inside {}",
                self.listed()
            )));
        }
        let expanded = expand_home(asked, self.home.as_deref())
            .map_err(|e| Error::invalid_params(format!("`cwd` {asked}: {}", e.message)))?;
        let folder = self.default.join(expanded);
        let found = canonical_folder(&folder).map_err(|why| {
            Error::invalid_params(format!(
                "`cwd` {asked}: {why} (genai serve allows folders inside {})",
                self.listed()
            ))
        })?;
        if !inside(&found, &self.allowed) {
            let resolved = if Path::new(asked) == found {
                String::new()
            } else {
                format!(" (that is {})", found.display())
            };
            return Err(Error::invalid_params(format!(
                "`cwd` {asked}{resolved} is outside the folders genai serve lets conversations work in: {}; choose a folder inside one of them, or add it to `[serve] roots` in the serve's config",
                self.listed()
            )));
        }
        Ok(found)
    }

    /// Whether a stored root (canonical when genai serve stored it; a relative one is taken
    /// from the serve's working folder, as the conversation's tools take it) lies inside an
    /// allowed folder once resolved; a folder that is gone does not.
    pub(crate) fn holds(&self, stored: &Path) -> bool {
        canonical_folder(stored).is_ok_and(|p| inside(&p, &self.allowed))
    }

    /// The allowed folders, for messages.
    fn listed(&self) -> String {
        let all: Vec<String> = self
            .allowed
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        all.join(", ")
    }

    /// Checks (and fills in) the folder a WebSocket request works in, before it is dispatched:
    /// `CreateConversation` and `ListCommands` get their `cwd` admitted, or the default root;
    /// `RunCommand` too, except in a conversation without `cwd` (whose stored root must lie
    /// inside); `ResumeConversation` of a conversation with tools needs its stored root inside.
    pub(crate) fn confine(&self, fw: &Framework, method: &str, params: &mut Value) -> Result<()> {
        match method {
            "CreateConversation" | "ListCommands" | "RunCommand" => {}
            "ResumeConversation" => return self.resumable(fw, params),
            _ => return Ok(()),
        }
        if params.is_null() {
            *params = Value::Object(Default::default());
        }
        let Some(obj) = params.as_object_mut() else {
            // Not an object: the method's own decoding says what is wrong.
            return Ok(());
        };
        let folder = match obj.get("cwd") {
            Some(Value::String(asked)) => self.admit(asked)?,
            Some(Value::Null) | None => {
                let conversation = obj.get("conversationId").and_then(Value::as_str);
                if let (true, Some(id)) = (method == "RunCommand", conversation) {
                    return self.stored_root_inside(fw, id, "run a command in");
                }
                self.default.clone()
            }
            // Not a string: the method's own decoding says what is wrong.
            Some(_) => return Ok(()),
        };
        obj.insert("cwd".into(), Value::String(folder.display().to_string()));
        Ok(())
    }

    /// `ResumeConversation`: a conversation with tools works in its stored root (none: the
    /// serve's own folder), which must lie inside.
    fn resumable(&self, fw: &Framework, params: &Value) -> Result<()> {
        let Some(id) = params.get("conversationId").and_then(Value::as_str) else {
            return Ok(());
        };
        let Ok(id) = fw.resolve_conversation(id) else {
            return Ok(());
        };
        let Some(rec) = fw.history().conversation(&id)? else {
            return Ok(());
        };
        let takes_tools = genai_core::feature::builtin(&rec.feature).is_some_and(|b| b.takes_tools);
        if !takes_tools {
            return Ok(());
        }
        self.stored_root_inside(fw, &id, "resume")
    }

    /// Refuses when the stored root of conversation `id` lies outside (a conversation with no
    /// stored root works in the serve's own folder).
    fn stored_root_inside(&self, fw: &Framework, id: &str, doing: &str) -> Result<()> {
        let Ok(id) = fw.resolve_conversation(id) else {
            // Unknown: the method itself says so.
            return Ok(());
        };
        let root = match fw.conversation_cwd(&id) {
            Some(root) => root,
            None => std::env::current_dir().map_err(|e| {
                Error::internal(format!("cannot tell the serve's working folder: {e}"))
            })?,
        };
        if self.holds(&root) {
            return Ok(());
        }
        Err(Error::invalid_params(format!(
            "conversation {id} works in {}, outside the folders genai serve lets conversations work in: {}; cannot {doing} it here (add its folder to `[serve] roots` in the serve's config)",
            root.display(),
            self.listed()
        )))
    }
}

/// `text` with a leading `~` (alone or before `/`) replaced by the home folder.
pub(crate) fn expand_home(text: &str, home: Option<&Path>) -> Result<PathBuf> {
    let rest = match text.strip_prefix('~') {
        None => return Ok(PathBuf::from(text)),
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.trim_start_matches('/'),
        // `~user`: another user's home is not looked up.
        Some(_) => return Ok(PathBuf::from(text)),
    };
    let home = home.ok_or_else(|| {
        Error::new(
            ErrorKind::Config,
            format!("{text}: no home folder to expand `~` to (HOME is not set)"),
        )
    })?;
    Ok(if rest.is_empty() {
        home.to_path_buf()
    } else {
        home.join(rest)
    })
}

/// The home folder `~` stands for: `HOME`, else the account's.
pub fn home_folder() -> Option<PathBuf> {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => Some(PathBuf::from(h)),
        _ => dirs::home_dir(),
    }
}

/// `path` with `..` and symbolic links resolved, when it is an existing folder; else why not.
fn canonical_folder(path: &Path) -> std::result::Result<PathBuf, String> {
    let found = path.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no such folder".to_string(),
        _ => format!("cannot be read ({e})"),
    })?;
    if !found.is_dir() {
        return Err("not a folder".into());
    }
    Ok(found)
}

/// Whether the canonical `path` is one of `allowed` or below one (whole components compared:
/// `/srv/repos2` is not inside `/srv/repos`).
fn inside(path: &Path, allowed: &[PathBuf]) -> bool {
    allowed.iter().any(|root| path.starts_with(root))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use genai_core::session::ConversationSpec;

    /// A temporary tree: `a/sub`, `b`, `repos`, `repos2`, `home/projects/site`, the file
    /// `a/file.txt`, and links `a/out` → `b` (an escape) and `b/in` → `a/sub`.
    struct Tree {
        dir: tempfile::TempDir,
    }

    impl Tree {
        fn new() -> Tree {
            let dir = tempfile::tempdir().unwrap();
            for d in ["a/sub", "b", "repos", "repos2", "home/projects/site"] {
                std::fs::create_dir_all(dir.path().join(d)).unwrap();
            }
            std::fs::write(dir.path().join("a/file.txt"), "x").unwrap();
            #[cfg(unix)]
            {
                std::os::unix::fs::symlink(dir.path().join("b"), dir.path().join("a/out")).unwrap();
                std::os::unix::fs::symlink(dir.path().join("a/sub"), dir.path().join("b/in"))
                    .unwrap();
            }
            Tree { dir }
        }

        /// `rel` in the tree, canonical (the temporary folder may itself be behind a link).
        fn at(&self, rel: &str) -> PathBuf {
            self.dir.path().canonicalize().unwrap().join(rel)
        }

        fn text(&self, rel: &str) -> String {
            self.at(rel).display().to_string()
        }

        fn home(&self) -> PathBuf {
            self.at("home")
        }

        /// `[serve] roots` of these folders, the serve started in `started`.
        fn roots(&self, configured: &[&str], started: &str) -> Roots {
            let configured: Vec<String> = configured.iter().map(|c| c.to_string()).collect();
            Roots::new(&configured, &self.at(started), Some(&self.home())).unwrap()
        }
    }

    #[track_caller]
    fn refused(roots: &Roots, asked: &str, says: &[&str]) {
        let e = roots.admit(asked).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidParams, "{}", e.message);
        for s in says {
            assert!(
                e.message.contains(s),
                "{asked}: {:?} lacks {s:?}",
                e.message
            );
        }
    }

    #[test]
    fn without_roots_the_folder_the_serve_started_in_is_the_only_one_and_the_default() {
        let t = Tree::new();
        let roots = t.roots(&[], "a");
        assert_eq!(roots.allowed(), [t.at("a")]);
        assert_eq!(roots.default_root(), t.at("a"));
        let shown = serde_json::to_value(roots.shown()).unwrap();
        assert_eq!(
            shown,
            json!({"default": t.text("a"), "allowed": [t.text("a")]})
        );
    }

    #[test]
    fn a_folder_inside_is_admitted_canonical_and_a_relative_one_is_taken_from_the_default() {
        let t = Tree::new();
        let roots = t.roots(&[], "a");
        assert_eq!(roots.admit(&t.text("a")).unwrap(), t.at("a"));
        assert_eq!(roots.admit(&t.text("a/sub")).unwrap(), t.at("a/sub"));
        assert_eq!(roots.admit("sub").unwrap(), t.at("a/sub"));
        assert_eq!(roots.admit(&t.text("a/sub/..")).unwrap(), t.at("a"));
    }

    #[test]
    fn a_folder_outside_is_refused_naming_the_allowed_folders() {
        let t = Tree::new();
        let roots = t.roots(&[&t.text("a"), &t.text("repos")], "a");
        refused(
            &roots,
            &t.text("b"),
            &["outside", &t.text("a"), &t.text("repos"), "[serve] roots"],
        );
        // A sibling whose name begins the same is not inside.
        refused(&roots, &t.text("repos2"), &["outside"]);
        assert_eq!(roots.admit(&t.text("repos")).unwrap(), t.at("repos"));
    }

    #[test]
    fn dot_dot_cannot_climb_out() {
        let t = Tree::new();
        let roots = t.roots(&[], "a");
        let asked = format!("{}/../b", t.text("a"));
        refused(
            &roots,
            &asked,
            &["outside", &format!("that is {}", t.text("b"))],
        );
        refused(&roots, "../b", &["outside"]);
        refused(&roots, "..", &["outside"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_judged_by_where_it_leads() {
        let t = Tree::new();
        let roots = t.roots(&[], "a");
        refused(&roots, &t.text("a/out"), &["outside", &t.text("b")]);
        refused(&roots, "out", &["outside"]);
        // From outside, a link into an allowed folder leads inside.
        assert_eq!(roots.admit(&t.text("b/in")).unwrap(), t.at("a/sub"));
    }

    #[test]
    fn tilde_is_the_home_folder_in_the_config_and_in_a_client_folder() {
        let t = Tree::new();
        let roots = t.roots(&["~/projects"], "b");
        assert_eq!(roots.allowed(), [t.at("home/projects")]);
        // The serve started outside them: the first allowed folder is the default.
        assert_eq!(roots.default_root(), t.at("home/projects"));
        assert_eq!(
            roots.admit("~/projects/site").unwrap(),
            t.at("home/projects/site")
        );
        refused(&roots, "~", &["outside", &t.text("home")]);
        let everything = t.roots(&["~"], "home/projects/site");
        assert_eq!(everything.default_root(), t.at("home/projects/site"));
        assert_eq!(everything.admit("~").unwrap(), t.at("home"));
        assert_eq!(
            expand_home("~", Some(Path::new("/h"))).unwrap(),
            PathBuf::from("/h")
        );
        assert_eq!(
            expand_home("~other/x", Some(Path::new("/h"))).unwrap(),
            PathBuf::from("~other/x")
        );
        assert!(expand_home("~/x", None).is_err());
    }

    #[test]
    fn missing_files_and_empty_folders_are_refused_clearly() {
        let t = Tree::new();
        let roots = t.roots(&[], "a");
        refused(&roots, &t.text("a/nope"), &["no such folder", &t.text("a")]);
        refused(&roots, &t.text("a/file.txt"), &["not a folder"]);
        refused(&roots, " ", &["empty"]);
    }

    #[test]
    fn configured_folders_that_are_gone_are_left_out_and_none_at_all_is_an_error() {
        let t = Tree::new();
        let roots = t.roots(&["~/gone", &t.text("repos")], "a");
        assert_eq!(roots.allowed(), [t.at("repos")]);
        let e = Roots::new(&["~/gone".into()], &t.at("a"), Some(&t.home())).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Config);
        assert!(e.message.contains("serve.roots"), "{}", e.message);
    }

    #[test]
    fn confine_fills_in_the_default_root_and_checks_the_folders_of_requests() {
        let t = Tree::new();
        let roots = t.roots(&[], "a");
        let (fw, _) = genai_core::session::scripted(Vec::new());
        let mut p = json!({"feature": "assistant"});
        roots.confine(&fw, "CreateConversation", &mut p).unwrap();
        assert_eq!(p["cwd"], t.text("a"));
        let mut p = Value::Null;
        roots.confine(&fw, "ListCommands", &mut p).unwrap();
        assert_eq!(p["cwd"], t.text("a"));
        let mut p = json!({"name": "x", "cwd": "sub"});
        roots.confine(&fw, "RunCommand", &mut p).unwrap();
        assert_eq!(p["cwd"], t.text("a/sub"));
        let mut p = json!({"cwd": t.text("b")});
        let e = roots
            .confine(&fw, "CreateConversation", &mut p)
            .unwrap_err();
        assert!(e.message.contains("outside"), "{}", e.message);
        // Other methods, and params of the wrong shape, are left to the method.
        let mut p = json!({"cwd": t.text("b")});
        roots.confine(&fw, "ListConversations", &mut p).unwrap();
        let mut p = json!({"cwd": 7});
        roots.confine(&fw, "CreateConversation", &mut p).unwrap();
        assert_eq!(p["cwd"], 7);
    }

    #[tokio::test]
    async fn a_stored_conversation_with_tools_outside_cannot_be_resumed_nor_run_a_command() {
        let t = Tree::new();
        let roots = t.roots(&[], "a");
        let (fw, _) = genai_core::session::scripted(Vec::new());
        let (tx, _out) = genai_peer::Outbox::new(genai_peer::outbox::DEFAULT_LIMIT);
        let peer = Arc::new(genai_peer::Peer::new(tx));
        let port = Arc::new(crate::port::RpcPort::new(peer));
        let open = |cwd: &str, feature: &str| {
            let spec = ConversationSpec {
                model: genai_core::select::ModelChoice::Named("scripted".into()),
                feature: Some(feature.into()),
                cwd: Some(cwd.into()),
                ..Default::default()
            };
            // Left open: closed with no turn, it would be deleted. Its stored row is judged.
            fw.create_conversation(spec, port.clone())
                .unwrap()
                .conversation_id
        };
        let outside = open(&t.text("b"), "tools");
        let inside = open(&t.text("a/sub"), "tools");
        let chat = open(&t.text("b"), "assistant");
        let resume = |id: &str| {
            let mut p = json!({"conversationId": id});
            roots.confine(&fw, "ResumeConversation", &mut p)
        };
        let e = resume(&outside).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidParams);
        assert!(
            e.message.contains(&t.text("b")) && e.message.contains("cannot resume"),
            "{}",
            e.message
        );
        resume(&inside).unwrap();
        // A conversation without tools works in no folder: it resumes.
        resume(&chat).unwrap();
        let mut p = json!({"name": "x", "conversationId": chat});
        let e = roots.confine(&fw, "RunCommand", &mut p).unwrap_err();
        assert!(
            e.message.contains("cannot run a command in"),
            "{}",
            e.message
        );
        let mut p = json!({"name": "x", "conversationId": inside});
        roots.confine(&fw, "RunCommand", &mut p).unwrap();
        assert!(
            p.get("cwd").is_none(),
            "the conversation's own root is kept: {p}"
        );
    }
}
