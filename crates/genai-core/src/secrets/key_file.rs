//! The key file: `keys.toml` in the config folder, for machines with no keyring service (CI,
//! containers, SSH sessions), as `gh` and the AWS CLI keep theirs. The file is readable only
//! by its owner (0600) and a folder genai creates for it is 0700; a file others can read is
//! refused rather than used.
//!
//! It owns reading and writing that file (atomically, by a rename). It must never print a key
//! nor put one in an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Secret;
use crate::error::{Error, ErrorKind, Result};

/// The key file's name in the config folder.
pub(crate) const FILE_NAME: &str = "keys.toml";

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFile {
    #[serde(default)]
    keys: BTreeMap<String, String>,
}

/// The key file of this user: `$GENAI_CONFIG_DIR/keys.toml`, else the XDG config folder's.
pub fn path() -> Result<PathBuf> {
    Ok(crate::config::Paths::from_env()?.config_dir.join(FILE_NAME))
}

fn fail(path: &Path, what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::MissingCredentials,
        format!("{what} the key file {}: {e}", path.display()),
    )
}

fn read(path: &Path) -> Result<KeyFile> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(KeyFile::default()),
        Err(e) => return Err(fail(path, "cannot read", e)),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| fail(path, "cannot read", e))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(Error::new(
                ErrorKind::MissingCredentials,
                format!(
                    "the key file {} can be read by other users (mode {:o}): run `chmod 600 {}`",
                    path.display(),
                    mode & 0o777,
                    path.display()
                ),
            ));
        }
    }
    // The parse error is left out: it could quote a line of the file, and so a key.
    toml::from_str(&text).map_err(|_| {
        Error::new(
            ErrorKind::MissingCredentials,
            format!(
                "the key file {} is not a genai key file (a `[keys]` table of NAME = \"KEY\")",
                path.display()
            ),
        )
    })
}

fn write(path: &Path, file: &KeyFile) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.exists() {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir).map_err(|e| fail(path, "cannot create", e))?;
    }
    let text = format!(
        "# API keys of genai, readable only by you. Written by `genai keys set NAME --file`.\n{}",
        toml::to_string(file).map_err(|e| Error::internal(format!("key file: {e}")))?
    );
    let tmp = path.with_extension("toml.tmp");
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let result = (|| {
        use std::io::Write;
        let mut f = o.open(&tmp)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(path, "cannot write", e)
    })
}

/// The key of `name` in the file at `path`, if it holds one.
pub(crate) fn get_in(path: &Path, name: &str) -> Result<Option<Secret>> {
    Ok(read(path)?.keys.remove(name).map(Secret::new))
}

/// Stores the key of `name` in the file at `path`.
pub fn set_in(path: &Path, name: &str, key: &Secret) -> Result<()> {
    let mut file = read(path)?;
    file.keys.insert(name.to_string(), key.expose().to_string());
    write(path, &file)
}

/// Removes the key of `name`; `Ok(false)` when the file held none.
pub fn delete_in(path: &Path, name: &str) -> Result<bool> {
    let mut file = read(path)?;
    if file.keys.remove(name).is_none() {
        return Ok(false);
    }
    write(path, &file)?;
    Ok(true)
}

/// The names the file holds keys for.
pub fn names_in(path: &Path) -> Result<Vec<String>> {
    Ok(read(path)?.keys.into_keys().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_in_a_file_only_its_owner_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf").join(FILE_NAME);
        assert!(get_in(&path, "openai").unwrap().is_none());
        set_in(&path, "openai", &Secret::new("sk-one")).unwrap();
        set_in(&path, "plugin:events", &Secret::new("k\"two\n")).unwrap();
        assert_eq!(get_in(&path, "openai").unwrap().unwrap().expose(), "sk-one");
        assert_eq!(
            get_in(&path, "plugin:events").unwrap().unwrap().expose(),
            "k\"two\n"
        );
        assert_eq!(names_in(&path).unwrap(), ["openai", "plugin:events"]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(path.parent().unwrap()), 0o700);
            // A file others can read is refused, saying how to fix it.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let e = get_in(&path, "openai").unwrap_err();
            assert!(e.message.contains("chmod 600"), "{}", e.message);
            assert!(!e.message.contains("sk-one"));
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert!(delete_in(&path, "openai").unwrap());
        assert!(!delete_in(&path, "openai").unwrap());
        assert!(get_in(&path, "openai").unwrap().is_none());
        assert_eq!(names_in(&path).unwrap(), ["plugin:events"]);
        // A broken file is refused without quoting it.
        std::fs::write(&path, "keys = \"sk-leak\"").unwrap();
        let e = get_in(&path, "x").unwrap_err();
        assert!(!e.message.contains("sk-leak"), "{}", e.message);
    }
}
