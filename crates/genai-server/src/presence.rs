//! The file that tells `genai ask` and `genai chat` a `genai serve` of this user is running,
//! and where: `serve.json` in the config dir (beside the token), written once the serve
//! listens and removed when it stops. Finding out that no serve runs is reading one missing
//! file; a file left by a serve that died is found out by the refused connection.
//!
//! It owns that file's content and life. It must never hold the token (that stays in its own
//! 0600 file) nor connect to anything.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use genai_core::error::{Error, ErrorKind, Result};

/// The file's name in the config dir.
pub(crate) const FILE: &str = "serve.json";

/// What the file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Presence {
    /// Where a client on this machine reaches the serve (loopback when it listens on every
    /// address).
    pub addr: SocketAddr,
    /// The serve's process id, so only that serve removes the file and `--stop` stops it.
    pub pid: u32,
}

/// Where the file lives.
pub fn path(config_dir: &Path) -> PathBuf {
    config_dir.join(FILE)
}

/// The running serve the file names, if there is a readable file.
pub fn find(config_dir: &Path) -> Option<Presence> {
    let text = std::fs::read(path(config_dir)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Writes the file for this process serving at `listening`; dropping the guard removes it
/// if it still names this process (a later serve may have written its own).
pub fn announce(config_dir: &Path, listening: SocketAddr) -> Result<Announced> {
    let addr = match listening.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), listening.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), listening.port())
        }
        _ => listening,
    };
    let presence = Presence {
        addr,
        pid: std::process::id(),
    };
    let file = path(config_dir);
    let text = serde_json::to_vec(&presence).map_err(|e| Error::internal(e.to_string()))?;
    // Written beside and renamed over, so a reader never sees half a file.
    let partial = config_dir.join(format!(".{FILE}.{}", presence.pid));
    std::fs::create_dir_all(config_dir)
        .and_then(|_| std::fs::write(&partial, text))
        .and_then(|_| std::fs::rename(&partial, &file))
        .map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("cannot write {}: {e}", file.display()),
            )
        })?;
    Ok(Announced { file, presence })
}

/// The file of a running serve; removed on drop when it is still this serve's.
pub struct Announced {
    file: PathBuf,
    presence: Presence,
}

impl Drop for Announced {
    fn drop(&mut self) {
        let ours = std::fs::read(&self.file)
            .ok()
            .and_then(|t| serde_json::from_slice::<Presence>(&t).ok())
            .is_some_and(|p| p == self.presence);
        if ours {
            let _ = std::fs::remove_file(&self.file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_names_a_reachable_address_and_leaves_with_its_serve_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(find(dir.path()), None);
        let announced = announce(dir.path(), "0.0.0.0:8765".parse().unwrap()).unwrap();
        let found = find(dir.path()).unwrap();
        assert_eq!(found.addr, "127.0.0.1:8765".parse().unwrap());
        assert_eq!(found.pid, std::process::id());
        drop(announced);
        assert_eq!(find(dir.path()), None);

        // A later serve's file is not removed by an earlier serve's end.
        let first = announce(dir.path(), "127.0.0.1:1".parse().unwrap()).unwrap();
        let later = Presence {
            addr: "127.0.0.1:2".parse().unwrap(),
            pid: 1,
        };
        std::fs::write(path(dir.path()), serde_json::to_vec(&later).unwrap()).unwrap();
        drop(first);
        assert_eq!(find(dir.path()), Some(later));
    }
}
