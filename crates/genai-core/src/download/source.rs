//! Where a model download comes from: an `http(s)://` URL, `hf:OWNER/REPO/FILE[@REVISION]` (a
//! Hugging Face file on `$GENAI_HF_ENDPOINT`, else `$HF_ENDPOINT`, else huggingface.co), or
//! `file://PATH`; and the file name a source suggests. It must never open a connection.

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::models::{check_name, EXTENSION};

/// The default Hugging Face endpoint.
pub(crate) const HF_DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Where the bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    Http {
        url: String,
        /// True for `hf:` sources (the published sha256 may be in `ETag`, and `HF_TOKEN` applies).
        hugging_face: bool,
    },
    File(PathBuf),
}

/// The Hugging Face endpoint: `$GENAI_HF_ENDPOINT`, else `$HF_ENDPOINT`, else huggingface.co.
pub(crate) fn hf_endpoint() -> String {
    ["GENAI_HF_ENDPOINT", "HF_ENDPOINT"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| HF_DEFAULT_ENDPOINT.to_string())
        .trim_end_matches('/')
        .to_string()
}

/// `OWNER/REPO/PATH[@REVISION]` as `ENDPOINT/OWNER/REPO/resolve/REVISION/PATH`.
pub(crate) fn hf_url(endpoint: &str, spec: &str) -> Result<String> {
    let bad = || {
        Error::invalid_params(format!(
            "`hf:{spec}` is not hf:OWNER/REPO/FILE.gguf (optionally @REVISION)"
        ))
    };
    let (path, revision) = match spec.rsplit_once('@') {
        Some((p, r)) if !r.is_empty() && !r.contains('/') => (p, r),
        Some(_) => return Err(bad()),
        None => (spec, "main"),
    };
    let mut parts = path.splitn(3, '/');
    let (owner, repo, file) = match (parts.next(), parts.next(), parts.next()) {
        (Some(o), Some(r), Some(f)) if !o.is_empty() && !r.is_empty() && !f.is_empty() => (o, r, f),
        _ => return Err(bad()),
    };
    if file.split('/').any(|s| s.is_empty() || s == "..") {
        return Err(bad());
    }
    Ok(format!(
        "{endpoint}/{owner}/{repo}/resolve/{revision}/{file}"
    ))
}

/// Reads a source string.
pub(crate) fn parse_source(source: &str) -> Result<Source> {
    if let Some(spec) = source.strip_prefix("hf:") {
        return Ok(Source::Http {
            url: hf_url(&hf_endpoint(), spec)?,
            hugging_face: true,
        });
    }
    if let Some(path) = source.strip_prefix("file://") {
        return Ok(Source::File(PathBuf::from(path)));
    }
    if source.starts_with("http://") || source.starts_with("https://") {
        return Ok(Source::Http {
            url: source.to_string(),
            hugging_face: false,
        });
    }
    Err(Error::invalid_params(format!(
        "`{source}` is not a source: give an http(s):// URL, hf:OWNER/REPO/FILE.gguf or file:///PATH"
    )))
}

/// The model name a source gives by default: its file name without `.gguf`.
pub(crate) fn default_name(source: &Source) -> Option<String> {
    let last = match source {
        Source::Http { url, .. } => {
            let path = url.split(['?', '#']).next().unwrap_or(url);
            let path = path.split_once("://").map_or(path, |(_, p)| p);
            path.split_once('/')?.1.rsplit('/').next()?.to_string()
        }
        Source::File(p) => p.file_name()?.to_str()?.to_string(),
    };
    let name = last
        .strip_suffix(&format!(".{EXTENSION}"))
        .unwrap_or(&last)
        .to_string();
    check_name(&name).ok().map(|_| name)
}
