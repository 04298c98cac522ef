//! The OS keyring (service `genai`, user = the key's name) on its persistent backend: the
//! Secret Service on Linux and the BSDs (GNOME Keyring, KWallet), the macOS Keychain, the
//! Windows Credential Manager. On Linux the kernel keyring (keyutils, forgotten at logout) is
//! the fallback when no Secret Service answers on the session bus.
//!
//! It owns choosing the backend and turning its failures into one readable error. It must
//! never put a key in an error or a log line.

use super::Secret;
use crate::error::{Error, ErrorKind, Result};

/// The keyring service name under which every key is stored (user = provider instance name).
pub const KEYRING_SERVICE: &str = "genai";

/// One keyring backend of this machine, in the order they are tried.
struct Backend {
    /// Its name for people, as `genai keys` reports where a key went.
    name: &'static str,
    entry: std::result::Result<keyring::Entry, keyring::Error>,
}

#[cfg(target_os = "linux")]
fn backends(user: &str) -> Vec<Backend> {
    use keyring::keyutils::KeyutilsCredential;
    use keyring::secret_service::SsCredential;
    vec![
        Backend {
            name: "the Secret Service keyring",
            entry: SsCredential::new_with_target(None, KEYRING_SERVICE, user)
                .map(|c| keyring::Entry::new_with_credential(Box::new(c))),
        },
        Backend {
            name: "the kernel keyring (forgotten at logout)",
            entry: KeyutilsCredential::new_with_target(None, KEYRING_SERVICE, user)
                .map(|c| keyring::Entry::new_with_credential(Box::new(c))),
        },
    ]
}

#[cfg(not(target_os = "linux"))]
fn backends(user: &str) -> Vec<Backend> {
    let name = if cfg!(target_os = "macos") {
        "the macOS Keychain"
    } else if cfg!(windows) {
        "the Windows Credential Manager"
    } else {
        "the OS keyring"
    };
    vec![Backend {
        name,
        entry: keyring::Entry::new(KEYRING_SERVICE, user),
    }]
}

/// What a backend said when it could not be used, for the error.
fn why(e: &keyring::Error) -> String {
    match e {
        // keyutils answers "no entry" when the process has no session keyring to write to.
        keyring::Error::NoEntry => "no session keyring is attached to this login".into(),
        keyring::Error::NoStorageAccess(inner) | keyring::Error::PlatformFailure(inner) => {
            // The first line is enough (D-Bus errors run on).
            inner.to_string().lines().next().unwrap_or("").to_string()
        }
        e => e.to_string(),
    }
}

fn unavailable(failures: &[(&str, String)]) -> Error {
    let detail = failures
        .iter()
        .map(|(b, w)| format!("{b}: {w}"))
        .collect::<Vec<_>>()
        .join("; ");
    Error::new(
        ErrorKind::MissingCredentials,
        format!(
            "no OS keyring service answers here ({detail}). Store the key in a file only you can read with `genai keys set NAME --file` (or `[keys] store = \"file\"` in the config), or set the provider's environment variable (such as OPENAI_API_KEY) or `api_key_cmd` in the config"
        ),
    )
}

/// Reads a key; `Ok(None)` when a backend answered and none holds one, an error when no
/// backend answered at all.
pub fn get(user: &str) -> Result<Option<Secret>> {
    let mut failures = Vec::new();
    let mut answered = false;
    for b in backends(user) {
        let got = b.entry.and_then(|e| e.get_password());
        match got {
            Ok(k) => return Ok(Some(Secret::new(k))),
            Err(keyring::Error::NoEntry) => answered = true,
            Err(e) => failures.push((b.name, why(&e))),
        }
    }
    if answered {
        Ok(None)
    } else {
        Err(unavailable(&failures))
    }
}

/// Stores a key in the first backend that takes it; returns that backend's name.
pub fn set(user: &str, key: &Secret) -> Result<&'static str> {
    let mut failures = Vec::new();
    for b in backends(user) {
        match b.entry.and_then(|e| e.set_password(key.expose())) {
            Ok(()) => return Ok(b.name),
            Err(e) => failures.push((b.name, why(&e))),
        }
    }
    Err(unavailable(&failures))
}

/// Removes a key from every backend that holds it; `Ok(false)` when none did.
pub fn delete(user: &str) -> Result<bool> {
    let mut failures = Vec::new();
    let (mut answered, mut deleted) = (false, false);
    for b in backends(user) {
        match b.entry.and_then(|e| e.delete_credential()) {
            Ok(()) => deleted = true,
            Err(keyring::Error::NoEntry) => answered = true,
            Err(e) => failures.push((b.name, why(&e))),
        }
    }
    if deleted || answered {
        Ok(deleted)
    } else {
        Err(unavailable(&failures))
    }
}
