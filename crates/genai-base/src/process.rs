//! The environment of a child process genai starts (an MCP server, an `api_key_cmd`): a
//! minimal one, plus what the config names.
//!
//! genai's own environment holds every provider's key (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`,
//! AWS credentials, ...), so a child never inherits it whole: it gets the variables a program
//! needs to run in the user's session ([`PASSED`], and the locale's `LC_*`), the ones its
//! config passes by name, then the values its config sets. This module must never pass a
//! variable because of its value, nor log one.

use std::ffi::OsString;

/// Variables every child gets when genai has them: where programs and the home folder are,
/// who the user is, the locale, temporary folders, the session's agents (a key command may
/// ask `gpg-agent` or the keyring over D-Bus), and what Windows needs to start a program.
pub const PASSED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TERM",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "DBUS_SESSION_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "GNUPGHOME",
    "GPG_AGENT_INFO",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
    "PROGRAMDATA",
];

/// The variables of genai's environment a child gets: [`PASSED`], `LC_*`, and `names`. The
/// values of `names` are handed to the redactor: a variable passed on purpose is often a token.
pub fn minimal_env(names: &[String]) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, value)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            if names.iter().any(|n| n == name) {
                if let Some(value) = value.to_str() {
                    crate::redact::remember(value);
                }
                return true;
            }
            PASSED.contains(&name) || name.starts_with("LC_")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_session_variables_and_named_ones_pass() {
        // The test process's own environment: PATH is there on every machine that runs it.
        let names = |env: Vec<(OsString, OsString)>| -> Vec<String> {
            env.into_iter()
                .map(|(n, _)| n.into_string().unwrap())
                .collect()
        };
        let passed = names(minimal_env(&[]));
        assert!(passed.iter().any(|n| n == "PATH"), "{passed:?}");
        assert!(
            passed
                .iter()
                .all(|n| PASSED.contains(&n.as_str()) || n.starts_with("LC_")),
            "{passed:?}"
        );
        let some_other = std::env::vars()
            .map(|(n, _)| n)
            .find(|n| !PASSED.contains(&n.as_str()) && !n.starts_with("LC_"));
        if let Some(other) = some_other {
            assert!(!passed.contains(&other));
            assert!(names(minimal_env(std::slice::from_ref(&other))).contains(&other));
        }
    }
}
