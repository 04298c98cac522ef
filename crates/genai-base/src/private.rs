//! Owner-only files: genai's data folder (the history, its `-wal` and `-shm`, chat's input
//! history, checkpoints, logs) is readable by its user alone, as the key file and the serve
//! token are. A folder is made (or tightened to) 0700, a file 0600, before anything is written.
//!
//! It owns these modes and nothing else: it never writes a file's contents, and it never
//! touches a folder or file it was not named (the user's project keeps its own modes).

use std::io;
use std::path::Path;

/// Makes `dir` (and missing parents) readable by its owner only, tightening an existing one
/// that others could read or enter.
pub fn dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    tighten(dir, 0o700)
}

/// Makes `file` exist and be readable and writable by its owner only, tightening an existing
/// one; its contents are left as they are.
pub fn file(file: &Path) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(file)?;
    tighten(file, 0o600)
}

/// Makes an existing `file` owner-only; a missing one is left missing.
pub fn existing_file(file: &Path) -> io::Result<()> {
    match tighten(file, 0o600) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        done => done,
    }
}

/// Clears the group's and others' bits of `path` when any is set.
#[cfg(unix)]
fn tighten(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let current = std::fs::metadata(path)?.permissions().mode();
    if current & 0o077 == 0 {
        return Ok(());
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn tighten(_: &Path, _: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &std::path::Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn folders_and_files_become_the_owners_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("a/genai");
        super::dir(&data).unwrap();
        assert_eq!(mode(&data), 0o700);
        // An existing open folder is tightened.
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        super::dir(&data).unwrap();
        assert_eq!(mode(&data), 0o700);
        let file = data.join("chat-history.txt");
        super::file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        std::fs::write(&file, "kept").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        super::file(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
        super::existing_file(&data.join("absent")).unwrap();
        assert!(!data.join("absent").exists());
    }
}
