//! The local models folder: GGUF files that provider kind `local` runs, and which one is the
//! default.
//!
//! The folder is `$GENAI_DATA_DIR/models`, else the XDG data folder's `genai/models` (the data
//! folder of [`Paths`]). A model is a file `NAME.gguf` in it; its name is the file name without
//! `.gguf`. Unfinished downloads are `NAME.gguf.part` and are never listed nor resolved.
//!
//! The default model is recorded in a small text file `default` in the folder that holds one
//! model name. With no such file, the only model present is the default; with several models
//! and no file there is no default. Removing the default model removes the file.
//!
//! This module only looks at and changes the folder. It must never download (that is
//! `download`) nor load a model (that is the `local` provider). `gguf` tells a model file
//! from anything else by its header, for both of them.

pub mod gguf;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::Paths;
use crate::error::{known, Error, ErrorKind, Result};

/// The file extension of a model.
pub(crate) const EXTENSION: &str = "gguf";
/// The file in the folder that names the default model.
pub(crate) const DEFAULT_FILE: &str = "default";

/// The models folder.
#[derive(Debug, Clone)]
pub struct ModelLibrary {
    dir: PathBuf,
}

/// One installed model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalModel {
    /// The file name without `.gguf`.
    pub name: String,
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    pub is_default: bool,
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(
        ErrorKind::Store,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// Fails unless `name` can be a model file name in the folder (no separators, no leading dot).
pub(crate) fn check_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.starts_with('.')
        || name.contains(['/', '\\'])
        || name.chars().any(|c| c.is_control())
        || name == DEFAULT_FILE;
    if bad {
        return Err(Error::invalid_params(format!(
            "`{name}` is not a valid model name (a file name without `/`, not starting with `.`)"
        )));
    }
    Ok(())
}

impl ModelLibrary {
    /// The folder of these paths (it is created when a model is added, not here).
    pub fn open(paths: &Paths) -> ModelLibrary {
        ModelLibrary::at(paths.data_dir.join("models"))
    }

