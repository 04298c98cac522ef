//! Who may talk to `genai serve`: the bearer token (made on first start into a 0600 file of
//! the config dir, read from the `Authorization` header or the `Sec-WebSocket-Protocol`
//! value a browser can set) and the allow list of browser origins. The gateway's APIs check
//! their own keys (`genai_gateway::Access`: the token or a virtual key, also as `x-api-key`).
//! It decides yes or no on the request's headers only; it must never log or echo the token.

use std::io::Write;
use std::path::{Path, PathBuf};

use genai_core::error::{Error, ErrorKind, Result};

/// The token file's name in the config dir.
pub(crate) const TOKEN_FILE: &str = genai_core::secrets::SERVE_TOKEN_FILE;

/// The subprotocol prefix that carries the token from a browser:
/// `new WebSocket(url, ["genai", "bearer.TOKEN"])`.
pub(crate) const PROTOCOL_PREFIX: &str = "bearer.";

/// The token in `config_dir`, made (64 hex digits from the OS's random source, mode 0600) when
/// there is none yet.
pub fn token(config_dir: &Path) -> Result<String> {
    let path = config_dir.join(TOKEN_FILE);
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(config_error(&path, e)),
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::internal(format!("no random source for the token: {e}")))?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(config_dir).map_err(|e| config_error(config_dir, e))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&path).map_err(|e| config_error(&path, e))?;
    file.write_all(token.as_bytes())
        .map_err(|e| config_error(&path, e))?;
    Ok(token)
}

fn config_error(path: &Path, e: std::io::Error) -> Error {
    Error::new(
        ErrorKind::Config,
        format!(
            "cannot read or write the token file {}: {e}",
            path.display()
        ),
    )
}

/// Where the token lives.
pub fn token_path(config_dir: &Path) -> PathBuf {
    config_dir.join(TOKEN_FILE)
}

/// Compares without stopping at the first difference.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Whether the request carries the token: `Authorization: Bearer TOKEN`, or `bearer.TOKEN`
/// among the offered subprotocols.
pub(crate) fn has_token(authorization: Option<&str>, protocols: Option<&str>, token: &str) -> bool {
    let bearer = authorization
        .and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("bearer "))
        })
        .is_some_and(|t| same(t.trim(), token));
    let offered = protocols.is_some_and(|p| {
        p.split(',')
            .filter_map(|p| p.trim().strip_prefix(PROTOCOL_PREFIX))
            .any(|t| same(t, token))
    });
    bearer || offered
}

/// Whether a browser's `Origin` may connect: no origin (not a browser) or one on the list.
pub(crate) fn origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    match origin {
        None => true,
        Some(o) => allowed
            .iter()
            .any(|a| a == "*" || a.eq_ignore_ascii_case(o)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_made_once_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let t = token(dir.path()).unwrap();
        assert_eq!(t.len(), 64);
        assert!(t.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(
            token(dir.path()).unwrap(),
            t,
            "the same token on the next start"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(token_path(dir.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let other = tempfile::tempdir().unwrap();
        assert_ne!(token(other.path()).unwrap(), t);
    }

    #[test]
    fn the_token_comes_in_a_header_or_a_subprotocol_and_origins_are_listed() {
        assert!(has_token(Some("Bearer abc"), None, "abc"));
        assert!(has_token(None, Some("genai, bearer.abc"), "abc"));
        assert!(!has_token(
            Some("Bearer abd"),
            Some("genai, bearer.abx"),
            "abc"
        ));
        assert!(!has_token(None, None, "abc"));
        assert!(!has_token(Some("abc"), None, "abc"));
        let allowed = vec!["http://127.0.0.1:8080".to_string()];
        assert!(origin_allowed(None, &allowed));
        assert!(origin_allowed(Some("http://127.0.0.1:8080"), &allowed));
        assert!(!origin_allowed(Some("https://evil.example"), &allowed));
    }
}
