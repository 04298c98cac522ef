//! What a conversation that takes tools may do, put together when it opens: its root folder,
//! its permission policy (the config's `[permissions]`, the project's `.genai/permissions.toml`,
//! the saved "always" rules and the client's flags), its hooks, its workspace when the
//! selection names it, and the project's `AGENTS.md` files.
//!
//! It owns where those layers come from. It must never decide a call (the guard does) nor read
//! a rule's meaning (`crate::permission` does).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Framework;
use crate::error::{Error, Result};
use crate::feature::guard::{Guard, GuardHome, GuardSpec};
use crate::permission::project::{load_project, SavedRules};
use crate::permission::{Layers, Mode, Policy};
use crate::workspace::Workspace;

/// What the client says of permissions for one conversation (`--mode`, `--allow`, `--deny`,
/// or the same fields of `CreateConversation`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PermissionFlags {
    pub mode: Option<Mode>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

/// The most of the `AGENTS.md` files the system prompt carries.
const MAX_PROJECT_CONTEXT: usize = 32 * 1024;

/// The `AGENTS.md` files from the repository's top (the nearest folder above `root` holding
/// `.git`, else `root` itself) down to `root`, outermost first, as one text capped at
/// [`MAX_PROJECT_CONTEXT`]; and a line for the details naming them.
pub(crate) fn project_context(root: &Path) -> Option<(String, String)> {
    let top = root
        .ancestors()
        .find(|a| a.join(".git").exists())
        .unwrap_or(root);
    let mut folders: Vec<&Path> = root
        .ancestors()
        .take_while(|a| a.starts_with(top))
        .collect();
    folders.reverse();
    let mut text = String::new();
    let mut named = Vec::new();
    for folder in folders {
        let file = folder.join("AGENTS.md");
        let Ok(content) = std::fs::read_to_string(&file) else {
            continue;
        };
        let left = MAX_PROJECT_CONTEXT.saturating_sub(text.len());
        if left == 0 {
            named.push(format!("{} (left out: over the cap)", file.display()));
            continue;
        }
        let mut part = format!("## {}\n\n{}\n\n", file.display(), content.trim());
        let mut note = String::new();
        if part.len() > left {
            part.truncate(part.floor_char_boundary(left));
            note = format!(" (cut at {left} bytes)");
        }
        text.push_str(&part);
        named.push(format!("{}{note}", file.display()));
    }
    (!named.is_empty()).then(|| {
        (
            format!(
                "The project's instructions (AGENTS.md files, outermost first):\n\n{}",
                text.trim_end()
            ),
            format!("project context: {}", named.join(", ")),
        )
    })
}

impl Framework {
    /// Keeps a conversation's permission flags with it (nothing when there are none): a new
    /// one's, or those a client gives a stored one before reopening it (`genai ask -c --mode`).
    pub fn store_permissions(&self, id: &str, flags: &PermissionFlags) -> Result<()> {
        if *flags == PermissionFlags::default() {
            return Ok(());
        }
        let json = serde_json::to_value(flags)
            .map_err(|e| Error::internal(format!("cannot keep the permission flags: {e}")))?;
        self.history.set_permissions(id, &json)
    }

    /// Changes the permission mode of an open conversation that takes tools, and keeps it
    /// with the conversation; answers the mode in force (a project file may hold it lower).
    pub fn set_permission_mode(&self, id: &str, mode: Mode) -> Result<Mode> {
        let guard = self
            .running
            .conversation(id, |c| c.guard.clone())?
            .ok_or_else(|| super::unknown_conversation(id))?
            .ok_or_else(|| {
                Error::invalid_params(format!(
                    "conversation {id} calls no tools, so it has no permission mode"
                ))
            })?;
        let now = guard.set_mode(mode);
        let mut flags = self.stored_permissions(id);
        flags.mode = Some(mode);
        self.store_permissions(id, &flags)?;
        Ok(now)
    }

    /// The permission mode of an open conversation that takes tools.
    pub fn permission_mode(&self, id: &str) -> Option<Mode> {
        let mode = |c: &super::conversation::Conversation| c.guard.as_ref().map(|g| g.mode());
        self.running.conversation(id, mode).ok()??
    }

    /// The permission flags a stored conversation was opened with (none when it has none,
    /// or when they cannot be read: the config's then apply, and the log says why).
    pub(super) fn stored_permissions(&self, id: &str) -> PermissionFlags {
        match self.history.permissions(id) {
            Ok(Some(v)) => serde_json::from_value(v).unwrap_or_else(|e| {
                tracing::warn!("the stored permission flags of {id} are unreadable: {e}");
                PermissionFlags::default()
            }),
            Ok(None) => PermissionFlags::default(),
            Err(e) => {
                tracing::warn!("cannot read the permission flags of {id}: {}", e.message);
                PermissionFlags::default()
            }
        }
    }

    /// Where checkpoints and saved rules live (the front-ends give genai's paths; without
    /// them, files are not changed, for want of a checkpoint).
    pub fn with_home(mut self, paths: &crate::config::Paths) -> Framework {
        self.home = Some(GuardHome {
            data_dir: paths.data_dir.clone(),
            own_secrets: crate::secrets::own_files(paths),
            saved_rules: paths.config_dir.join("projects.toml"),
            checkpoints: self.config.checkpoints.clone(),
        });
        self
    }

    /// genai's own secret files: the home's (`with_home`), else the key file alone.
    pub(super) fn own_secrets(&self) -> Vec<PathBuf> {
        match &self.home {
            Some(home) => home.own_secrets.clone(),
            None => crate::secrets::key_file::path().into_iter().collect(),
        }
    }

