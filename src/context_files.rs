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

use std::io::Read;
use std::path::Path;

use crate::error::{Error, ErrorKind};
use crate::file_context::{fenced, fenced_as, language_of_mime};

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
pub fn load(specs: &[String]) -> Result<Loaded, Error> {
    load_in(Path::new(""), specs)
}

/// [`load`] with paths relative to `base` (shown as given, or relative to `base`).
pub fn load_in(base: &Path, specs: &[String]) -> Result<Loaded, Error> {
    if specs.iter().filter(|s| *s == "-").count() > 1 {
        return Err(refuse("-f - (stdin) can be given once".into()));
    }
    let mut reader = Reader::default();
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

#[derive(Default)]
struct Reader {
    blocks: Vec<String>,
    skipped: Vec<(String, String)>,
    total: u64,
}

impl Reader {
    /// Adds one named file, refusing it when it would pass the total cap.
    fn add(&mut self, name: &str, lang: &str, text: String) -> Result<(), Error> {
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
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            if self.total + size.min(MAX_FILE_BYTES) > MAX_TOTAL_BYTES {
                self.skipped.push((
                    shown,
                    format!("past the limit of {} MiB in all", MAX_TOTAL_BYTES >> 20),
                ));
                continue;
            }
            match read_text(entry.path(), &shown) {
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
            let e = load(std::slice::from_ref(&path)).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidParams);
            assert!(e.message.contains(says), "{path}: {}", e.message);
        }
        let ok = dir.path().join("c.py");
        std::fs::write(&ok, "print(1)\n").unwrap();
        let text = load(&[ok.display().to_string(), ok.display().to_string()])
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
        let loaded = load(std::slice::from_ref(&d)).unwrap();
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
        let e = load(&[empty.path().display().to_string()]).unwrap_err();
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
        let loaded = load(std::slice::from_ref(&d)).unwrap();
        assert_eq!(loaded.text.matches(":\n```\n").count(), 4);
        assert_eq!(loaded.skipped.len(), 1);
        assert!(loaded.skipped[0].0.ends_with("f4.txt"));
        assert!(loaded.skipped[0].1.contains("in all"));
        let named: Vec<String> = (0..5).map(|i| format!("{d}/f{i}.txt")).collect();
        let e = load(&named).unwrap_err();
        assert!(e.message.contains("f4.txt would take"), "{}", e.message);
    }
}
