//! Tests of context files: files refused clearly, folders walked within caps, secret files left
//! out, known keys masked.

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