    /// A library in any folder.
    pub fn at(dir: impl Into<PathBuf>) -> ModelLibrary {
        ModelLibrary { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the folder if needed, the user's alone as the rest of the data folder.
    pub(crate) fn ensure_dir(&self) -> Result<()> {
        crate::private::dir(&self.dir).map_err(|e| io_err("create", &self.dir, e))
    }

    /// Where a model of this name lives (whether or not it exists).
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.{EXTENSION}"))
    }

    /// The names of the `.gguf` files, sorted.
    fn names(&self) -> Result<Vec<(String, PathBuf, u64)>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("read", &self.dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_err("read", &self.dir, e))?;
            let path = entry.path();
            let Some(name) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(&format!(".{EXTENSION}")))
            else {
                continue;
            };
            if name.is_empty() || name.starts_with('.') {
                continue;
            }
            let meta = std::fs::metadata(&path).map_err(|e| io_err("read", &path, e))?;
            if meta.is_file() {
                out.push((name.to_string(), path, meta.len()));
            }
        }
        out.sort();
        Ok(out)
    }

    /// The name recorded in the `default` file, if any.
    fn recorded_default(&self) -> Result<Option<String>> {
        let file = self.dir.join(DEFAULT_FILE);
        match std::fs::read_to_string(&file) {
            Ok(s) if s.trim().is_empty() => Ok(None),
            Ok(s) => Ok(Some(s.trim().to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err("read", &file, e)),
        }
    }

    /// The name of the default model: the recorded one if it is present, else the only model.
    pub fn default_name(&self) -> Result<Option<String>> {
        let names = self.names()?;
        if let Some(name) = self.recorded_default()? {
            if names.iter().any(|(n, _, _)| *n == name) {
                return Ok(Some(name));
            }
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "the default local model `{name}` is not in {}: choose another with `genai models default NAME` (installed: {})",
                    self.dir.display(),
                    known(names.iter().map(|(n, _, _)| n.as_str()))
                ),
            ));
        }
        Ok(match names.as_slice() {
            [(only, _, _)] => Some(only.clone()),
            _ => None,
        })
    }

    /// The installed models, sorted by name.
    pub fn list(&self) -> Result<Vec<LocalModel>> {
        let default = self.default_name().ok().flatten();
        Ok(self
            .names()?
            .into_iter()
            .map(|(name, path, size)| LocalModel {
                is_default: default.as_deref() == Some(name.as_str()),
                name,
                path,
                size,
            })
            .collect())
    }

    /// An existing file path as given, else `NAME` or `NAME.gguf` in the folder.
    pub fn resolve(&self, name_or_path: &str) -> Result<PathBuf> {
        let given = Path::new(name_or_path);
        if !name_or_path.is_empty() && given.is_file() {
            return Ok(given.to_path_buf());
        }
        if check_name(name_or_path).is_ok() {
            for candidate in [self.path_of(name_or_path), self.dir.join(name_or_path)] {
                if candidate.is_file() {
                    return Ok(candidate);
                }
            }
        }
        let names = self.names()?;
        Err(Error::new(
            ErrorKind::UnknownComponent,
            format!(
                "no local model `{name_or_path}`: it is not a file, nor a model in {} (installed: {}); add one with `genai models pull demo` or `genai models pull URL`",
                self.dir.display(),
                known(names.iter().map(|(n, _, _)| n.as_str()))
            ),
        ))
    }

    /// The path of the default model, if there is one.
    pub fn default_model(&self) -> Result<Option<PathBuf>> {
        Ok(self.default_name()?.map(|n| self.path_of(&n)))
    }

    /// Records `name` (a model in the folder) as the default.
    pub fn set_default(&self, name: &str) -> Result<()> {
        let name = self.installed_name(name)?;
        let file = self.dir.join(DEFAULT_FILE);
        let tmp = self.dir.join(format!(".{DEFAULT_FILE}.tmp"));
        std::fs::write(&tmp, format!("{name}\n")).map_err(|e| io_err("write", &tmp, e))?;
        std::fs::rename(&tmp, &file).map_err(|e| io_err("write", &file, e))
    }

    /// Deletes a model (and its unfinished download); forgets it as the default.
    pub fn remove(&self, name: &str) -> Result<()> {
        let name = self.installed_name(name)?;
        let was_default = self.recorded_default()?.as_deref() == Some(name.as_str());
        let path = self.path_of(&name);
        std::fs::remove_file(&path).map_err(|e| io_err("remove", &path, e))?;
        let part = part_path(&path);
        let _ = std::fs::remove_file(&part);
        let mut marker = part.into_os_string();
        marker.push(".source");
        let _ = std::fs::remove_file(PathBuf::from(marker));
        if was_default {
            let file = self.dir.join(DEFAULT_FILE);
            std::fs::remove_file(&file).map_err(|e| io_err("remove", &file, e))?;
        }
        Ok(())
    }

    /// The name of an installed model given by name or `NAME.gguf`.
    fn installed_name(&self, name: &str) -> Result<String> {
        let name = name.strip_suffix(&format!(".{EXTENSION}")).unwrap_or(name);
        check_name(name)?;
        if self.path_of(name).is_file() {
            return Ok(name.to_string());
        }
        let names = self.names()?;
        Err(Error::new(
            ErrorKind::InvalidParams,
            format!(
                "no model named `{name}` in {} (installed: {})",
                self.dir.display(),
                known(names.iter().map(|(n, _, _)| n.as_str()))
            ),
        ))
    }
}

