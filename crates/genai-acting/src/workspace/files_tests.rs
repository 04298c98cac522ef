//! Tests of the file tools: reading with line numbers and limits, binary and large files, planned
//! edits and writes with their diffs, and applying them.

use super::*;

/// A workspace over a fresh temporary folder (also `search.rs`'s tests').
pub(in crate::workspace) fn workspace() -> (tempfile::TempDir, Root) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Root::new(dir.path()).expect("root");
    (dir, root)
}

/// Writes `content` at `rel` under `dir`, making its folders.
pub(in crate::workspace) fn put(dir: &tempfile::TempDir, rel: &str, content: &[u8]) {
    let path = dir.path().join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, content).expect("write");
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn read_numbers_lines_like_cat_n() {
    let (dir, root) = workspace();
    put(&dir, "a.txt", b"alpha\r\nbeta\ngamma");
    let text = read_file(&root, "a.txt", None, None).expect("read");
    assert_eq!(text, "     1\talpha\n     2\tbeta\n     3\tgamma");
}

#[test]
fn read_with_offset_and_limit_says_which_lines() {
    let (dir, root) = workspace();
    put(&dir, "a.txt", numbered(10).as_bytes());
    let text = read_file(&root, "a.txt", Some(3), Some(2)).expect("read");
    assert_eq!(
        text,
        "     3\tline 3\n     4\tline 4\n(lines 3-4 of 10; read on with offset 5)"
    );
    let tail = read_file(&root, "a.txt", Some(9), None).expect("read");
    assert_eq!(tail, "     9\tline 9\n    10\tline 10\n(lines 9-10 of 10)");
    let err = read_file(&root, "a.txt", Some(11), None).expect_err("past the end");
    assert!(err.message.contains("past the end"), "{}", err.message);
    read_file(&root, "a.txt", None, Some(0)).expect_err("limit 0");
}

#[test]
fn read_defaults_to_2000_lines_and_cuts_long_lines() {
    let (dir, root) = workspace();
    let mut content = "x".repeat(2500);
    content.push('\n');
    content.push_str(&numbered(2100));
    put(&dir, "big.txt", content.as_bytes());
    let text = read_file(&root, "big.txt", None, None).expect("read");
    let first = text.lines().next().expect("a line");
    assert_eq!(
        first,
        format!("     1\t{} [line cut at 2000 chars]", "x".repeat(2000))
    );
    assert!(
        text.ends_with("(lines 1-2000 of 2101; read on with offset 2001)"),
        "{text}"
    );
}

#[test]
fn a_binary_file_is_described_not_dumped() {
    let (dir, root) = workspace();
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
    png.extend(std::iter::repeat_n(7u8, 12_333));
    put(&dir, "img.png", &png);
    let text = read_file(&root, "img.png", None, None).expect("read");
    assert_eq!(text, "binary file, 12,345 bytes, looks like PNG image");
    put(&dir, "latin1.txt", b"caf\xe9\n");
    let text = read_file(&root, "latin1.txt", None, None).expect("read");
    assert_eq!(text, "binary file, 5 bytes, not UTF-8 text");
    put(&dir, "nul.bin", b"ab\0cd");
    let text = read_file(&root, "nul.bin", None, None).expect("read");
    assert_eq!(text, "binary file, 5 bytes, of unknown type");
}

#[test]
fn a_file_over_10_mib_is_read_only_in_parts() {
    let (dir, root) = workspace();
    let line = format!("{}\n", "z".repeat(99));
    let content = line.repeat(110_000); // 11,000,000 bytes
    put(&dir, "huge.txt", content.as_bytes());
    let err = read_file(&root, "huge.txt", None, None).expect_err("whole");
    assert!(
        err.message.contains("give offset and limit"),
        "{}",
        err.message
    );
    let part = read_file(&root, "huge.txt", Some(109_999), Some(5)).expect("part");
    assert!(
        part.starts_with(&format!("109999\t{}", "z".repeat(99))),
        "{part}"
    );
    assert!(part.ends_with("(lines 109999-110000 of 110000)"), "{part}");
    plan_edit(&root, "huge.txt", "zz", "y").expect_err("too big to edit");
}

#[test]
fn reading_a_folder_or_a_missing_file_says_what_to_do() {
    let (dir, root) = workspace();
    put(&dir, "src/a.rs", b"x");
    let err = read_file(&root, "src", None, None).expect_err("folder");
    assert!(err.message.contains("use list"), "{}", err.message);
    let err = read_file(&root, "nope.rs", None, None).expect_err("missing");
    assert!(
        err.message.contains("`nope.rs` does not exist"),
        "{}",
        err.message
    );
    read_file(&root, "../x", None, None).expect_err("outside");
}

#[test]
fn edit_replaces_the_one_occurrence_with_an_exact_diff() {
    let (dir, root) = workspace();
    put(
        &dir,
        "src/a.rs",
        b"one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n",
    );
    let change = plan_edit(&root, "src/a.rs", "five", "FIVE").expect("plan");
    assert_eq!(
        change.diff,
        "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -2,7 +2,7 @@\n two\n three\n four\n-five\n+FIVE\n \
         six\n seven\n eight\n"
    );
    assert!(!change.created);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/a.rs")).expect("read"),
        "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n",
        "nothing is written before apply"
    );
    let answer = apply(&root, &change).expect("apply");
    assert_eq!(answer, format!("edited src/a.rs\n{}", change.diff));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/a.rs")).expect("read"),
        "one\ntwo\nthree\nfour\nFIVE\nsix\nseven\neight\n"
    );
}

