//! The committed JSON Schemas in `schemas/` must equal what the Rust types generate.
//! Run with `GENAI_UPDATE_SCHEMAS=1 cargo test --test it schemas` to rewrite them.

use std::path::PathBuf;

#[test]
fn committed_schemas_match_the_code() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let update = std::env::var_os("GENAI_UPDATE_SCHEMAS").is_some();
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut stale = Vec::new();
    let all = genai_rpc::schema::all();
    for (name, schema) in &all {
        let path = dir.join(format!("{name}.json"));
        let want = genai_rpc::schema::render(schema);
        if update {
            std::fs::write(&path, &want).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
            stale.push(name.to_string());
        }
    }
    let mut known: Vec<String> = all.iter().map(|(n, _)| format!("{n}.json")).collect();
    known.extend(
        genai_rpc::schema::HAND_WRITTEN
            .iter()
            .map(|n| n.to_string()),
    );
    for entry in std::fs::read_dir(&dir).unwrap() {
        let file = entry.unwrap().file_name().to_string_lossy().into_owned();
        if file.ends_with(".json") && !known.contains(&file) {
            stale.push(format!("{file} (no longer generated)"));
        }
    }
    assert!(stale.is_empty(), "schemas/ is out of date for: {stale:?}; run GENAI_UPDATE_SCHEMAS=1 cargo test --test it schemas");
}

#[test]
fn message_schema_accepts_the_seed_shape() {
    let schema = genai_rpc::schema::all()
        .into_iter()
        .find(|(n, _)| *n == "message")
        .unwrap()
        .1;
    let text = schema.to_string();
    for needle in ["toolCall", "toolResult", "image", "mediaType", "assistant"] {
        assert!(text.contains(needle), "message schema lacks {needle}");
    }
}
