//! Prompt caching, usage and cost end to end: `genai ask` against the fake Anthropic API and
//! the fake Bedrock Runtime, whose prompt caches write the prefixes that breakpoints mark and
//! report reads of them on later turns; the cost of each turn from the built-in table or
//! `[pricing]`; and `genai usage` over what the history stored.

use std::process::Output;

use serde_json::{json, Value};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::fake_anthropic::{self, FakeAnthropic, KEY};
use crate::support::fake_bedrock::{self, Accept, FakeBedrock};

/// A system prompt of `words` words (about 5 characters each).
fn long_system(words: usize) -> String {
    vec!["cache"; words].join(" ")
}

/// Every `cache_control` in a Messages API body, where it is: `tools`, `system`, or
/// `messages.N`.
fn breakpoints(body: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut look = |place: String, blocks: &Value| {
        for b in blocks.as_array().into_iter().flatten() {
            if let Some(c) = b.get("cache_control") {
                out.push((place.clone(), c.clone()));
            }
        }
    };
    look("tools".into(), &body["tools"]);
    look("system".into(), &body["system"]);
    for (i, m) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        look(format!("messages.{i}"), &m["content"]);
    }
    out
}

struct Claude {
    dirs: Folders,
    fake: FakeAnthropic,
}

impl Claude {
    fn new() -> Claude {
        Claude {
            dirs: Folders::new(),
            fake: FakeAnthropic::start(Default::default()).unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut c = self.dirs.genai(args);
        c.env("ANTHROPIC_BASE_URL", self.fake.base_url())
            .env("ANTHROPIC_API_KEY", KEY);
        cli::output_with_stdin(c, None)
    }

    fn json(&self, args: &[&str]) -> Value {
        let o = self.run(args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        serde_json::from_str(stdout(&o).trim()).expect("one JSON object")
    }
}

#[test]
fn a_long_claude_prompt_carries_breakpoints_and_the_next_turn_reads_the_cache() {
    let env = Claude::new();
    let system = long_system(1200);
    let m = "anthropic:claude-sonnet-4-5";
    // Turn 1, whole: the system prompt is long enough; there is no prefix yet.
    let first = env.json(&["ask", "-m", m, "-s", &system, "--json", "first"]);
    let body = env.fake.last().body;
    assert_eq!(
        breakpoints(&body),
        [("system".to_string(), json!({"type": "ephemeral"}))]
    );
    assert_eq!(body["system"][0]["text"], system.as_str());
    assert_eq!(first["usage"]["cacheWriteTokens"], 1200, "{first}");
    assert_eq!(first["usage"]["cacheReadTokens"], 0);
    assert_eq!(
        first["usage"]["inputTokens"], 1201,
        "every input token, cached ones too"
    );
    let cid = first["conversationId"].as_str().unwrap().to_string();

    // Turn 2, streamed: the system and the conversation's prefix (the reply before the new
    // message) are breakpoints, and the cached system prompt is read.
    let o = env.run(&["ask", "--cid", &cid, "second"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let body = env.fake.last().body;
    let places: Vec<String> = breakpoints(&body).into_iter().map(|b| b.0).collect();
    assert_eq!(places, ["system", "messages.1"], "{body}");
    assert_eq!(body["messages"][1]["content"][0]["type"], "text");
    assert!(
        body["messages"][2]["content"].is_string(),
        "the new turn is not marked"
    );
    let shown = env.json(&["sessions", "show", &cid, "--json"]);
    let replies: Vec<&Value> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["usage"].is_object())
        .collect();
    assert_eq!(replies.len(), 2);
    let u = &replies[1]["usage"];
    assert_eq!(u["cacheReadTokens"], 1200, "streamed usage: {u}");
    assert!(u["cacheWriteTokens"].as_u64().unwrap() > 0, "{u}");
    // Sonnet 4.5 is in the built-in table: the stored cost is the table's.
    let expected = |u: &Value| {
        let n = |k: &str| u[k].as_f64().unwrap_or(0.0);
        let uncached = n("inputTokens") - n("cacheReadTokens") - n("cacheWriteTokens");
        (uncached * 3.0
            + n("cacheReadTokens") * 0.3
            + n("cacheWriteTokens") * 3.75
            + n("outputTokens") * 15.0)
            / 1e6
    };
    for r in &replies {
        let cost = r["cost"].as_f64().expect("a stored cost");
        assert!((cost - expected(&r["usage"])).abs() < 1e-12, "{r}");
    }
    let text = env.run(&["sessions", "show", &cid]);
    assert!(stdout(&text).contains("total: "), "{}", stdout(&text));

    // A short prompt carries none, nor one whose configuration turns caching off; a TTL
    // travels as `ttl`.
    env.json(&["ask", "-m", m, "-s", "Be brief.", "--json", "short"]);
    assert!(breakpoints(&env.fake.last().body).is_empty());
    assert!(env.fake.last().body["system"].is_string());
    env.dirs.write_config(
        "[model_configurations.off]\nformat = \"claude-messages\"\nmodel = \"claude-sonnet-4-5\"\ncache = false\n\
         [model_configurations.hour]\nformat = \"claude-messages\"\nmodel = \"claude-sonnet-4-5\"\ncache_ttl = \"1h\"\n\
         [agents.off]\nprovider = \"anthropic\"\nmodel_configuration = \"off\"\n\
         [agents.hour]\nprovider = \"anthropic\"\nmodel_configuration = \"hour\"\n",
    );
    env.json(&["ask", "-m", "off", "-s", &system, "--json", "long"]);
    assert!(breakpoints(&env.fake.last().body).is_empty());
    env.json(&[
        "ask",
        "-m",
        m,
        "-p",
        "cache=false",
        "-s",
        &system,
        "--json",
        "long",
    ]);
    assert!(breakpoints(&env.fake.last().body).is_empty());
    env.json(&["ask", "-m", "hour", "-s", &system, "--json", "long"]);
    assert_eq!(
        breakpoints(&env.fake.last().body),
        [(
            "system".to_string(),
            json!({"type": "ephemeral", "ttl": "1h"})
        )]
    );
    // `cache` belongs to the formats that mark caching by hand.
    env.dirs.write_config(
        "[model_configurations.o]\nformat = \"openai-chat\"\nmodel = \"gpt-4o\"\ncache = false\n",
    );
    let o = env.run(&["ask", "-m", m, "hi"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("applies to the claude-messages and bedrock-converse formats"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn config_prices_override_the_table_and_unknown_prices_stay_unknown() {
    let env = Claude::new();
    env.fake.set_default(fake_anthropic::Behavior {
        cache_read: 1000,
        cache_creation: 100,
        ..Default::default()
    });
    // The fake's usage: 2 uncached words ("count this"), 1000 read, 100 written, 5 out.
    let ask = |expected: f64| {
        let v = env.json(&[
            "ask",
            "-m",
            "anthropic:claude-haiku-4-5",
            "--json",
            "count this",
        ]);
        let cost = v["cost"].as_f64().expect("a cost");
        assert!((cost - expected / 1e6).abs() < 1e-12, "{v}");
        cost
    };
    let table = ask(2.0 + 100.0 + 125.0 + 25.0);
    env.dirs.write_config(
        "[pricing.\"anthropic:claude-haiku-4-5\"]\ninput = 10.0\noutput = 20.0\ncache_read = 1.0\ncache_write = 2.0\n",
    );
    let configured = ask(20.0 + 1000.0 + 200.0 + 100.0);
    let unknown = env.json(&[
        "ask",
        "-m",
        "anthropic:claude-next-9",
        "--json",
        "count this",
    ]);
    assert!(unknown["cost"].is_null(), "unknown, not 0: {unknown}");
    let o = env.run(&[
        "ask",
        "-m",
        "anthropic:claude-next-9",
        "--no-stream",
        "again",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    // genai usage adds up what the history stored.
    let all = env.json(&["usage", "--json"]);
    assert_eq!(all["by"], "model");
    let groups = all["groups"].as_array().unwrap();
    let next = groups.iter().find(|g| g["key"] == "claude-next-9").unwrap();
    assert_eq!(
        (next["turns"].as_u64(), next["cost"].is_null()),
        (Some(2), true)
    );
    assert_eq!(next["unpricedTurns"], 2);
    let haiku = groups
        .iter()
        .find(|g| g["key"] == "claude-haiku-4-5")
        .unwrap();
    assert_eq!(haiku["turns"], 2);
    assert_eq!(haiku["usage"]["cacheReadTokens"], 2000);
    let priced = table + configured;
    assert!((haiku["cost"].as_f64().unwrap() - priced).abs() < 1e-12);
    let total = &all["total"];
    assert_eq!(
        (total["turns"].as_u64(), total["unpricedTurns"].as_u64()),
        (Some(4), Some(2))
    );
    let stored: u64 = env
        .json(&["sessions", "list", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let id = c["id"].as_str().unwrap();
            let shown = env.json(&["sessions", "show", id, "--json"]);
            shown["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m["usage"]["inputTokens"].as_u64())
                .sum::<u64>()
        })
        .sum();
    assert_eq!(total["usage"]["inputTokens"].as_u64(), Some(stored));

    let by_conversation = env.json(&["usage", "--by", "conversation", "--json"]);
    assert_eq!(by_conversation["groups"].as_array().unwrap().len(), 4);
    assert_eq!(by_conversation["groups"][0]["title"], "count this");
    let by_day = env.json(&["usage", "--by", "day", "--json"]);
    assert_eq!(by_day["groups"].as_array().unwrap().len(), 1, "all today");
    assert_eq!(by_day["total"], all["total"]);
    let later = env.json(&["usage", "--since", "2999-01-01", "--json"]);
    assert_eq!(later["groups"], json!([]));
    assert_eq!(later["total"]["turns"], 0);
    let recent = env.json(&["usage", "--since", "1h", "--json"]);
    assert_eq!(recent["total"]["turns"], 4);
    let o = env.run(&["usage", "--since", "someday"]);
    cli::assert_fails_with(&o, 2, "--since takes a date");
    let o = env.run(&["usage"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.starts_with("MODEL"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("claude-next-9") && l.ends_with("unknown")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("total") && l.contains("+ unknown (2 turns)")),
        "{text}"
    );
}

#[test]
fn bedrock_marks_cache_points_on_converse_and_cache_control_on_invoke_model() {
    let dirs = Folders::new();
    let home = tempfile::tempdir().unwrap();
    let fake = FakeBedrock::start(Accept {
        session_token: None,
    })
    .unwrap();
    let model = "anthropic.claude-3-haiku-20240307-v1:0";
    dirs.write_config(&format!(
        "[model_configurations.claude]\nformat = \"claude-messages\"\nmodel = \"{model}\"\n\
         [agents.cb]\nprovider = \"bedrock\"\nmodel_configuration = \"claude\"\n"
    ));
    let run = |args: &[&str]| {
        let mut c = dirs.genai(args);
        c.env("HOME", home.path());
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
            c.env_remove(k);
        }
        c.env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url())
            .env("AWS_REGION", fake_bedrock::REGION)
            .env("AWS_ACCESS_KEY_ID", fake_bedrock::ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", fake_bedrock::SECRET_KEY);
        let o = cli::output_with_stdin(c, None);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        o
    };
    let json =
        |args: &[&str]| -> Value { serde_json::from_str(stdout(&run(args)).trim()).unwrap() };
    // Haiku 3 caches from 2048 tokens: 3000 words are enough, a short prompt is not.
    let system = long_system(3000);
    let converse = format!("bedrock:{model}");

    let first = json(&["ask", "-m", &converse, "-s", &system, "--json", "first"]);
    let body = fake.last().body;
    let last_system = body["system"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last_system, json!({"cachePoint": {"type": "default"}}));
    assert_eq!(
        first["usage"]["cacheWriteTokens"].as_u64(),
        Some(3000),
        "{first}"
    );
    let cid = first["conversationId"].as_str().unwrap().to_string();
    // Streamed: the prefix gets its cache point and the system prompt is read.
    run(&["ask", "--cid", &cid, "second"]);
    let body = fake.last().body;
    let prefix = body["messages"][1]["content"].as_array().unwrap();
    assert_eq!(
        prefix.last().unwrap(),
        &json!({"cachePoint": {"type": "default"}})
    );
    let shown = json(&["sessions", "show", &cid, "--json"]);
    let last = shown["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["usage"]["cacheReadTokens"].as_u64(),
        Some(3000),
        "{last}"
    );
    json(&["ask", "-m", &converse, "-s", "Be brief.", "--json", "short"]);
    assert!(!fake.last().body.to_string().contains("cachePoint"));

    // claude-messages through InvokeModel: Anthropic's markers in Bedrock's envelope.
    let invoked = json(&["ask", "-m", "cb", "-s", &system, "--json", "first"]);
    let body = fake.last().body;
    assert_eq!(body["anthropic_version"], "bedrock-2023-05-31");
    assert_eq!(
        breakpoints(&body),
        [("system".to_string(), json!({"type": "ephemeral"}))]
    );
    assert!(
        invoked["usage"]["cacheReadTokens"].as_u64().is_some(),
        "{invoked}"
    );
}

#[test]
fn openai_and_gemini_report_their_automatic_cache_reads_whole_and_streamed() {
    use crate::support::{fake_gemini, fake_openai};
    let dirs = Folders::new();
    let openai = fake_openai::FakeOpenAi::start(
        0,
        fake_openai::Behavior {
            cache_read: 1024,
            ..Default::default()
        },
    )
    .unwrap();
    let gemini = fake_gemini::start(fake_gemini::Behavior {
        cache_read: 2048,
        ..Default::default()
    });
    let run = |args: &[&str]| {
        let mut c = dirs.genai(args);
        c.env("OPENAI_BASE_URL", openai.base_url())
            .env("OPENAI_API_KEY", "sk-test-cache")
            .env("GEMINI_BASE_URL", gemini.url())
            .env("GEMINI_API_KEY", fake_gemini::KEY);
        let o = cli::output_with_stdin(c, None);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        o
    };
    for (model, cached) in [
        ("openai:gpt-4o-mini", 1024),
        ("gemini:gemini-2.5-flash", 2048),
    ] {
        // Whole.
        let v: Value =
            serde_json::from_str(stdout(&run(&["ask", "-m", model, "--json", "hi"])).trim())
                .unwrap();
        assert_eq!(v["usage"]["cacheReadTokens"], cached, "{model}: {v}");
        assert!(v["usage"]["inputTokens"].as_u64().unwrap() > cached, "{v}");
        assert!(v["usage"].get("cacheWriteTokens").is_none(), "{v}");
        // The fake Gemini stands for Google's API; the fake at OPENAI_BASE_URL is another
        // server, whose models are not OpenAI's to price.
        assert_eq!(
            v["cost"].as_f64().is_some(),
            model.starts_with("gemini:"),
            "{model}: {v}"
        );
        // Streamed: the stored usage of the reply.
        run(&["ask", "-m", model, "hi", "again"]);
        let list: Value =
            serde_json::from_str(&stdout(&run(&["sessions", "list", "--json"]))).unwrap();
        let id = list[0]["id"].as_str().unwrap();
        let shown: Value =
            serde_json::from_str(&stdout(&run(&["sessions", "show", id, "--json"]))).unwrap();
        let last = shown["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(
            last["usage"]["cacheReadTokens"], cached,
            "{model} streamed: {last}"
        );
    }
}
