//! Tests of the root and its confinement: relative, absolute and new paths, `..`, and symlinks.

use super::*;

fn setup() -> (tempfile::TempDir, tempfile::TempDir, Root) {
    let work = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(work.path().join("src/inner")).expect("mkdir");
    std::fs::write(work.path().join("src/a.rs"), "fn a() {}\n").expect("write");
    std::fs::write(outside.path().join("secret.txt"), "x").expect("write");
    let root = Root::new(work.path()).expect("root");
    (work, outside, root)
}

fn refused(root: &Root, given: &str) -> String {
    match root.resolve(given) {
        Ok(p) => panic!("`{given}` was allowed as {}", p.display()),
        Err(e) => e.message,
    }
}

#[test]
fn root_itself_is_dot_and_empty() {
    let (_w, _o, root) = setup();
    assert_eq!(root.resolve(".").expect("dot"), root.path());
    assert_eq!(root.resolve("").expect("empty"), root.path());
    assert_eq!(root.resolve("src/..").expect("src/.."), root.path());
    assert_eq!(root.relative(root.path()), ".");
}

#[test]
fn relative_paths_inside_resolve_under_the_root() {
    let (_w, _o, root) = setup();
    let p = root.resolve("./src/inner/../a.rs").expect("inside");
    assert_eq!(p, root.path().join("src/a.rs"));
    assert_eq!(root.relative(&p), "src/a.rs");
}

#[test]
fn dot_dot_leaving_the_root_is_refused() {
    let (_w, _o, root) = setup();
    let msg = refused(&root, "../x");
    assert!(
        msg.starts_with("`../x` is outside the workspace root "),
        "{msg}"
    );
    assert!(msg.ends_with(": tools reach only files under it"), "{msg}");
    refused(&root, "a/../../x");
    refused(&root, "src/../../src");
}

#[test]
fn absolute_paths_inside_are_allowed_and_outside_refused() {
    let (_w, outside, root) = setup();
    let inside = root.path().join("src/a.rs");
    let given = inside.to_str().expect("utf8");
    assert_eq!(root.resolve(given).expect("inside"), inside);
    let out = outside.path().join("secret.txt");
    refused(&root, out.to_str().expect("utf8"));
    refused(&root, "/etc/passwd");
    let sneaky = format!("{}/../x", root.path().display());
    refused(&root, &sneaky);
}

#[test]
fn a_new_path_is_checked_through_its_existing_ancestor() {
    let (_w, _o, root) = setup();
    let p = root.resolve("src/new/deeper/file.md").expect("new");
    assert_eq!(p, root.path().join("src/new/deeper/file.md"));
}

#[test]
fn a_missing_root_is_an_error() {
    let err = Root::new(Path::new("/no/such/folder/anywhere")).expect_err("missing");
    assert!(
        err.message.contains("/no/such/folder/anywhere"),
        "{}",
        err.message
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("f");
    std::fs::write(&file, "x").expect("write");
    let err = Root::new(&file).expect_err("a file");
    assert!(err.message.contains("not a folder"), "{}", err.message);
}

#[cfg(unix)]
#[test]
fn symlinks_pointing_outside_are_refused() {
    use std::os::unix::fs::symlink;
    let (work, outside, root) = setup();
    symlink(
        outside.path().join("secret.txt"),
        work.path().join("link.txt"),
    )
    .expect("ln");
    symlink(outside.path(), work.path().join("out")).expect("ln");
    symlink("/no/such/target", work.path().join("dangling")).expect("ln");
    let msg = refused(&root, "link.txt");
    assert!(msg.contains("through a symlink that leads out"), "{msg}");
    refused(&root, "out");
    refused(&root, "out/secret.txt");
    refused(&root, "out/new/nested/file.txt");
    let msg = refused(&root, "dangling");
    assert!(msg.contains("points nowhere"), "{msg}");
    // An absolute path elsewhere: plainly outside, and where links lead is never said.
    let elsewhere = outside.path().join("secret.txt");
    let msg = refused(&root, elsewhere.to_str().unwrap());
    assert!(!msg.contains("symlink"), "{msg}");
    let msg = refused(&root, "link.txt");
    assert!(
        !msg.contains(&elsewhere.display().to_string()[1..]),
        "{msg}"
    );
}

#[cfg(unix)]
#[test]
fn symlinks_inside_pointing_inside_are_allowed() {
    use std::os::unix::fs::symlink;
    let (work, _o, root) = setup();
    symlink(work.path().join("src/a.rs"), work.path().join("alias.rs")).expect("ln");
    symlink("src", work.path().join("code")).expect("ln");
    assert_eq!(
        root.resolve("alias.rs").expect("alias"),
        root.path().join("src/a.rs")
    );
    assert_eq!(
        root.resolve("code/new.rs").expect("through folder link"),
        root.path().join("src/new.rs")
    );
}

#[cfg(unix)]
#[test]
fn a_root_reached_through_a_symlink_is_canonical() {
    use std::os::unix::fs::symlink;
    let (work, outside, _root) = setup();
    let alias = outside.path().join("alias");
    symlink(work.path(), &alias).expect("ln");
    let root = Root::new(&alias).expect("root via link");
    assert_eq!(
        root.path(),
        std::fs::canonicalize(work.path()).expect("canon")
    );
    let via_alias = alias.join("src/a.rs");
    let p = root
        .resolve(via_alias.to_str().expect("utf8"))
        .expect("inside via alias");
    assert_eq!(root.relative(&p), "src/a.rs");
}
