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
pub(crate) const KEYRING_SERVICE: &str = "genai";

/// One keyring backend of this machine, in the order they are tried.
struct Backend {
    /// Its name for people, as `genai keys` reports where a key went.
    name: &'static str,
    /// What its failure to answer means, for people (the backend's own text goes to the debug
    /// log: D-Bus's runs on about X11 and autolaunch).
    absent: &'static str,
    /// Whether a read that finds no entry proves the backend would store one. The kernel
    /// keyring answers "no entry" to a process that may not write to it too.
    reads_tell: bool,
    entry: std::result::Result<keyring::Entry, keyring::Error>,
}

#[cfg(target_os = "linux")]
fn backends(user: &str) -> Vec<Backend> {
    use keyring::keyutils::KeyutilsCredential;
    use keyring::secret_service::SsCredential;
    vec![
        Backend {
            name: "the Secret Service keyring",
            absent: "no Secret Service answers on the D-Bus session bus",
            reads_tell: true,
            entry: SsCredential::new_with_target(None, KEYRING_SERVICE, user)
                .map(|c| keyring::Entry::new_with_credential(Box::new(c))),
        },
        Backend {
            name: "the kernel keyring (forgotten at logout)",
            absent: "no session keyring is attached to this login",
            reads_tell: false,
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
        absent: "it does not answer",
        reads_tell: true,
        entry: keyring::Entry::new(KEYRING_SERVICE, user),
    }]
}

impl Backend {
    /// Its entry, or why it cannot be reached: a backend that cannot make one (no session
    /// keyring, no bus) has not answered, whatever its error says.
    fn open(self, failures: &mut Vec<(&'static str, String)>) -> Option<(Place, keyring::Entry)> {
        let place = Place {
            name: self.name,
            absent: self.absent,
        };
        match self.entry {
            Ok(entry) => Some((place, entry)),
            Err(e) => {
                failures.push((place.name, place.why(&e)));
                None
            }
        }
    }
}

/// A backend's names for people.
#[derive(Clone, Copy)]
struct Place {
    name: &'static str,
    absent: &'static str,
}

impl Place {
    /// Why it could not be used, in one line for people; the backend's own words go to the
    /// debug log.
    fn why(&self, e: &keyring::Error) -> String {
        tracing::debug!(backend = self.name, error = %e, "the keyring backend did not answer");
        match e {
            // keyutils answers "no entry" when the process has no session keyring.
            keyring::Error::NoEntry | keyring::Error::PlatformFailure(_) => self.absent.into(),
            keyring::Error::NoStorageAccess(_) => "it is locked or refused access".into(),
            e => e.to_string().lines().next().unwrap_or("").to_string(),
        }
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

/// The user name of [`probe`]'s entry, before the process id.
const PROBE_USER: &str = "genai-keyring-probe";

/// Which backend `set` would store a key in, found as `set` finds it, without a key: the
/// first that answers a read (where a read tells), else that stores and deletes a probe
/// entry; the error `set` would give when none does. `keys list` reports this.
pub fn probe() -> Result<&'static str> {
    let mut failures = Vec::new();
    // One entry per process: two processes probing at once with one name delete each
    // other's entry, and the second delete's "no entry" would read as no keyring.
    let user = format!("{PROBE_USER}-{}", std::process::id());
    for b in backends(&user) {
        let reads_tell = b.reads_tell;
        let Some((place, entry)) = b.open(&mut failures) else {
            continue;
        };
        let answered = match entry.get_password() {
            Ok(_) | Err(keyring::Error::NoEntry) if reads_tell => Ok(()),
            _ => entry
                .set_password("probe")
                .and_then(|()| entry.delete_credential()),
        };
        match answered {
            Ok(()) => return Ok(place.name),
            Err(e) => failures.push((place.name, place.why(&e))),
        }
    }
    Err(unavailable(&failures))
}

/// Reads a key; `Ok(None)` when a backend answered and none holds one, an error when no
/// backend answered at all.
pub fn get(user: &str) -> Result<Option<Secret>> {
    let mut failures = Vec::new();
    let mut answered = false;
    for b in backends(user) {
        let Some((place, entry)) = b.open(&mut failures) else {
            continue;
        };
        match entry.get_password() {
            Ok(k) => return Ok(Some(Secret::new(k))),
            Err(keyring::Error::NoEntry) => answered = true,
            Err(e) => failures.push((place.name, place.why(&e))),
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
        let Some((place, entry)) = b.open(&mut failures) else {
            continue;
        };
        match entry.set_password(key.expose()) {
            Ok(()) => return Ok(place.name),
            Err(e) => failures.push((place.name, place.why(&e))),
        }
    }
    Err(unavailable(&failures))
}

/// Removes a key from every backend that holds it; `Ok(false)` when none did.
pub fn delete(user: &str) -> Result<bool> {
    let mut failures = Vec::new();
    let (mut answered, mut deleted) = (false, false);
    for b in backends(user) {
        let Some((place, entry)) = b.open(&mut failures) else {
            continue;
        };
        match entry.delete_credential() {
            Ok(()) => deleted = true,
            Err(keyring::Error::NoEntry) => answered = true,
            Err(e) => failures.push((place.name, place.why(&e))),
        }
    }
    if deleted || answered {
        Ok(deleted)
    } else {
        Err(unavailable(&failures))
    }
}
