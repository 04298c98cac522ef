//! The guard's secrets: the values of the root's `.env` files, masked in every answer the
//! model gets, and the files a sandboxed command must read as empty.
//!
//! It owns what counts as such a value or file. It must never decide a call (the policy's
//! secret rules do) nor show a value anywhere.

use std::path::{Path, PathBuf};

use super::GuardHome;
use crate::workspace::Workspace;

/// The values of `KEY=VALUE` lines of the root's `.env*` files worth hiding (8 bytes or more).
pub(super) fn values(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut values = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !crate::permission::is_secret(&name) || !name.starts_with(".env") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        for line in text.lines() {
            let Some((_, value)) = line.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            if value.len() >= 8 {
                values.push(value.to_string());
            }
        }
    }
    values
}

/// What a command must not read: the secret files of the root (four levels deep), genai's own
/// (its keys, the serve token, the history) and checkpoints, and the user's SSH, AWS and GnuPG
/// folders.
pub(super) fn hidden(home: Option<&GuardHome>, ws: &Workspace) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    if let Ok(keys) = crate::secrets::key_file::path() {
        found.push(keys);
    }
    if let Some(home) = home {
        found.extend(home.own_secrets.iter().cloned());
        found.push(home.data_dir.join("checkpoints"));
    }
    if let Some(user) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        let user = PathBuf::from(user);
        for folder in [".ssh", ".aws", ".gnupg"] {
            found.push(user.join(folder));
        }
    }
    let walk = ignore::WalkBuilder::new(ws.root().path())
        .hidden(false)
        .git_ignore(false)
        .max_depth(Some(4))
        .build();
    for entry in walk.flatten().take(20_000) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let relative = ws.root().relative(entry.path());
        if crate::permission::is_secret(&relative) {
            found.push(entry.path().to_path_buf());
        }
    }
    found
}
