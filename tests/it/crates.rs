//! The crate graph is docs/ARCHITECTURE.md's: read from the manifests, each crate depends
//! (for its build, not its tests) only on the genai crates the architecture draws below it.
//! Cargo refuses loops; this holds what it would allow: a front-end on another, the core on a
//! front-end's neighbour, llama.cpp's crate under anything but the binary.

use std::collections::BTreeSet;
use std::path::Path;

/// Each crate and the genai crates it may build on.
const ALLOWED: &[(&str, &[&str])] = &[
    ("genai-protocol", &[]),
    ("genai-base", &["genai-protocol"]),
    ("genai-acting", &["genai-protocol", "genai-base"]),
    (
        "genai-core",
        &["genai-protocol", "genai-base", "genai-acting"],
    ),
    ("genai-peer", &[]),
    ("genai-local", &["genai-core"]),
    ("genai-rpc", &["genai-core", "genai-protocol", "genai-peer"]),
    ("genai-acp", &["genai-core", "genai-protocol", "genai-peer"]),
    ("genai-lsp", &["genai-core"]),
    ("genai-mcp", &["genai-core"]),
    ("genai-gateway", &["genai-core", "genai-protocol"]),
    (
        "genai-server",
        &["genai-core", "genai-rpc", "genai-mcp", "genai-gateway"],
    ),
    (
        "genai-postgres",
        &["genai-core", "genai-gateway", "genai-protocol"],
    ),
];

/// The genai crates a manifest's `[dependencies]` (any target's) name.
fn genai_dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    let mut tables = vec![doc.get("dependencies")];
    if let Some(targets) = doc.get("target").and_then(|t| t.as_table()) {
        tables.extend(targets.iter().map(|(_, t)| t.get("dependencies")));
    }
    tables
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_table_like())
        .flat_map(|t| {
            t.iter()
                .map(|(name, _)| name.to_string())
                .collect::<Vec<_>>()
        })
        .filter(|name| name.starts_with("genai-"))
        .collect()
}

#[test]
fn each_crate_builds_only_on_the_crates_the_architecture_puts_below_it() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let allowed = ALLOWED
            .iter()
            .find(|(crate_name, _)| *crate_name == name)
            .unwrap_or_else(|| panic!("{name} is not in the architecture's graph (ALLOWED)"))
            .1;
        let extra: Vec<_> = genai_dependencies(&dir.join("Cargo.toml"))
            .into_iter()
            .filter(|dep| !allowed.contains(&dep.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "{name} depends on {extra:?}, above or beside it"
        );
        found.insert(name);
    }
    let drawn: BTreeSet<_> = ALLOWED.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(found, drawn, "the graph names crates that do not exist");
    // llama.cpp's crate is the binary's alone, so the front-ends build without cmake.
    let root = genai_dependencies(&Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"));
    assert!(root.contains("genai-local"));
}
