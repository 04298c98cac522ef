//! Checking what was downloaded: sha256 values as written by users, servers (`ETag`) and
//! sidecar files, and the sha256 of a file on disk. It must never download anything.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Result};

/// Lower-case hex of a sha256, or an error naming the bad value.
pub(crate) fn parse_sha256(s: &str) -> Result<String> {
    let s = s.trim().to_ascii_lowercase();
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s)
    } else {
        Err(Error::invalid_params(format!(
            "`{s}` is not a sha256 (64 hex digits)"
        )))
    }
}

/// The sha256 of a file, in lower-case hex.
pub(crate) fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(|e| disk("read", path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| disk("read", path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn disk(what: &str, path: &Path, e: std::io::Error) -> Error {
    let hint = if e.raw_os_error() == Some(28) {
        " (the disk is full)"
    } else {
        ""
    };
    Error::new(
        ErrorKind::Store,
        format!("cannot {what} {}: {e}{hint}", path.display()),
    )
}

/// A sha256 in an ETag-like header value (`"abc…"`, `W/"abc…"`), if it is one.
pub(super) fn sha256_in_etag(v: &str) -> Option<String> {
    let v = v.trim().trim_start_matches("W/").trim_matches('"');
    parse_sha256(v).ok()
}

/// The first word of a `.sha256` file (`HASH  FILE` or just `HASH`), if it is a sha256.
pub(super) fn sidecar_sha(text: &str) -> Option<String> {
    parse_sha256(text.split_whitespace().next()?).ok()
}
