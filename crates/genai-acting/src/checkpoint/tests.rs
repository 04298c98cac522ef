//! Tests of checkpoints and undo: bytes and modes restored exactly, created and deleted files,
//! files changed since refused, and which turn an undo takes.

use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;

struct Fixture {
    _data: tempfile::TempDir,
    data_dir: PathBuf,
    root_dir: tempfile::TempDir,
    cp: Checkpoints,
}

impl Fixture {
    fn new() -> Fixture {
        let data = tempfile::tempdir().unwrap();
        let root_dir = tempfile::tempdir().unwrap();
        let data_dir = data.path().to_path_buf();
        let cp = Checkpoints::open(&data_dir).unwrap();
        Fixture {
            _data: data,
            data_dir,
            root_dir,
            cp,
        }
    }

    fn root(&self) -> &Path {
        self.root_dir.path()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// What a tool does: checkpoint, write (creating folders), record.
    fn write(&self, turn: &TurnKey, rel: &str, bytes: &[u8], mode: u32) {
        let path = self.path(rel);
        self.cp.before_change(turn, self.root(), &path).unwrap();
        write_file(&path, bytes, mode);
        self.cp.after_change(turn, &path).unwrap();
    }

    fn delete(&self, turn: &TurnKey, rel: &str) {
        let path = self.path(rel);
        self.cp.before_change(turn, self.root(), &path).unwrap();
        fs::remove_file(&path).unwrap();
        self.cp.after_change(turn, &path).unwrap();
    }

    fn read(&self, rel: &str) -> Option<(Vec<u8>, u32)> {
        let path = self.path(rel);
        let bytes = fs::read(&path).ok()?;
        Some((bytes, mode(&path)))
    }

    fn objects(&self) -> BTreeSet<String> {
        fs::read_dir(self.data_dir.join("checkpoints/objects"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn undo_of(&self, conversation: &str) -> Result<Undone> {
        self.cp.undo(
            UndoTarget {
                conversation: Some(conversation.into()),
                turn: None,
                project: None,
            },
            false,
        )
    }
}

fn turn(c: &str, t: &str) -> TurnKey {
    TurnKey {
        conversation_id: c.into(),
        turn_id: t.into(),
    }
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    if path.exists() {
        fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
    }
    fs::write(path, bytes).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Every entry under `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            if p.is_dir() {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn undo_restores_bytes_and_mode_exactly_and_writes_nothing_else() {
    let f = Fixture::new();
    let old: Vec<u8> = vec![0xff, 0xfe, 0, b'\n', 0x80, b'a', b'\r', b'\n'];
    write_file(&f.path("bin.dat"), &old, 0o755);
    let t = turn("c1", "01KAAA");
    f.write(&t, "bin.dat", b"new text", 0o600);
    f.write(&t, "bin.dat", b"newer text", 0o644);
    assert_eq!(f.read("bin.dat").unwrap(), (b"newer text".to_vec(), 0o644));

    let undone = f.undo_of("c1").unwrap();
    assert_eq!(f.read("bin.dat").unwrap(), (old, 0o755));
    assert_eq!(undone.turn_id, "01KAAA");
    assert_eq!(
        undone.files,
        vec![UndoneFile {
            path: "bin.dat".into(),
            action: UndoAction::Restored
        }]
    );
    assert_eq!(
        tree(f.root()),
        vec!["bin.dat"],
        "no snapshot or temporary file left"
    );
}

#[test]
fn a_created_file_and_the_folders_it_needed_are_removed() {
    let f = Fixture::new();
    fs::create_dir(f.path("src")).unwrap();
    let t = turn("c1", "t1");
    f.write(&t, "src/new/deep/x.rs", b"fn main() {}", 0o644);
    f.write(&t, "src/new/y.rs", b"", 0o644);
    f.write(&t, "top.txt", b"hello", 0o644);

    let undone = f.undo_of("c1").unwrap();
    assert_eq!(tree(f.root()), vec!["src"]);
    let mut removed = undone.removed_folders.clone();
    removed.sort();
    assert_eq!(removed, vec!["src/new", "src/new/deep"]);
    assert!(undone.files.iter().all(|f| f.action == UndoAction::Removed));
}

#[test]
fn a_created_folder_with_other_files_in_it_stays() {
    let f = Fixture::new();
    let t = turn("c1", "t1");
    f.write(&t, "gen/a.txt", b"a", 0o644);
    // Something else (a command the turn ran) put a file there too.
    fs::write(f.path("gen/other.txt"), b"not the turn's").unwrap();
    let undone = f.undo_of("c1").unwrap();
    assert!(undone.removed_folders.is_empty());
    assert_eq!(tree(f.root()), vec!["gen", "gen/other.txt"]);
}

#[test]
fn a_deleted_file_comes_back_and_a_file_written_where_none_was_goes() {
    let f = Fixture::new();
    write_file(&f.path("x"), b"original", 0o640);
    f.delete(&turn("c1", "t1"), "x");
    f.write(&turn("c1", "t2"), "x", b"brand new", 0o644);

    let second = f.undo_of("c1").unwrap();
    assert_eq!(second.turn_id, "t2");
    assert_eq!(second.files[0].action, UndoAction::Removed);
    assert_eq!(f.read("x"), None);
    let first = f.undo_of("c1").unwrap();
    assert_eq!(first.turn_id, "t1");
    assert_eq!(first.files[0].action, UndoAction::Restored);
    assert_eq!(f.read("x").unwrap(), (b"original".to_vec(), 0o640));
}

#[test]
fn files_changed_since_are_refused_by_name_and_nothing_is_restored_unless_forced() {
    let f = Fixture::new();
    write_file(&f.path("a.rs"), b"a0", 0o644);
    write_file(&f.path("b.rs"), b"b0", 0o644);
    write_file(&f.path("c.rs"), b"c0", 0o644);
    let t = turn("c1", "01KTURN");
    f.write(&t, "a.rs", b"a1", 0o644);
    f.write(&t, "b.rs", b"b1", 0o644);
    f.delete(&t, "c.rs");
    // The user edits a.rs and recreates c.rs afterwards.
    fs::write(f.path("a.rs"), b"a2 by hand").unwrap();
    fs::write(f.path("c.rs"), b"c by hand").unwrap();

    let err = f.undo_of("c1").unwrap_err();
    assert!(
        err.message
            .contains("a.rs changed since turn 01KTURN: not restored (--force restores it anyway)"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("c.rs changed since turn 01KTURN"),
        "{}",
        err.message
    );
    assert!(!err.message.contains("b.rs"), "{}", err.message);
    assert_eq!(f.read("b.rs").unwrap().0, b"b1", "nothing restored");
    assert_eq!(f.read("a.rs").unwrap().0, b"a2 by hand");
    assert!(!f.cp.list(None, 10).unwrap()[0].undone);

    let forced =
        f.cp.undo(
            UndoTarget {
                conversation: None,
                turn: Some("01KT".into()),
                project: None,
            },
            true,
        )
        .unwrap();
    assert_eq!(forced.files.len(), 3);
    assert_eq!(f.read("a.rs").unwrap().0, b"a0");
    assert_eq!(f.read("b.rs").unwrap().0, b"b0");
    assert_eq!(f.read("c.rs").unwrap().0, b"c0");
}

#[test]
fn undoing_a_turn_twice_says_it_was_undone() {
    let f = Fixture::new();
    f.write(&turn("c1", "t1"), "a", b"x", 0o644);
    let target = || UndoTarget {
        conversation: None,
        turn: Some("t1".into()),
        project: None,
    };
    f.cp.undo(target(), false).unwrap();
    let err = f.cp.undo(target(), false).unwrap_err();
    assert!(
        err.message.contains("was undone already"),
        "{}",
        err.message
    );
    let err = f.undo_of("c1").unwrap_err();
    assert!(err.message.contains("nothing to undo"), "{}", err.message);
}

#[test]
fn the_newest_turn_of_the_newest_conversation_is_undone_by_default() {
    let f = Fixture::new();
    f.write(&turn("conv-a", "a1"), "a", b"a1", 0o644);
    f.write(&turn("conv-b", "b1"), "b", b"b1", 0o644);
    f.write(&turn("conv-a", "a2"), "a", b"a2", 0o644);
    f.write(&turn("conv-b", "b2"), "b", b"b2", 0o644);

    let listed = f.cp.list(None, 10).unwrap();
    let order: Vec<&str> = listed.iter().map(|t| t.turn_id.as_str()).collect();
    assert_eq!(order, vec!["b2", "a2", "b1", "a1"]);
    assert_eq!(listed[0].files, vec!["b"]);
    assert_eq!(f.cp.list(Some("conv-a"), 1).unwrap()[0].turn_id, "a2");

    let undone = f.cp.undo(UndoTarget::default(), false).unwrap();
    assert_eq!(
        (undone.conversation_id.as_str(), undone.turn_id.as_str()),
        ("conv-b", "b2")
    );
    let undone = f.cp.undo(UndoTarget::default(), false).unwrap();
    assert_eq!(
        undone.turn_id, "b1",
        "the same conversation's previous turn"
    );
    assert_eq!(f.undo_of("conv-a").unwrap().turn_id, "a2");
    assert_eq!(f.read("a").unwrap().0, b"a1");
    assert_eq!(f.read("b"), None);
}

#[test]
fn an_ambiguous_or_unknown_turn_prefix_is_an_error() {
    let f = Fixture::new();
    f.write(&turn("c1", "01KX1"), "a", b"1", 0o644);
    f.write(&turn("c1", "01KX2"), "b", b"2", 0o644);
    let by = |p: &str| {
        f.cp.undo(
            UndoTarget {
                conversation: None,
                turn: Some(p.into()),
                project: None,
            },
            false,
        )
    };
    let err = by("01KX").unwrap_err();
    assert!(err.message.contains("ambiguous"), "{}", err.message);
    assert!(err.message.contains("01KX1") && err.message.contains("01KX2"));
    assert!(by("nope").unwrap_err().message.contains("no turn `nope`"));
    assert_eq!(by("01KX1").unwrap().turn_id, "01KX1");
}

#[test]
fn two_turns_on_one_file_undo_newest_first_then_the_older() {
    let f = Fixture::new();
    write_file(&f.path("f"), b"v0", 0o644);
    f.write(&turn("c", "t1"), "f", b"v1", 0o600);
    f.write(&turn("c", "t2"), "f", b"v2", 0o755);
    // Undoing the older turn first finds the file changed since (by t2).
    let err =
        f.cp.undo(
            UndoTarget {
                conversation: None,
                turn: Some("t1".into()),
                project: None,
            },
            false,
        )
        .unwrap_err();
    assert!(
        err.message.contains("f changed since turn t1"),
        "{}",
        err.message
    );
    f.undo_of("c").unwrap();
    assert_eq!(f.read("f").unwrap(), (b"v1".to_vec(), 0o600));
    f.undo_of("c").unwrap();
    assert_eq!(f.read("f").unwrap(), (b"v0".to_vec(), 0o644));
}

#[test]
fn only_the_first_before_of_a_turn_counts_and_after_needs_before() {
    let f = Fixture::new();
    write_file(&f.path("f"), b"v0", 0o644);
    let t = turn("c", "t");
    f.write(&t, "f", b"v1", 0o644);
    f.write(&t, "f", b"v2", 0o644);
    assert_eq!(f.cp.list(None, 5).unwrap()[0].files, vec!["f"]);
    assert_eq!(
        f.objects().len(),
        1,
        "v1 is not kept: only the state before the turn"
    );
    f.undo_of("c").unwrap();
    assert_eq!(f.read("f").unwrap().0, b"v0");
    let err =
        f.cp.after_change(&turn("c", "other"), &f.path("f"))
            .unwrap_err();
    assert!(
        err.message.contains("before_change must come first"),
        "{}",
        err.message
    );
}

#[test]
fn a_before_without_after_expects_the_file_unchanged() {
    let f = Fixture::new();
    write_file(&f.path("f"), b"v0", 0o644);
    let t = turn("c", "t");
    // The tool failed before writing.
    f.cp.before_change(&t, f.root(), &f.path("f")).unwrap();
    assert_eq!(
        f.undo_of("c").unwrap().files[0].action,
        UndoAction::Unchanged
    );
}

fn set_created_at(f: &Fixture, turn_id: &str, ms: i64) {
    f.cp.conn()
        .unwrap()
        .execute(
            "UPDATE turns SET created_at = ?1 WHERE turn_id = ?2",
            params![ms, turn_id],
        )
        .unwrap();
}

#[test]
fn prune_by_age_forgets_old_turns_and_only_their_unshared_blobs() {
    let f = Fixture::new();
    write_file(&f.path("a"), b"only in the old turn", 0o644);
    write_file(&f.path("c"), b"shared", 0o644);
    write_file(&f.path("b"), b"shared", 0o644);
    let old = turn("c", "old");
    f.write(&old, "a", b"a1", 0o644);
    f.write(&old, "c", b"c1", 0o644);
    f.write(&turn("c", "new"), "b", b"b1", 0o644);
    set_created_at(&f, "old", now_ms() - 10 * 24 * 3600 * 1000);
    assert_eq!(f.objects().len(), 2);

    let day = Duration::from_secs(24 * 3600);
    let pruned = f.cp.prune(5 * day, u64::MAX).unwrap();
    assert_eq!(
        pruned,
        Pruned {
            turns: 1,
            blobs: 1,
            bytes: b"only in the old turn".len() as u64
        }
    );
    assert_eq!(f.objects(), BTreeSet::from([sha256_hex(b"shared")]));
    let left: Vec<String> =
        f.cp.list(None, 10)
            .unwrap()
            .into_iter()
            .map(|t| t.turn_id)
            .collect();
    assert_eq!(left, vec!["new"]);
    f.undo_of("c").unwrap();
    assert_eq!(f.read("b").unwrap().0, b"shared");
    // Nothing more to prune.
    assert_eq!(f.cp.prune(5 * day, u64::MAX).unwrap().turns, 0);
}

#[test]
fn prune_by_size_keeps_the_newest_turns_that_fit() {
    let f = Fixture::new();
    for (i, name) in ["t1", "t2", "t3"].iter().enumerate() {
        let file = format!("f{i}");
        write_file(&f.path(&file), &vec![i as u8; 1000], 0o644);
        f.write(&turn("c", name), &file, b"x", 0o644);
    }
    // A temporary file a crashed writer left.
    fs::write(f.data_dir.join("checkpoints/objects/.tmp-1-dead"), b"junk").unwrap();
    let year = Duration::from_secs(365 * 24 * 3600);
    let pruned = f.cp.prune(year, 2500).unwrap();
    assert_eq!(pruned.turns, 1);
    assert_eq!(pruned.blobs, 1);
    assert_eq!(pruned.bytes, 1000 + 4);
    let left: Vec<String> =
        f.cp.list(None, 10)
            .unwrap()
            .into_iter()
            .map(|t| t.turn_id)
            .collect();
    assert_eq!(left, vec!["t3", "t2"]);
    assert_eq!(
        f.objects(),
        BTreeSet::from([sha256_hex(&[1u8; 1000]), sha256_hex(&[2u8; 1000])])
    );
    assert_eq!(f.cp.prune(year, 0).unwrap().turns, 2);
    assert!(f.objects().is_empty());
}

#[test]
fn two_handles_on_one_folder_share_the_checkpoints() {
    let f = Fixture::new();
    let other = Checkpoints::open(&f.data_dir).unwrap();
    write_file(&f.path("a"), b"a0", 0o644);
    let t = turn("c", "t");
    other.before_change(&t, f.root(), &f.path("a")).unwrap();
    write_file(&f.path("a"), b"a1", 0o644);
    other.after_change(&t, &f.path("a")).unwrap();
    f.write(&t, "b", b"b1", 0o644);
    assert_eq!(f.cp.list(None, 5).unwrap()[0].files, vec!["a", "b"]);
    f.undo_of("c").unwrap();
    assert_eq!(f.read("a").unwrap().0, b"a0");
    assert_eq!(f.read("b"), None);
}

#[test]
fn the_config_has_defaults_and_refuses_unknown_keys() {
    let c: CheckpointConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(c, CheckpointConfig::default());
    assert_eq!(c.max_bytes(), 512 << 20);
    assert_eq!(c.max_age(), Duration::from_secs(30 * 24 * 3600));
    assert!(serde_json::from_str::<CheckpointConfig>(r#"{"max_age":1}"#).is_err());
}

/// The files and folders of the property test, and what is at each.
type Snapshot = (BTreeMap<&'static str, Option<(Vec<u8>, u32)>>, Vec<bool>);

const FILES: [&str; 4] = ["a", "b", "d/c", "d/e/f"];
const FOLDERS: [&str; 2] = ["d", "d/e"];
const MODES: [u32; 5] = [0o644, 0o600, 0o755, 0o640, 0o444];

fn snapshot(f: &Fixture) -> Snapshot {
    (
        FILES.iter().map(|n| (*n, f.read(n))).collect(),
        FOLDERS.iter().map(|d| f.path(d).is_dir()).collect(),
    )
}

fn random_bytes(rng: &mut fastrand::Rng) -> Vec<u8> {
    match rng.u8(..4) {
        0 => Vec::new(),
        1 => "héllo\n".repeat(rng.usize(1..4)).into_bytes(),
        _ => (0..rng.usize(1..80)).map(|_| rng.u8(..)).collect(),
    }
}

fn property_case(seed: u64) {
    let f = Fixture::new();
    let mut rng = fastrand::Rng::with_seed(seed);
    // A starting state.
    for name in FILES {
        if rng.bool() {
            write_file(
                &f.path(name),
                &random_bytes(&mut rng),
                MODES[rng.usize(..MODES.len())],
            );
        }
    }
    let turns = rng.usize(1..=5);
    let mut before_each = Vec::new();
    for t in 0..turns {
        before_each.push(snapshot(&f));
        let key = turn("conv", &format!("turn{t}"));
        for _ in 0..rng.usize(1..=5) {
            let name = FILES[rng.usize(..FILES.len())];
            let path = f.path(name);
            let mode = MODES[rng.usize(..MODES.len())];
            match rng.u8(..5) {
                0 if path.exists() => f.delete(&key, name),
                1 if path.exists() => {
                    use std::os::unix::fs::PermissionsExt;
                    f.cp.before_change(&key, f.root(), &path).unwrap();
                    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
                    f.cp.after_change(&key, &path).unwrap();
                }
                _ => f.write(&key, name, &random_bytes(&mut rng), mode),
            }
        }
    }
    for t in (0..turns).rev() {
        let undone = f
            .undo_of("conv")
            .unwrap_or_else(|e| panic!("seed {seed}: undo of turn{t} failed: {}", e.message));
        assert_eq!(undone.turn_id, format!("turn{t}"), "seed {seed}");
        assert_eq!(
            snapshot(&f),
            before_each[t],
            "seed {seed}: state before turn{t}"
        );
    }
    assert!(
        f.undo_of("conv").is_err(),
        "seed {seed}: every turn was undone"
    );
}

#[test]
fn property_undo_turn_by_turn_gives_back_each_earlier_state() {
    let seed = std::env::var("CHECKPOINT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("property seed {seed} (CHECKPOINT_SEED={seed} replays it)");
    let mut rng = fastrand::Rng::with_seed(seed);
    for _ in 0..250 {
        property_case(rng.u64(..));
    }
}

#[test]
fn a_plain_undo_takes_this_projects_turn_and_names_the_others() {
    let f = Fixture::new();
    let other = tempfile::tempdir().unwrap();
    let (here, there) = (f.root().to_path_buf(), other.path().to_path_buf());
    f.write(&turn("c1", "01KHERE"), "a.txt", b"here", 0o644);
    // A later turn in another project.
    let path = there.join("o.txt");
    f.cp.before_change(&turn("c2", "01KTHERE"), &there, &path)
        .unwrap();
    write_file(&path, b"there", 0o644);
    f.cp.after_change(&turn("c2", "01KTHERE"), &path).unwrap();
    let in_project = |project: &Path| UndoTarget {
        conversation: None,
        turn: None,
        project: Some(project.to_path_buf()),
    };
    // From a subfolder of this project: this project's turn, the other one untouched.
    let undone = f.cp.undo(in_project(&here.join("src")), false).unwrap();
    assert_eq!(undone.turn_id, "01KHERE");
    assert_eq!(undone.root, here.to_string_lossy());
    assert!(!f.path("a.txt").exists());
    assert!(path.exists());
    // Nothing left here: the error names this folder and where the newest turn was.
    let e = f.cp.undo(in_project(&here), false).unwrap_err();
    assert!(
        e.message
            .contains(&format!("nothing to undo in {}", here.display()))
            && e.message.contains(&*there.to_string_lossy())
            && e.message.contains("genai undo --cid c2"),
        "{}",
        e.message
    );
    // Named by its conversation, another project's turn is undone.
    let undone = f.undo_of("c2").unwrap();
    assert_eq!(undone.root, there.to_string_lossy());
    assert!(!path.exists());
}