    /// The secret files a client's attached or linked files may not be (`.env`, keys, genai's
    /// own), unless a rule of the config's `[permissions]` names them.
    pub fn context_secrets(&self) -> Result<crate::context_files::Secrets> {
        crate::context_files::Secrets::of(self.own_secrets(), &self.config.permissions, &[], &[])
    }

    /// The checkpoint store of genai's data folder.
    fn checkpoint_store(&self) -> Result<crate::checkpoint::Checkpoints> {
        let home = self.home.as_ref().ok_or_else(|| {
            Error::internal(
                "this genai keeps no checkpoints (it was started without a data folder)",
            )
        })?;
        crate::checkpoint::Checkpoints::open(&home.data_dir)
    }

    /// Puts back the files one turn's tools changed (`genai undo`, `Undo`, `/undo`); a
    /// conversation named by a unique prefix of its id is found in the history.
    pub fn undo(
        &self,
        mut target: crate::checkpoint::UndoTarget,
        force: bool,
    ) -> Result<crate::checkpoint::Undone> {
        if let Some(c) = &target.conversation {
            target.conversation = Some(self.resolve_conversation(c).unwrap_or_else(|_| c.clone()));
        }
        self.checkpoint_store()?.undo(target, force)
    }

    /// [`Framework::undo`] of files a client's editor holds (ACP's `/undo`).
    pub async fn undo_through(
        &self,
        mut target: crate::checkpoint::UndoTarget,
        force: bool,
        holder: &dyn crate::checkpoint::Holder,
    ) -> Result<crate::checkpoint::Undone> {
        if let Some(c) = &target.conversation {
            target.conversation = Some(self.resolve_conversation(c).unwrap_or_else(|_| c.clone()));
        }
        self.checkpoint_store()?
            .undo_through(target, force, holder)
            .await
    }

    /// The turns whose tools changed files, newest first.
    pub fn checkpoints(
        &self,
        conversation: Option<&str>,
        limit: usize,
    ) -> Result<Vec<crate::checkpoint::TurnChanges>> {
        let conversation = conversation.map(|c| {
            self.resolve_conversation(c)
                .unwrap_or_else(|_| c.to_string())
        });
        self.checkpoint_store()?
            .list(conversation.as_deref(), limit)
    }

    /// The guard of a conversation that takes tools: `cwd` is its root (else the process's
    /// working directory), `tools` its selection.
    pub(super) fn guard(
        &self,
        cwd: Option<&str>,
        tools: Option<&[String]>,
        flags: &PermissionFlags,
    ) -> Result<Arc<Guard>> {
        let root: PathBuf = match cwd {
            Some(c) => PathBuf::from(c),
            None => std::env::current_dir()
                .map_err(|e| Error::internal(format!("cannot tell the working directory: {e}")))?,
        };
        let wants_workspace =
            tools.is_some_and(|t| t.iter().any(|n| crate::feature::tools::is_workspace(n)));
        let mut notes = Vec::new();
        // A folder that cannot be the root leaves the conversation without the workspace's
        // tools, and says why, rather than without the conversation.
        let workspace = match wants_workspace.then(|| Workspace::new(&root)) {
            Some(Ok(w)) => Some(Arc::new(w)),
            Some(Err(e)) => {
                notes.push(format!("the workspace tools are off: {}", e.message));
                None
            }
            None => None,
        };
        let root = workspace
            .as_ref()
            .map_or(root, |w| w.root().path().to_path_buf());
        let saved = match &self.home {
            Some(home) => SavedRules::new(home.saved_rules.clone()).rules(&root)?,
            None => Vec::new(),
        };
        let mut policy = Policy::new(Layers {
            user: self.config.permissions.clone(),
            project: load_project(&root)?,
            saved,
            flag_mode: flags.mode,
            flag_allow: flags.allow.clone(),
            flag_deny: flags.deny.clone(),
        })?;
        for file in self.own_secrets() {
            if let Ok(relative) = file.strip_prefix(&root) {
                policy.add_secret(&relative.to_string_lossy());
            }
        }
        let context = if workspace.is_some() {
            project_context(&root).map(|(text, note)| {
                notes.push(note);
                text
            })
        } else {
            None
        };
        Ok(Arc::new(Guard::new(GuardSpec {
            root,
            workspace,
            policy,
            hooks: self.config.hooks.clone(),
            home: self.home.clone(),
            network: self.config.permissions.network,
            notes,
            context,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_files_from_the_repository_top_down_to_the_root_are_named_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("repo");
        let sub = top.join("crates/a");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir(top.join(".git")).unwrap();
        // Above the repository: never read.
        std::fs::write(dir.path().join("AGENTS.md"), "outside").unwrap();
        std::fs::write(top.join("AGENTS.md"), "top rules").unwrap();
        std::fs::write(sub.join("AGENTS.md"), "crate rules").unwrap();
        let (text, note) = project_context(&sub).unwrap();
        assert!(!text.contains("outside"), "{text}");
        let (at_top, at_sub) = (
            text.find("top rules").unwrap(),
            text.find("crate rules").unwrap(),
        );
        assert!(at_top < at_sub, "{text}");
        assert!(
            note.contains("repo/AGENTS.md") && note.contains("crates/a/AGENTS.md"),
            "{note}"
        );

        std::fs::write(sub.join("AGENTS.md"), "x".repeat(MAX_PROJECT_CONTEXT * 2)).unwrap();
        let (text, note) = project_context(&sub).unwrap();
        assert!(text.len() <= MAX_PROJECT_CONTEXT + 200, "{}", text.len());
        assert!(note.contains("cut at"), "{note}");

        let bare = tempfile::tempdir().unwrap();
        assert!(project_context(bare.path()).is_none());
    }
}
