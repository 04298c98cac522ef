//! Files given to the model as context (`-f/--file PATH|DIR|URL|-`, a command's `files`):
//! each file as a fenced block headed by its path and tagged with its language (rendered by
//! `file_context`, as the protocol's `file` part is), after the prompt.
//!
//! It owns reading within caps (1 MiB a file, 4 MiB in all): a named file, a folder walked
//! honouring `.gitignore` and `.ignore` (hidden files skipped), an http(s) URL (HTML turned
//! into text; plain text and Markdown as they are; anything else refused), or stdin (`-`).
//! A named file or URL that is binary, too large or unreadable is refused with a clear line;
//! inside a folder such files are skipped and listed on stderr, never in the prompt. It must
//! never send anything: refusals happen before the framework is asked anything. Images go
//! through `-a` (`attach.rs`).
//!
//! Secrets stay home ([`Secrets`]): the permission policy's secret files (`.env`, keys,
//! credentials) and genai's own (its key file, the serve token, the history) are skipped in a
//! folder and said so, and refused when named, unless a rule names the file
//! (`--allow 'read_file(.env)'`, as for the workspace tools); the keys genai knows are masked
//! in every file's text.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};
use crate::file_context::{fenced, fenced_as, language_of_mime};
use crate::permission::Policy;

/// Which files are never sent as context unless named deliberately.
#[derive(Debug, Default)]
pub struct Secrets {
    /// genai's own secret files (`crate::secrets::own_files`), as found on disk.
    own: Vec<PathBuf>,
    /// The rules that may name a secret file, letting it go when it is named on its own.
    policy: Option<Policy>,
}

impl Secrets {
    /// genai's own secret files `own`, and the rules of `policy`.
    pub(crate) fn new(own: Vec<PathBuf>, policy: Option<Policy>) -> Secrets {
        let own = own
            .into_iter()
            .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
            .collect();
        Secrets { own, policy }
    }

    /// genai's own secret files `own`, and the rules that may name a secret file: the user's
    /// `[permissions]` and the flags' `--allow` and `--deny` (a bad rule is an error).
    pub fn of(
        own: Vec<PathBuf>,
        permissions: &crate::permission::PermissionsConfig,
        allow: &[String],
        deny: &[String],
    ) -> Result<Secrets, Error> {
        let policy = Policy::new(crate::permission::Layers {
            user: permissions.clone(),
            flag_allow: allow.to_vec(),
            flag_deny: deny.to_vec(),
            ..Default::default()
        })?;
        Ok(Secrets::new(own, Some(policy)))
    }

    /// Refuses a secret file named on its own (`path`, shown as `shown`) that no rule names,
    /// saying how to send it deliberately.
    pub fn check(&self, path: &Path, shown: &str) -> Result<(), Error> {
        let real = std::fs::canonicalize(path).ok();
        match self.why(real.as_deref(), shown) {
            Some(why) if !self.named_by_rule(shown) => Err(refuse(format!(
                "{shown} {why}: genai does not send it; to send it deliberately, allow it by \
                 name: {} (or that rule in [permissions] allow of the config)",
                allowing_rule(shown)
            ))),
            _ => Ok(()),
        }
    }

    /// Why a file shown as `shown`, at `real` (its path with every link resolved, when
    /// known), is kept back, when it is a secret file: by its name or its real path's, or as
    /// one of genai's own.
    fn why(&self, real: Option<&Path>, shown: &str) -> Option<&'static str> {
        if real.is_some_and(|r| self.own.iter().any(|o| o == r)) {
            return Some(
                "is one of genai's own secret files (its keys, the serve token, the history)",
            );
        }
        let named = crate::permission::is_secret(shown)
            || real.is_some_and(|r| crate::permission::is_secret(&r.to_string_lossy()));
        named.then_some("holds secrets (.env files, private keys and credentials are not sent)")
    }

    /// Whether a rule names this file, so that it may go when named on its own.
    fn named_by_rule(&self, shown: &str) -> bool {
        self.policy.as_ref().is_some_and(|p| p.names_secret(shown))
    }
}

