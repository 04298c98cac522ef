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
    pub fn new(own: Vec<PathBuf>, policy: Option<Policy>) -> Secrets {
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
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most text all `-f` together may bring.
pub const MAX_TOTAL_BYTES: u64 = 4 << 20;

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
pub fn load_in(base: &Path, specs: &[String], secrets: &Secrets) -> Result<Loaded, Error> {
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
mod tests {
    use super::*;

    #[test]
    fn named_binary_and_missing_files_are_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("a.bin");
        std::fs::write(&bin, [0x89, b'P', 0, 1]).unwrap();
        let latin1 = dir.path().join("b.txt");
        std::fs::write(&latin1, [b'c', 0xe9]).unwrap();
        let big = dir.path().join("big.txt");
        std::fs::write(&big, vec![b'a'; MAX_FILE_BYTES as usize + 1]).unwrap();
        let d = dir.path().display().to_string();
        for (path, says) in [
            (bin.display().to_string(), "is a binary file"),
            (latin1.display().to_string(), "is a binary file"),
            (big.display().to_string(), "larger than genai's limit"),
            (format!("{d}/absent.txt"), "cannot read file"),
        ] {
            let e = load(std::slice::from_ref(&path), &Secrets::default()).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidParams);
            assert!(e.message.contains(says), "{path}: {}", e.message);
        }
        let ok = dir.path().join("c.py");
        std::fs::write(&ok, "print(1)\n").unwrap();
        let text = load(
            &[ok.display().to_string(), ok.display().to_string()],
            &Secrets::default(),
        )
        .unwrap()
        .text;
        assert_eq!(
            text.matches("```python\nprint(1)\n```").count(),
            2,
            "{text}"
        );
    }

    #[test]
    fn a_folder_is_walked_in_order_skipping_ignored_hidden_binary_and_large_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(".gitignore"), "secret.txt\n").unwrap();
        std::fs::write(root.join("secret.txt"), "do not send").unwrap();
        std::fs::write(root.join(".env"), "HIDDEN=1").unwrap();
        std::fs::write(root.join("b.md"), "# B\n").unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(root.join("logo.png"), b"\x89PNG\r\n\x1a\n\0\0").unwrap();
        std::fs::write(
            root.join("huge.txt"),
            vec![b'x'; MAX_FILE_BYTES as usize + 1],
        )
        .unwrap();
        let d = root.display().to_string();
        let loaded = load(std::slice::from_ref(&d), &Secrets::default()).unwrap();
        assert_eq!(
            loaded.text,
            format!("{d}/b.md:\n```markdown\n# B\n```\n\n{d}/src/a.rs:\n```rust\nfn a() {{}}\n```")
        );
        let skipped: Vec<&str> = loaded.skipped.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            skipped,
            [format!("{d}/huge.txt"), format!("{d}/logo.png")],
            "{:?}",
            loaded.skipped
        );
        assert!(
            loaded.skipped[1].1.contains("binary"),
            "{:?}",
            loaded.skipped
        );
        // A folder with nothing to send is refused.
        let empty = tempfile::tempdir().unwrap();
        std::fs::write(empty.path().join("x.bin"), [0u8, 1]).unwrap();
        let e = load(&[empty.path().display().to_string()], &Secrets::default()).unwrap_err();
        assert!(e.message.contains("no text file"), "{}", e.message);
    }

    #[test]
    fn files_past_the_total_cap_are_skipped_in_a_folder_and_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        // Five files of 1 MiB less a little: four fit in 4 MiB, the fifth does not.
        for i in 0..5 {
            std::fs::write(
                dir.path().join(format!("f{i}.txt")),
                vec![b'a'; MAX_FILE_BYTES as usize - 100],
            )
            .unwrap();
        }
        let d = dir.path().display().to_string();
        let loaded = load(std::slice::from_ref(&d), &Secrets::default()).unwrap();
        assert_eq!(loaded.text.matches(":\n```\n").count(), 4);
        assert_eq!(loaded.skipped.len(), 1);
        assert!(loaded.skipped[0].0.ends_with("f4.txt"));
        assert!(loaded.skipped[0].1.contains("in all"));
        let named: Vec<String> = (0..5).map(|i| format!("{d}/f{i}.txt")).collect();
        let e = load(&named, &Secrets::default()).unwrap_err();
        assert!(e.message.contains("f4.txt would take"), "{}", e.message);
    }

    #[test]
    fn secret_files_are_left_out_of_folders_and_refused_by_name_unless_a_rule_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.py"), "print(1)\n").unwrap();
        std::fs::write(root.join("server.key"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
        std::fs::write(root.join("credentials.json"), "{\"token\": \"t\"}\n").unwrap();
        std::fs::write(root.join("keys.toml"), "[keys]\ncorp = \"sk-x\"\n").unwrap();
        std::fs::write(root.join(".env"), "TOKEN=abc\n").unwrap();
        // A link with an innocent name to a secret file is the secret file (a walk does not
        // follow links; named, it is refused).
        std::os::unix::fs::symlink(root.join("server.key"), root.join("notes.txt")).unwrap();
        let own = Secrets::new(vec![root.join("keys.toml")], None);
        let d = root.display().to_string();
        let loaded = load(std::slice::from_ref(&d), &own).unwrap();
        assert!(loaded.text.contains("print(1)"), "{}", loaded.text);
        for secret in ["PRIVATE KEY", "token", "sk-x", "TOKEN=abc"] {
            assert!(!loaded.text.contains(secret), "{secret}: {}", loaded.text);
        }
        let skipped: Vec<&str> = loaded.skipped.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            skipped,
            [
                format!("{d}/credentials.json"),
                format!("{d}/keys.toml"),
                format!("{d}/server.key")
            ],
            "{:?}",
            loaded.skipped
        );
        assert!(
            loaded.skipped[2]
                .1
                .contains("--allow 'read_file(server.key)'"),
            "{:?}",
            loaded.skipped
        );
        let e = load(&[format!("{d}/notes.txt")], &own).unwrap_err();
        assert!(e.message.contains("holds secrets"), "{}", e.message);
        assert!(
            loaded.skipped[1].1.contains("genai's own"),
            "{:?}",
            loaded.skipped
        );
        // Named on its own: refused, with the way to send it deliberately.
        let env = format!("{d}/.env");
        let e = load(std::slice::from_ref(&env), &own).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidParams);
        assert!(
            e.message.contains("holds secrets") && e.message.contains("--allow 'read_file(.env)'"),
            "{}",
            e.message
        );
        let e = load(&[format!("{d}/keys.toml")], &own).unwrap_err();
        assert!(e.message.contains("genai's own"), "{}", e.message);
        // A rule naming it lets it go; a bare or wildcard rule does not.
        let policy = |allow: &[&str]| {
            Some(
                Policy::new(crate::permission::Layers {
                    flag_allow: allow.iter().map(|r| r.to_string()).collect(),
                    ..Default::default()
                })
                .unwrap(),
            )
        };
        let named = Secrets::new(Vec::new(), policy(&["read_file(.env)"]));
        let text = load(std::slice::from_ref(&env), &named).unwrap().text;
        assert!(text.contains("TOKEN=abc"), "{text}");
        for loose in [&["read_file"][..], &["read_file(**)"]] {
            let e = load(
                std::slice::from_ref(&env),
                &Secrets::new(Vec::new(), policy(loose)),
            );
            assert!(e.is_err(), "{loose:?}");
        }
        // A folder still leaves it out, named by a rule or not.
        let loaded = load(std::slice::from_ref(&d), &named).unwrap();
        assert!(!loaded.text.contains("PRIVATE KEY"));

        // A folder reached through a link is judged where it really is: an `.ssh` folder's
        // files, and genai's own, stay home under any name.
        let ssh = root.join(".ssh");
        std::fs::create_dir(&ssh).unwrap();
        std::fs::write(ssh.join("config"), "Host corp\n").unwrap();
        std::fs::write(ssh.join("notes.md"), "ssh notes\n").unwrap();
        let via = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&ssh, via.path().join("mine")).unwrap();
        std::os::unix::fs::symlink(root, via.path().join("project")).unwrap();
        let base = via.path().display().to_string();
        let e = load(&[format!("{base}/mine")], &own).unwrap_err();
        assert!(e.message.contains("no text file"), "{}", e.message);
        let e = load(&[format!("{base}/mine/notes.md")], &own).unwrap_err();
        assert!(e.message.contains("holds secrets"), "{}", e.message);
        let loaded = load(&[format!("{base}/project")], &own).unwrap();
        assert!(!loaded.text.contains("sk-x"), "{}", loaded.text);
        assert!(
            loaded
                .skipped
                .iter()
                .any(|(p, why)| p.ends_with("project/keys.toml") && why.contains("genai's own")),
            "{:?}",
            loaded.skipped
        );
    }

    #[test]
    fn known_keys_are_masked_in_a_files_text() {
        crate::redact::remember("sk-context-files-test-0123456789");
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("config.toml");
        std::fs::write(&conf, "api_key = \"sk-context-files-test-0123456789\"\n").unwrap();
        let text = load(&[conf.display().to_string()], &Secrets::default())
            .unwrap()
            .text;
        assert!(text.contains("api_key = \"********\""), "{text}");
    }
}