#[test]
fn edit_not_found_many_or_empty_is_refused() {
    let (dir, root) = workspace();
    put(&dir, "a.txt", b"x = 1\nx = 1\naaa\n");
    let err = plan_edit(&root, "a.txt", "y = 2", "z").expect_err("none");
    assert!(err.message.contains("not found"), "{}", err.message);
    assert!(
        err.message.contains("read the file again"),
        "{}",
        err.message
    );
    let err = plan_edit(&root, "a.txt", "x = 1", "x = 2").expect_err("many");
    assert!(err.message.contains("occurs 2 times"), "{}", err.message);
    let err = plan_edit(&root, "a.txt", "aa", "b").expect_err("overlapping");
    assert!(err.message.contains("occurs 2 times"), "{}", err.message);
    let err = plan_edit(&root, "a.txt", "", "b").expect_err("empty");
    assert!(err.message.contains("write_file"), "{}", err.message);
    let err = plan_edit(&root, "new.txt", "a", "b").expect_err("missing");
    assert!(
        err.message.contains("use write_file to create it"),
        "{}",
        err.message
    );
}

#[test]
fn edit_refuses_binary_files_and_folders() {
    let (dir, root) = workspace();
    put(&dir, "blob.bin", b"ab\0cd");
    let err = plan_edit(&root, "blob.bin", "ab", "xy").expect_err("binary");
    assert!(err.message.contains("binary file"), "{}", err.message);
    put(&dir, "src/a.rs", b"");
    let err = plan_edit(&root, "src", "a", "b").expect_err("folder");
    assert!(err.message.contains("is a folder"), "{}", err.message);
    let err = plan_edit(&root, "src/a.rs", "same", "same").expect_err("no-op");
    assert!(err.message.contains("nothing to change"), "{}", err.message);
}

#[test]
fn edit_matches_lf_text_in_a_crlf_file() {
    let (dir, root) = workspace();
    put(&dir, "w.txt", b"a\r\nb\r\nc\r\n");
    let change = plan_edit(&root, "w.txt", "a\nb", "a\nB").expect("plan");
    assert_eq!(change.bytes, b"a\r\nB\r\nc\r\n");
}

#[test]
fn write_creates_a_new_file_in_new_folders() {
    let (dir, root) = workspace();
    let change = plan_write(&root, "docs/notes/new.md", "# Notes\nhello\n").expect("plan");
    assert!(change.created);
    assert_eq!(
        change.diff,
        "--- /dev/null\n+++ b/docs/notes/new.md\n@@ -0,0 +1,2 @@\n+# Notes\n+hello\n"
    );
    assert!(
        !dir.path().join("docs").exists(),
        "nothing is written before apply"
    );
    let answer = apply(&root, &change).expect("apply");
    assert!(answer.starts_with("created docs/notes/new.md (2 lines)\n--- /dev/null"));
    let written = std::fs::read_to_string(dir.path().join("docs/notes/new.md")).expect("read");
    assert_eq!(written, "# Notes\nhello\n");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("docs/notes"))
        .expect("readdir")
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary file is left");
}

#[test]
fn write_over_an_existing_file_diffs_against_it() {
    let (dir, root) = workspace();
    put(&dir, "a.txt", b"old\n");
    let change = plan_write(&root, "a.txt", "new\n").expect("plan");
    assert!(!change.created);
    assert_eq!(
        change.diff,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n"
    );
    plan_write(&root, ".", "x").expect_err("a folder");
}

#[test]
fn apply_cuts_a_long_diff() {
    let (_dir, root) = workspace();
    let content = numbered(5000);
    let change = plan_write(&root, "long.txt", &content).expect("plan");
    let answer = apply(&root, &change).expect("apply");
    assert!(answer.ends_with("(diff cut at 20,000 chars: read the file to see the rest)"));
    assert!(answer.chars().count() < MAX_DIFF_CHARS + 200);
}

#[cfg(unix)]
#[test]
fn apply_keeps_the_mode_of_the_file() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, root) = workspace();
    put(&dir, "run.sh", b"echo hi\n");
    let path = dir.path().join("run.sh");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).expect("chmod");
    let change = plan_edit(&root, "run.sh", "hi", "hello").expect("plan");
    apply(&root, &change).expect("apply");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o7777;
    assert_eq!(mode, 0o751);
    let created = plan_write(&root, "fresh.txt", "x").expect("plan");
    apply(&root, &created).expect("apply");
    let mode = std::fs::metadata(dir.path().join("fresh.txt"))
        .expect("meta")
        .permissions()
        .mode();
    assert_ne!(
        mode & 0o044,
        0,
        "a new file is not private like a temporary file"
    );
}

#[cfg(unix)]
#[test]
fn apply_refuses_a_folder_swapped_for_a_symlink_outside() {
    let (dir, root) = workspace();
    let outside = tempfile::tempdir().expect("tempdir");
    put(&dir, "sub/keep.txt", b"");
    let change = plan_write(&root, "sub/new.txt", "x").expect("plan");
    std::fs::remove_dir_all(dir.path().join("sub")).expect("rm");
    std::os::unix::fs::symlink(outside.path(), dir.path().join("sub")).expect("ln");
    let err = apply(&root, &change).expect_err("swapped");
    assert!(
        err.message.contains("outside the workspace root"),
        "{}",
        err.message
    );
    assert!(!outside.path().join("new.txt").exists());
}

#[test]
fn helpers_count_and_cut() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(cut_chars("héllo", 2), ("hé", true));
    assert_eq!(cut_chars("hé", 2), ("hé", false));
    assert_eq!(occurrences("aaa", "aa"), vec![0, 1]);
}