/// The rule that lets the secret file `shown` go: its name, as `read_file` takes it.
fn allowing_rule(shown: &str) -> String {
    let name = shown
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(shown);
    format!("--allow 'read_file({})'", globset::escape(name))
}

/// The largest file genai reads as context.
pub(crate) const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most text all `-f` together may bring.
pub(crate) const MAX_TOTAL_BYTES: u64 = 4 << 20;

fn refuse(msg: String) -> Error {
    Error::new(ErrorKind::InvalidParams, msg)
}

fn kib(n: u64) -> u64 {
    n.div_ceil(1024)
}

/// What `-f` read: the blocks for the prompt and what a folder walk left out, with why.
#[derive(Debug, Default)]
pub struct Loaded {
    pub text: String,
    pub skipped: Vec<(String, String)>,
}

/// Reads every `-f`, in order, keeping what folders left out apart.
pub fn load(specs: &[String], secrets: &Secrets) -> Result<Loaded, Error> {
    load_in(Path::new(""), specs, secrets)
}

/// [`load`] with paths relative to `base` (shown as given, or relative to `base`).
pub(crate) fn load_in(base: &Path, specs: &[String], secrets: &Secrets) -> Result<Loaded, Error> {
    if specs.iter().filter(|s| *s == "-").count() > 1 {
        return Err(refuse("-f - (stdin) can be given once".into()));
    }
    let mut reader = Reader {
        secrets,
        blocks: Vec::new(),
        skipped: Vec::new(),
        total: 0,
    };
    for spec in specs {
        if spec == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .take(MAX_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| refuse(format!("cannot read stdin: {e}")))?;
            if bytes.len() as u64 > MAX_FILE_BYTES {
                return Err(too_big("stdin", None));
            }
            let text = as_text("stdin", bytes)?;
            reader.add("stdin", "", text)?;
        } else if crate::fetch::is_url(spec) {
            let (lang, text) = fetch_text(spec)?;
            reader.add(spec, lang, text)?;
        } else {
            let path = base.join(spec);
            let meta = std::fs::metadata(&path)
                .map_err(|e| refuse(format!("cannot read file {spec}: {e}")))?;
            if meta.is_dir() {
                reader.walk(base, spec)?;
            } else {
                secrets.check(&path, spec)?;
                let text = read_text(&path, spec)?;
                reader.add(spec, crate::file_context::language(spec), text)?;
            }
        }
    }
    Ok(Loaded {
        text: reader.blocks.join("\n\n"),
        skipped: reader.skipped,
    })
}

struct Reader<'a> {
    secrets: &'a Secrets,
    blocks: Vec<String>,
    skipped: Vec<(String, String)>,
    total: u64,
}

/// The text with the keys genai knows masked.
fn masked(mut text: String) -> String {
    crate::redact::mask_known(&mut text);
    text
}

