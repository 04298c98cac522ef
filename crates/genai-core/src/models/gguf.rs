//! Telling a GGUF model file from anything else, before it is installed (`download`) or handed
//! to llama.cpp (the `local` provider): the magic `GGUF`, a known version (1 to 3), a tensor
//! count and a metadata count that are plausible, and a file large enough to hold what its
//! header announces. A download that returned an error page, a JSON answer or a cut file is
//! refused here with a sentence a user can act on, instead of reaching llama.cpp.
//!
//! It reads the fixed header and the file's length only: it never parses the metadata nor
//! loads a model, so a file that passes can still be one llama.cpp cannot run.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The first four bytes of every GGUF file.
pub(crate) const MAGIC: &[u8; 4] = b"GGUF";
/// The GGUF versions there are (llama.cpp writes 3).
pub(crate) const VERSIONS: std::ops::RangeInclusive<u32> = 1..=3;
/// The most bytes of a header: magic, version and two 64-bit counts.
const HEADER: usize = 24;

/// What a GGUF header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub(crate) version: u32,
    pub(crate) tensors: u64,
    pub(crate) metadata: u64,
}

/// The smallest bytes one entry can take in a file of this version: (header, metadata entry,
/// tensor description). Version 1 wrote 32-bit counts and string lengths; later ones 64-bit.
fn smallest(version: u32) -> (u64, u64, u64) {
    match version {
        // A metadata entry: key length, type, a one-byte value. A tensor: name length, its
        // dimension count, type and offset.
        1 => (16, 4 + 4 + 1, 4 + 4 + 4 + 8),
        _ => (HEADER as u64, 8 + 4 + 1, 8 + 4 + 4 + 8),
    }
}

/// What the first bytes look like, for a file that is not a GGUF.
fn looks_like(head: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        "it looks like JSON, such as an error or an API answer"
    } else if t.starts_with('<') {
        "it looks like HTML or XML, such as an error page"
    } else if head.starts_with(b"PK") {
        "it looks like a zip archive"
    } else if head
        .iter()
        .all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace())
    {
        "it looks like text"
    } else {
        "it starts with other bytes"
    }
}