/// The unfinished download beside a model file: `NAME.gguf.part`.
pub(crate) fn part_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".part");
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib() -> (tempfile::TempDir, ModelLibrary) {
        let d = tempfile::tempdir().unwrap();
        let lib = ModelLibrary::at(d.path().join("models"));
        (d, lib)
    }

    fn add(lib: &ModelLibrary, name: &str, bytes: &[u8]) {
        lib.ensure_dir().unwrap();
        std::fs::write(lib.path_of(name), bytes).unwrap();
    }

    #[test]
    fn open_uses_the_data_dir() {
        let paths = Paths {
            config_dir: "/c".into(),
            data_dir: "/d/genai".into(),
        };
        assert_eq!(
            ModelLibrary::open(&paths).dir(),
            Path::new("/d/genai/models")
        );
    }

    #[test]
    fn a_missing_folder_is_empty() {
        let (_d, lib) = lib();
        assert!(lib.list().unwrap().is_empty());
        assert_eq!(lib.default_model().unwrap(), None);
        let e = lib.resolve("gemma").unwrap_err();
        assert!(e.message.contains("installed: none"), "{}", e.message);
    }

    #[test]
    fn lists_gguf_files_only_with_sizes_and_the_only_one_is_default() {
        let (_d, lib) = lib();
        add(&lib, "b", b"12345");
        std::fs::write(lib.dir().join("x.gguf.part"), b"1").unwrap();
        std::fs::write(lib.dir().join("notes.txt"), b"1").unwrap();
        std::fs::write(lib.dir().join(".hidden.gguf"), b"1").unwrap();
        let l = lib.list().unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(
            (l[0].name.as_str(), l[0].size, l[0].is_default),
            ("b", 5, true)
        );
        assert_eq!(lib.default_model().unwrap(), Some(lib.path_of("b")));
        add(&lib, "a", b"1");
        assert_eq!(
            lib.default_model().unwrap(),
            None,
            "two models, none chosen"
        );
        let names: Vec<String> = lib.list().unwrap().into_iter().map(|m| m.name).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn set_default_records_it_and_remove_forgets_it() {
        let (_d, lib) = lib();
        add(&lib, "a", b"1");
        add(&lib, "b", b"2");
        lib.set_default("b.gguf").unwrap();
        assert_eq!(lib.default_model().unwrap(), Some(lib.path_of("b")));
        assert!(lib
            .list()
            .unwrap()
            .iter()
            .any(|m| m.name == "b" && m.is_default));
        let e = lib.set_default("c").unwrap_err();
        assert!(e.message.contains("installed: a, b"), "{}", e.message);
        std::fs::write(part_path(&lib.path_of("b")), b"x").unwrap();
        lib.remove("b").unwrap();
        assert!(!lib.path_of("b").exists());
        assert!(!part_path(&lib.path_of("b")).exists());
        assert!(!lib.dir().join(DEFAULT_FILE).exists());
        assert_eq!(lib.default_model().unwrap(), Some(lib.path_of("a")));
        assert_eq!(lib.remove("b").unwrap_err().kind, ErrorKind::InvalidParams);
    }

    #[test]
    fn a_recorded_default_that_vanished_is_a_clear_error() {
        let (_d, lib) = lib();
        add(&lib, "a", b"1");
        std::fs::write(lib.dir().join(DEFAULT_FILE), "gone\n").unwrap();
        let e = lib.default_model().unwrap_err();
        assert!(
            e.message.contains("`gone`") && e.message.contains("installed: a"),
            "{}",
            e.message
        );
    }

    #[test]
    fn resolve_takes_paths_names_and_file_names() {
        let (d, lib) = lib();
        add(&lib, "gemma", b"1");
        assert_eq!(lib.resolve("gemma").unwrap(), lib.path_of("gemma"));
        assert_eq!(lib.resolve("gemma.gguf").unwrap(), lib.path_of("gemma"));
        let outside = d.path().join("elsewhere.bin");
        std::fs::write(&outside, b"1").unwrap();
        assert_eq!(lib.resolve(outside.to_str().unwrap()).unwrap(), outside);
        let e = lib.resolve("../models/nope").unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnknownComponent);
        assert!(e.message.contains("installed: gemma"), "{}", e.message);
    }

    #[test]
    fn names_with_separators_are_refused() {
        for bad in ["", "a/b", ".x", "default"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_name("gemma-3-270m-q4_k_m").is_ok());
    }
}