impl Reader<'_> {
    /// Adds one named file, refusing it when it would pass the total cap.
    fn add(&mut self, name: &str, lang: &str, text: String) -> Result<(), Error> {
        let text = masked(text);
        if self.total + text.len() as u64 > MAX_TOTAL_BYTES {
            return Err(over_total(name));
        }
        self.total += text.len() as u64;
        self.blocks.push(fenced_as(name, lang, &text));
        Ok(())
    }

    /// Adds the text files of a folder in name order, honouring `.gitignore` (in a git
    /// repository or not), `.ignore` and hidden names; skips and lists the rest.
    fn walk(&mut self, base: &Path, dir: &str) -> Result<(), Error> {
        // Resolved once: the walk follows no link, so below it a file's real path is the
        // folder's real path joined with the file's place in it (no `realpath` per file).
        let real_dir = std::fs::canonicalize(base.join(dir)).ok();
        let walker = ignore::WalkBuilder::new(base.join(dir))
            .hidden(true)
            .git_ignore(true)
            .require_git(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        let before = self.blocks.len();
        for entry in walker {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    self.skipped.push((dir.to_string(), e.to_string()));
                    continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            let shown = path
                .strip_prefix(base)
                .unwrap_or(path)
                .display()
                .to_string();
            let real = real_dir.as_ref().and_then(|r| {
                let inside = path.strip_prefix(base.join(dir)).ok()?;
                Some(r.join(inside))
            });
            if let Some(why) = self.secrets.why(real.as_deref(), &shown) {
                self.skipped.push((
                    shown.clone(),
                    format!(
                        "it {why}; name it with -f and {} to send it",
                        allowing_rule(&shown)
                    ),
                ));
                continue;
            }
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            if self.total + size.min(MAX_FILE_BYTES) > MAX_TOTAL_BYTES {
                self.skipped.push((
                    shown,
                    format!("past the limit of {} MiB in all", MAX_TOTAL_BYTES >> 20),
                ));
                continue;
            }
            match read_text(entry.path(), &shown).map(masked) {
                Ok(text) => {
                    if self.total + text.len() as u64 > MAX_TOTAL_BYTES {
                        self.skipped.push((
                            shown,
                            format!("past the limit of {} MiB in all", MAX_TOTAL_BYTES >> 20),
                        ));
                        continue;
                    }
                    self.total += text.len() as u64;
                    self.blocks.push(fenced(&shown, &text));
                }
                Err(e) => self.skipped.push((shown, e.message.clone())),
            }
        }
        if self.blocks.len() == before {
            return Err(refuse(format!(
                "folder {dir} has no text file genai can send (ignored, hidden, binary and large files are left out)"
            )));
        }
        Ok(())
    }
}

fn too_big(what: &str, size: Option<u64>) -> Error {
    let size = size
        .map(|s| format!(" ({} KiB)", kib(s)))
        .unwrap_or_default();
    refuse(format!(
        "{what} is larger than genai's limit of {} KiB a file{size}",
        MAX_FILE_BYTES >> 10
    ))
}

fn over_total(what: &str) -> Error {
    refuse(format!(
        "{what} would take the files past genai's limit of {} MiB in all",
        MAX_TOTAL_BYTES >> 20
    ))
}

/// A file's text, refusing one over the cap, binary (a NUL byte) or not UTF-8.
fn read_text(path: &Path, shown: &str) -> Result<String, Error> {
    let file =
        std::fs::File::open(path).map_err(|e| refuse(format!("cannot read file {shown}: {e}")))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_FILE_BYTES {
        return Err(too_big(&format!("file {shown}"), Some(len)));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot read file {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(&format!("file {shown}"), None));
    }
    as_text(shown, bytes)
}

/// The bytes as text, or the refusal of a binary file.
fn as_text(shown: &str, bytes: Vec<u8>) -> Result<String, Error> {
    let binary = || {
        refuse(format!(
            "{shown} is a binary file, not text: images go with -a, other binary files cannot be sent"
        ))
    };
    if bytes.contains(&0) {
        return Err(binary());
    }
    String::from_utf8(bytes).map_err(|_| binary())
}

/// Downloads a URL (on a thread of its own, so it works inside or outside a runtime) and
/// turns it into text: HTML converted, plain text and Markdown as they are.
fn fetch_text(url: &str) -> Result<(&'static str, String), Error> {
    let fetched = std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::internal(format!("cannot start a download: {e}")))?;
            rt.block_on(crate::fetch::download(url, "file", MAX_FILE_BYTES, |n| {
                too_big(url, n)
            }))
        })
        .join()
        .map_err(|_| Error::internal("the download thread failed"))?
    })?;
    let (essence, text) = crate::fetch::page_text(url, fetched)?;
    // HTML came out as text: it is fenced as plain text.
    let language = match essence.as_str() {
        "text/html" | "application/xhtml+xml" => "",
        other => language_of_mime(other),
    };
    Ok((language, text))
}

#[cfg(test)]
#[path = "context_files_tests.rs"]
mod tests;
