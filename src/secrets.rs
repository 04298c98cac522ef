//! Where API keys come from: the environment, the OS keyring, a key command, the config file.
//!
//! This module owns [`Secret`], a string that never prints itself. It must never log, format
//! or return a key inside an error message.

use std::fmt;

use crate::error::{Error, ErrorKind, Result};

/// The keyring service name under which every key is stored (user = provider instance name).
pub const KEYRING_SERVICE: &str = "genai";

/// A credential. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The key itself. Whatever uses it is remembered by the redactor first, so a provider
    /// that echoes it back never gets it printed.
    pub fn expose(&self) -> &str {
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
pub struct KeySource {
    /// The provider instance name: the keyring user.
    pub instance: String,
    /// The environment variable to read first.
    pub env_var: Option<String>,
    /// A shell command that prints the key.
    pub command: Option<String>,
    /// A key written in the config file.
    pub inline: Option<String>,
}

impl KeySource {
    /// Looks the key up: environment, keyring, key command, config. `Ok(None)` when none has one.
    pub fn resolve(&self) -> Result<Option<Secret>> {
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
        if let Some(cmd) = &self.command {
            return run_key_command(&self.instance, cmd).map(Some);
        }
        Ok(self.inline.clone().map(Secret))
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

fn keyring_entry(instance: &str) -> Result<keyring::Entry> {
    keyring::Entry::new(KEYRING_SERVICE, instance).map_err(keyring_error)
}

fn keyring_error(e: keyring::Error) -> Error {
    Error::new(
        ErrorKind::MissingCredentials,
        format!(
            "no usable OS keyring here ({e}); set the provider's environment variable (such as OPENAI_API_KEY) or `api_key_cmd` in the config instead"
        ),
    )
}

/// Reads a key from the OS keyring; `Ok(None)` when there is none for this instance.
pub fn keyring_get(instance: &str) -> Result<Option<Secret>> {
    match keyring_entry(instance)?.get_password() {
        Ok(k) => Ok(Some(Secret(k))),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(keyring_error(e)),
    }
}

/// Stores a key in the OS keyring.
pub fn keyring_set(instance: &str, key: &Secret) -> Result<()> {
    keyring_entry(instance)?
        .set_password(key.expose())
        .map_err(|e| match e {
            // keyutils answers "no entry" when the process has no session keyring to write to.
            keyring::Error::NoEntry => keyring_error(keyring::Error::NoStorageAccess(
                "no session keyring is attached to this login".into(),
            )),
            e => keyring_error(e),
        })
}

/// Removes a key from the OS keyring; `Ok(false)` when there was none.
pub fn keyring_delete(instance: &str) -> Result<bool> {
    match keyring_entry(instance)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(keyring_error(e)),
    }
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
}
