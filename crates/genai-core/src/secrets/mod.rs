//! Where API keys come from: the environment, the OS keyring (`os_keyring`), the key file
//! (`key_file`), a key command, the config file, in that order.
//!
//! This module owns [`Secret`], a string that never prints itself, and the order of lookups.
//! It must never log, format or return a key inside an error message.

use std::fmt;

use crate::error::{Error, ErrorKind, Result};

pub mod key_file;
pub mod os_keyring;

/// The serve token's file in the config folder (`genai serve` makes it).
pub const SERVE_TOKEN_FILE: &str = "serve-token";

/// genai's own files that hold secrets, never sent as context nor read by a tool: the key
/// file and the serve token (config folder), the serve's log (it holds the page's address
/// with the token) and the history's database files (data folder).
pub fn own_files(paths: &crate::config::Paths) -> Vec<std::path::PathBuf> {
    let history = paths.history_db();
    let beside = |suffix: &str| {
        let mut name = history.as_os_str().to_owned();
        name.push(suffix);
        std::path::PathBuf::from(name)
    };
    vec![
        paths.config_dir.join(key_file::FILE_NAME),
        paths.config_dir.join(SERVE_TOKEN_FILE),
        paths.data_dir.join("serve.log"),
        beside("-wal"),
        beside("-shm"),
        history,
    ]
}

/// A credential. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The key itself. Whatever uses it is remembered by the redactor first, so a provider
    /// that echoes it back never gets it printed.
    pub(crate) fn expose(&self) -> &str {
        crate::redact::remember(&self.0);
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(********)")
    }
}

/// Where to look for one provider instance's key.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeySource {
    /// The provider instance name: the keyring user.
    pub(crate) instance: String,
    /// The environment variable to read first.
    pub(crate) env_var: Option<String>,
    /// A shell command that prints the key.
    pub(crate) command: Option<String>,
    /// A key written in the config file.
    pub(crate) inline: Option<String>,
}

impl KeySource {
    /// Looks the key up: environment, keyring, key file, key command, config. `Ok(None)` when
    /// none has one. The key found is remembered by the redactor at once, so that no front-end prints it
    /// nor the history keeps it, even before it is sent.
    pub(crate) fn resolve(&self) -> Result<Option<Secret>> {
        let found = self.find()?;
        if let Some(key) = &found {
            crate::redact::remember(&key.0);
        }
        Ok(found)
    }

    fn find(&self) -> Result<Option<Secret>> {
        if let Some(var) = &self.env_var {
            if let Ok(v) = std::env::var(var) {
                if !v.trim().is_empty() {
                    return Ok(Some(Secret(v.trim().to_string())));
                }
            }
        }
        match keyring_get(&self.instance) {
            Ok(Some(k)) => return Ok(Some(k)),
            Ok(None) => {}
            Err(e) => tracing::debug!("keyring unavailable for {}: {}", self.instance, e),
        }
        if let Ok(path) = key_file::path() {
            if let Some(k) = key_file::get_in(&path, &self.instance)? {
                return Ok(Some(k));
            }
        }
        if let Some(cmd) = &self.command {
            return run_key_command(&self.instance, cmd).map(Some);
        }
        Ok(self.inline.clone().map(Secret))
    }

    /// Whether a source has a key, in the order of [`KeySource::resolve`], without running the
    /// key command (a set one counts) and without reading the key out. A keyring that does not
    /// answer has none.
    pub(crate) fn has_key(&self) -> bool {
        let set = |v: &Option<String>| v.as_ref().is_some_and(|v| !v.trim().is_empty());
        if self
            .env_var
            .as_ref()
            .is_some_and(|var| std::env::var(var).is_ok_and(|v| !v.trim().is_empty()))
            || set(&self.command)
            || set(&self.inline)
        {
            return true;
        }
        if let Ok(path) = key_file::path() {
            if key_file::names_in(&path).is_ok_and(|names| names.contains(&self.instance)) {
                return true;
            }
        }
        matches!(keyring_get(&self.instance), Ok(Some(_)))
    }
}

fn run_key_command(instance: &str, cmd: &str) -> Result<Secret> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env_clear()
        .envs(crate::process::minimal_env(&[]))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            Error::new(
                ErrorKind::MissingCredentials,
                format!("{instance}: cannot run api_key_cmd: {e}"),
            )
        })?;
    let key = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || key.is_empty() {
        return Err(Error::new(
            ErrorKind::MissingCredentials,
            format!(
                "{instance}: api_key_cmd failed ({}) or printed nothing",
                out.status
            ),
        ));
    }
    Ok(Secret(key))
}

/// Reads a key from the OS keyring; `Ok(None)` when there is none for this instance.
pub(crate) fn keyring_get(instance: &str) -> Result<Option<Secret>> {
    os_keyring::get(instance)
}

/// The environment variable of a plugin module's key: `GENAI_PLUGIN_<NAME>_KEY`, the name
/// upper-cased with every other character than a letter or digit made `_`.
pub fn plugin_key_env(module: &str) -> String {
    let name: String = module
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("GENAI_PLUGIN_{name}_KEY")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints() {
        let s = Secret::new("sk-abc");
        assert!(!format!("{s:?}").contains("sk-abc"));
    }

    #[test]
    fn a_plugin_key_variable_is_named_after_the_module() {
        assert_eq!(plugin_key_env("events"), "GENAI_PLUGIN_EVENTS_KEY");
        assert_eq!(
            plugin_key_env("my-tools.v2"),
            "GENAI_PLUGIN_MY_TOOLS_V2_KEY"
        );
    }

    #[test]
    fn key_command_is_used_and_failures_are_clear() {
        let src = KeySource {
            instance: "test-none-such-instance".into(),
            env_var: Some("GENAI_TEST_UNSET_VAR_XYZ".into()),
            command: Some("echo from-cmd".into()),
            inline: None,
        };
        assert_eq!(src.resolve().unwrap().unwrap().expose(), "from-cmd");
        let bad = KeySource {
            command: Some("exit 3".into()),
            ..src
        };
        let e = bad.resolve().unwrap_err();
        assert_eq!(e.kind, ErrorKind::MissingCredentials);
    }

    #[test]
    fn a_key_is_known_to_be_there_without_running_the_command() {
        let none = KeySource {
            instance: "test-none-such-instance".into(),
            env_var: Some("GENAI_TEST_UNSET_VAR_XYZ".into()),
            command: None,
            inline: None,
        };
        assert!(!none.has_key());
        let inline = KeySource {
            inline: Some("sk-inline".into()),
            ..none.clone()
        };
        assert!(inline.has_key());
        // A command is not run to list: one that would fail still counts as a source.
        let command = KeySource {
            command: Some("exit 3".into()),
            ..none.clone()
        };
        assert!(command.has_key());
        let blank = KeySource {
            inline: Some("  ".into()),
            ..none
        };
        assert!(!blank.has_key());
    }
}