/// Reads a header from the first bytes of a file of `len` bytes; the error says what is
/// wrong (the caller names the file).
pub(crate) fn check_bytes(head: &[u8], len: u64) -> Result<Header, String> {
    let not_gguf = |why: String| Err(format!("it is not a GGUF model file: {why}"));
    if !head.starts_with(MAGIC) {
        if len < MAGIC.len() as u64 {
            return not_gguf(format!("it is only {len} bytes"));
        }
        return not_gguf(format!(
            "it does not start with `GGUF` ({}, {len} bytes)",
            looks_like(&head[..head.len().min(64)])
        ));
    }
    let u32_at = |at: usize| {
        head.get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |at: usize| {
        head.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let Some(version) = u32_at(4) else {
        return not_gguf(format!("its header is cut short ({len} bytes)"));
    };
    if !VERSIONS.contains(&version) {
        return not_gguf(format!(
            "GGUF version {version} is not one there is (1 to 3), so the header is damaged"
        ));
    }
    let counts = match version {
        1 => u32_at(8).zip(u32_at(12)).map(|(t, m)| (t as u64, m as u64)),
        _ => u64_at(8).zip(u64_at(16)),
    };
    let Some((tensors, metadata)) = counts else {
        return not_gguf(format!("its header is cut short ({len} bytes)"));
    };
    if tensors == 0 {
        return not_gguf("its header announces no tensors (no weights)".to_string());
    }
    let (header, per_entry, per_tensor) = smallest(version);
    let needed = metadata
        .checked_mul(per_entry)
        .and_then(|m| tensors.checked_mul(per_tensor)?.checked_add(m))
        .and_then(|n| n.checked_add(header));
    match needed {
        Some(n) if n <= len => Ok(Header {
            version,
            tensors,
            metadata,
        }),
        _ => not_gguf(format!(
            "its header announces {tensors} tensors and {metadata} metadata entries, more than \
             {len} bytes can hold (the file is cut short or damaged)"
        )),
    }
}

/// Checks that the file at `path` is a GGUF model file; the error says what is wrong (the
/// caller names the file and what happens to it).
pub fn check_file(path: &Path) -> Result<Header, String> {
    let mut f = File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let len = f
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    let mut head = Vec::with_capacity(64);
    (&mut f)
        .take(64)
        .read_to_end(&mut head)
        .map_err(|e| format!("cannot read it: {e}"))?;
    check_bytes(&head, len)
}

/// The smallest GGUF header that passes `check_bytes` (version 3, `tensors` tensors and
/// `metadata` entries), padded with zeros to `len` bytes: for tests of what is installed.
pub fn minimal(tensors: u64, metadata: u64, len: usize) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    v.extend(3u32.to_le_bytes());
    v.extend(tensors.to_le_bytes());
    v.extend(metadata.to_le_bytes());
    v.resize(len.max(v.len()), 0);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(tensors: u32, metadata: u32, len: usize) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend(1u32.to_le_bytes());
        v.extend(tensors.to_le_bytes());
        v.extend(metadata.to_le_bytes());
        v.resize(len, 0);
        v
    }

    fn check(bytes: &[u8]) -> Result<Header, String> {
        check_bytes(&bytes[..bytes.len().min(64)], bytes.len() as u64)
    }

    #[test]
    fn a_plausible_header_passes() {
        let h = check(&minimal(2, 3, 200)).unwrap();
        assert_eq!(
            h,
            Header {
                version: 3,
                tensors: 2,
                metadata: 3
            }
        );
        assert_eq!(check(&v1(1, 1, 100)).unwrap().version, 1);
        // 24 + 2 tensors × 24 + 3 entries × 13 = 111 bytes at least.
        assert!(check(&minimal(2, 3, 111)).is_ok());
        assert!(check(&minimal(2, 3, 110)).is_err());
    }

    #[test]
    fn json_html_and_short_files_are_refused_saying_what_they_look_like() {
        let json = br#"{"error":"Not Found","detail":"the file is not on this server"}"#;
        let e = check(json).unwrap_err();
        assert!(e.contains("not a GGUF") && e.contains("JSON"), "{e}");
        let e = check(b"<!DOCTYPE html><html>nope</html>").unwrap_err();
        assert!(e.contains("HTML"), "{e}");
        assert!(check(b"GG").unwrap_err().contains("only 2 bytes"));
        assert!(check(b"").unwrap_err().contains("only 0 bytes"));
    }

    #[test]
    fn a_cut_or_damaged_header_is_refused() {
        let full = minimal(1, 1, 64);
        for cut in [5, 8, 12, 20] {
            let e = check(&full[..cut]).unwrap_err();
            assert!(e.contains("cut short"), "{cut}: {e}");
        }
        let mut bad_version = full.clone();
        bad_version[4..8].copy_from_slice(&7u32.to_le_bytes());
        assert!(check(&bad_version).unwrap_err().contains("version 7"));
        let e = check(&minimal(0, 5, 200)).unwrap_err();
        assert!(e.contains("no tensors"), "{e}");
        let e = check(&minimal(u64::MAX, u64::MAX, 200)).unwrap_err();
        assert!(e.contains("more than 200 bytes can hold"), "{e}");
        let e = check(&minimal(1_000_000, 30, 4096)).unwrap_err();
        assert!(e.contains("1000000 tensors"), "{e}");
    }

    #[test]
    fn files_are_read_from_disk() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.gguf");
        std::fs::write(&p, minimal(1, 1, 4096)).unwrap();
        assert!(check_file(&p).is_ok());
        std::fs::write(&p, b"{}").unwrap();
        assert!(check_file(&p).unwrap_err().contains("only 2 bytes"));
        let e = check_file(&d.path().join("absent")).unwrap_err();
        assert!(e.contains("cannot read it"), "{e}");
    }
}
