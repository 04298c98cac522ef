//! `genai params [FORMAT]`: the parameters each model format accepts (name, type, range,
//! description), as a table, as JSON (`--json`, the `parameters` of `ListComponents`' format
//! kinds), or as the Markdown tables of docs/PROVIDERS.md (`--markdown`).
//!
//! It reads the registered kinds only (no config, no instance), so it works anywhere.

use genai_core::error::{Error, ErrorKind};
use genai_core::registry::Registry;
use genai_core::select::Listed;
use serde_json::{Map, Value};

#[derive(clap::Args)]
pub struct Args {
    /// One format, such as openai-chat (default: every format).
    pub format: Option<String>,
    /// Print JSON: an object from format name to its parameter specs.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the Markdown tables of docs/PROVIDERS.md.
    #[arg(long)]
    pub markdown: bool,
}

/// The format kinds as `ListComponents` reports them, keeping only `format` when given.
fn formats(only: Option<&str>) -> Result<Vec<Value>, Error> {
    let kinds =
        genai_protocol::listings::Components::from(Listed::from(Registry::new().components()?))
            .kinds;
    let all: Vec<Value> = kinds["modelConfigurations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let Some(only) = only else { return Ok(all) };
    let names: Vec<&str> = all.iter().filter_map(|k| k["name"].as_str()).collect();
    let found: Vec<Value> = all
        .iter()
        .filter(|k| k["name"].as_str() == Some(only))
        .cloned()
        .collect();
    if found.is_empty() {
        return Err(Error::new(
            ErrorKind::UnknownComponent,
            format!("unknown model format `{only}`; known: {}", names.join(", ")),
        ));
    }
    Ok(found)
}

/// `number`, `integer 1..=100`, ...: the type and its range.
fn type_and_range(p: &Value) -> (String, String) {
    let t = p["type"].as_str().unwrap_or("").to_string();
    let range = match (p.get("min"), p.get("max")) {
        (Some(min), Some(max))
            if min.as_f64().is_some_and(|n| n <= -9.0e18)
                && max.as_f64().is_some_and(|n| n >= 9.0e18) =>
        {
            "any".to_string()
        }
        (Some(min), Some(max)) => {
            let show = |v: &Value| match v.as_f64() {
                Some(n) if n <= -9.0e18 => "min".to_string(),
                Some(n) if n >= 9.0e18 => "max".to_string(),
                _ => v.to_string(),
            };
            format!("{}..={}", show(min), show(max))
        }
        _ => p["values"]
            .as_array()
            .map(|v| {
                let words: Vec<&str> = v.iter().filter_map(Value::as_str).collect();
                words.join(", ")
            })
            .unwrap_or_default(),
    };
    let t = match t.as_str() {
        "stringList" => "string or list".to_string(),
        "oneOf" => "one of".to_string(),
        _ => t,
    };
    (t, range)
}

/// The Markdown tables, one per format, in registration order.
pub fn markdown(kinds: &[Value]) -> String {
    let mut out = String::new();
    for k in kinds {
        out.push_str(&format!(
            "#### `{}`\n\n{}\n\n| Parameter | Type | Range | Description |\n|---|---|---|---|\n",
            k["name"].as_str().unwrap_or(""),
            k["description"].as_str().unwrap_or("")
        ));
        for p in k["parameters"].as_array().into_iter().flatten() {
            let (t, range) = type_and_range(p);
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                p["name"].as_str().unwrap_or(""),
                t,
                range,
                p["description"]
                    .as_str()
                    .unwrap_or("")
                    .replace('|', "\\|")
                    .replace('\n', " ")
            ));
        }
        out.push('\n');
    }
    out
}

pub fn run(args: Args) -> Result<(), Error> {
    let kinds = formats(args.format.as_deref())?;
    if args.json {
        let mut map = Map::new();
        for k in &kinds {
            map.insert(
                k["name"].as_str().unwrap_or("").to_string(),
                k["parameters"].clone(),
            );
        }
        super::print_json(&Value::Object(map));
        return Ok(());
    }
    if args.markdown {
        out!("{}", markdown(&kinds));
        return Ok(());
    }
    for (i, k) in kinds.iter().enumerate() {
        if i > 0 {
            outln!();
        }
        outln!("{}", k["name"].as_str().unwrap_or(""));
        outln!(
            "  {:<24} {:<16} {:<14} DESCRIPTION",
            "NAME",
            "TYPE",
            "RANGE"
        );
        for p in k["parameters"].as_array().into_iter().flatten() {
            let (t, range) = type_and_range(p);
            outln!(
                "  {:<24} {:<16} {:<14} {}",
                p["name"].as_str().unwrap_or(""),
                t,
                if range.is_empty() { "-" } else { &range },
                p["description"].as_str().unwrap_or("")
            );
        }
    }
    Ok(())
}
