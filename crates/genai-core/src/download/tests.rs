//! Tests of the downloads' pieces: sources and their names, URLs, checksums, ranges.

use super::source::hf_url;
use super::*;

#[test]
fn hf_specs_become_resolve_urls() {
    assert_eq!(
        hf_url("https://hf.co", "o/r/f.gguf").unwrap(),
        "https://hf.co/o/r/resolve/main/f.gguf"
    );
    assert_eq!(
        hf_url("http://x", "o/r/sub/f.gguf@v1.0").unwrap(),
        "http://x/o/r/resolve/v1.0/sub/f.gguf"
    );
    for bad in ["o/r", "o//f", "o/r/f@", "o/r/../f", "o/r/f@a/b"] {
        assert!(hf_url("http://x", bad).is_err(), "{bad}");
    }
}

#[test]
fn sources_and_their_default_names() {
    let s = parse_source("https://h/x/Model-Q4.gguf?download=true").unwrap();
    assert_eq!(default_name(&s).as_deref(), Some("Model-Q4"));
    let s = parse_source("file:///tmp/a/b.gguf").unwrap();
    assert_eq!(s, Source::File("/tmp/a/b.gguf".into()));
    assert_eq!(default_name(&s).as_deref(), Some("b"));
    assert_eq!(default_name(&parse_source("http://h/").unwrap()), None);
    assert!(parse_source("ftp://x").is_err());
}

#[test]
fn etags_and_sidecars_yield_sha256s() {
    let h = "a".repeat(64);
    assert_eq!(sha256_in_etag(&format!("\"{h}\"")), Some(h.clone()));
    assert_eq!(sha256_in_etag(&format!("W/\"{h}\"")), Some(h.clone()));
    assert_eq!(sha256_in_etag("\"1234\""), None);
    assert_eq!(sidecar_sha(&format!("{h}  model.gguf\n")), Some(h));
    assert!(parse_sha256("xyz").is_err());
}

#[test]
fn content_range_is_parsed() {
    let mut h = HeaderMap::new();
    h.insert(CONTENT_RANGE, "bytes 100-199/200".parse().unwrap());
    assert_eq!(content_range(&h), Some((Some(100), Some(200))));
    h.insert(CONTENT_RANGE, "bytes */200".parse().unwrap());
    assert_eq!(content_range(&h), Some((None, Some(200))));
    h.insert(CONTENT_RANGE, "items 1-2/3".parse().unwrap());
    assert_eq!(content_range(&h), None);
}

#[test]
fn sha256_of_a_file() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f");
    std::fs::write(&p, b"abc").unwrap();
    assert_eq!(
        sha256_file(&p).unwrap(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
