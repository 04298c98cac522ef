//! `genai embed` with the real binary against each provider kind's fake, which answers that
//! kind's embeddings API as the vendor documents it (`support/fake_embeddings.rs`: a text's
//! vector starts with its length in characters, so order and count show): OpenAI, Azure's
//! deployments, Ollama's `/api/embed`, Gemini's `batchEmbedContents`, Bedrock's Titan (one
//! signed request a text) and Cohere; a kind without embeddings refused by name; and the local
//! engine's pooled embeddings of the test GGUF when `GENAI_TEST_MODEL` is set. The gateway's
//! `/v1/embeddings` is in `embeddings_gateway.rs`.

use std::process::{Command, Output};

use serde_json::Value;

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::fake_bedrock::{self, Accept, AuthSeen, FakeBedrock};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::{fake_gemini, fake_ollama};

/// `genai embed --json ARGS` run by `c` (stdin: `input`), checked to succeed: its JSON.
fn embed_json(mut c: Command, input: Option<&str>) -> Value {
    c.arg("--json");
    let o = cli::output_with_stdin(c, input);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// The first component of each vector (the fake's text lengths) and each vector's length.
fn lengths_and_dims(v: &Value) -> (Vec<f64>, Vec<usize>) {
    let vectors = v["vectors"].as_array().unwrap();
    let firsts = vectors.iter().map(|x| x[0].as_f64().unwrap()).collect();
    let dims = vectors
        .iter()
        .map(|x| x.as_array().unwrap().len())
        .collect();
    (firsts, dims)
}

fn embed_args<'a>(model: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["embed", "-m", model];
    args.extend_from_slice(more);
    args
}

#[test]
fn openai_gets_the_batch_and_dimensions_and_plain_output_is_a_vector_a_line() {
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    let dirs = Folders::new();
    let cmd = |more: &[&str]| {
        let mut c = dirs.genai(&embed_args("openai:text-embedding-3-small", more));
        c.env("OPENAI_BASE_URL", fake.base_url())
            .env("OPENAI_API_KEY", "sk-embed-test");
        c
    };
    let v = embed_json(cmd(&["hello world", "abc", "--dimensions", "3"]), None);
    assert_eq!(lengths_and_dims(&v), (vec![11.0, 3.0], vec![3, 3]));
    assert_eq!(v["usage"]["inputTokens"], 3);
    assert_eq!(v["model"], "text-embedding-3-small");
    let sent = fake.last();
    assert_eq!(sent.route(), "/v1/embeddings");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-embed-test"));
    assert_eq!(
        sent.body,
        serde_json::json!({"model": "text-embedding-3-small", "input": ["hello world", "abc"], "encoding_format": "float", "dimensions": 3})
    );
    // Stdin, one text a line; plain output, one JSON array a line in the texts' order.
    let o = cli::output_with_stdin(cmd(&["--lines"]), Some("one\n\nthree\n"));
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<Vec<f64>> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, [vec![3.0, 0.5, 0.5, 0.5], vec![5.0, 0.5, 0.5, 0.5]]);
    // Nothing to embed is said before anything is sent.
    let before = fake.requests().len();
    let o = cli::output_with_stdin(cmd(&[]), Some("\n"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nothing to embed"), "{}", stderr(&o));
    assert_eq!(fake.requests().len(), before);
}

#[test]
fn azure_embeds_at_the_deployment_with_its_api_key_and_version() {
    let fake = FakeOpenAi::start(0, Behavior::default()).unwrap();
    let dirs = Folders::new();
    for (version, path) in [
        ("2024-10-21", "/openai/deployments/emb-small/embeddings"),
        ("v1", "/openai/v1/embeddings"),
    ] {
        dirs.write_config(&format!(
            "[service_providers.az]\nkind = \"azure-openai\"\napi_key_env = \"AZ_KEY\"\nbase_url = \"http://127.0.0.1:{}/\"\napi_version = \"{version}\"\ndeployment = \"emb-small\"\n",
            fake.port()
        ));
        let mut c = dirs.genai(&embed_args("az:text-embedding-3-small", &["a b c"]));
        c.env("AZ_KEY", "azure-embed-key");
        let v = embed_json(c, None);
        assert_eq!(lengths_and_dims(&v).0, [5.0]);
        let sent = fake.last();
        assert_eq!(sent.route(), path);
        assert_eq!(sent.header("api-key"), Some("azure-embed-key"));
        if version == "v1" {
            assert_eq!(sent.body["model"], "emb-small");
        } else {
            assert_eq!(sent.query("api-version"), Some(version));
        }
    }
}

#[test]
fn ollama_embeds_the_batch_at_api_embed_and_counts_its_prompt() {
    let fake = fake_ollama::start(fake_ollama::Behavior::default());
    let dirs = Folders::new();
    let mut c = dirs.genai(&embed_args(
        "ollama:nomic-embed-text",
        &["first text", "2nd", "--dimensions", "2"],
    ));
    c.env("OLLAMA_HOST", format!("127.0.0.1:{}", fake.port()));
    let v = embed_json(c, None);
    assert_eq!(lengths_and_dims(&v), (vec![10.0, 3.0], vec![2, 2]));
    assert_eq!(v["usage"]["inputTokens"], 3);
    let sent = fake.last();
    assert_eq!(sent.route(), "/api/embed");
    assert_eq!(
        sent.body,
        serde_json::json!({"model": "nomic-embed-text", "input": ["first text", "2nd"], "dimensions": 2})
    );
}

#[test]
fn gemini_batches_embed_contents_with_output_dimensionality_and_its_key_in_a_header() {
    let fake = fake_gemini::start(fake_gemini::Behavior::default());
    let dirs = Folders::new();
    let mut c = dirs.genai(&embed_args(
        "gemini:gemini-embedding-001",
        &["ab", "abcd", "--dimensions", "5"],
    ));
    c.env("GEMINI_BASE_URL", fake.url())
        .env("GEMINI_API_KEY", fake_gemini::KEY)
        .env("GOOGLE_API_KEY", "");
    let v = embed_json(c, None);
    assert_eq!(lengths_and_dims(&v), (vec![2.0, 4.0], vec![5, 5]));
    // Gemini reports no token count: unknown, not 0.
    assert!(v["usage"]["inputTokens"].is_null(), "{v}");
    assert!(v["cost"].is_null(), "{v}");
    let sent = fake.last();
    assert_eq!(
        sent.route(),
        "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    );
    assert!(!sent.path.contains(fake_gemini::KEY));
    assert_eq!(sent.body["requests"][1]["outputDimensionality"], 5);
    assert_eq!(
        sent.body["requests"][0]["model"],
        "models/gemini-embedding-001"
    );
}

#[test]
fn bedrock_signs_one_titan_request_a_text_and_one_cohere_request_a_batch() {
    let fake = FakeBedrock::start(Accept {
        session_token: None,
    })
    .unwrap();
    let (dirs, home) = (Folders::new(), tempfile::tempdir().unwrap());
    let cmd = |model: &str, more: &[&str]| {
        let mut c = dirs.genai(&embed_args(model, more));
        c.env("HOME", home.path());
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
            c.env_remove(k);
        }
        c.env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", fake.url())
            .env("AWS_REGION", fake_bedrock::REGION)
            .env("AWS_ACCESS_KEY_ID", fake_bedrock::ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", fake_bedrock::SECRET_KEY);
        c
    };
    let titan = "bedrock:amazon.titan-embed-text-v2:0";
    let v = embed_json(cmd(titan, &["one two", "x", "--dimensions", "256"]), None);
    assert_eq!(lengths_and_dims(&v), (vec![7.0, 1.0], vec![256, 256]));
    assert_eq!(v["usage"]["inputTokens"], 3);
    let sent = fake.requests();
    assert_eq!(sent.len(), 2, "one InvokeModel a text");
    for (r, text) in sent.iter().zip(["one two", "x"]) {
        assert_eq!(
            (r.model.as_str(), r.action.as_str()),
            ("amazon.titan-embed-text-v2:0", "invoke")
        );
        assert!(matches!(r.auth, AuthSeen::SigV4 { .. }), "{:?}", r.auth);
        assert_eq!(
            r.body,
            serde_json::json!({"inputText": text, "normalize": true, "dimensions": 256})
        );
    }
    let v = embed_json(cmd("bedrock:cohere.embed-english-v3", &["abc", "de"]), None);
    assert_eq!(lengths_and_dims(&v).0, [3.0, 2.0]);
    let last = fake.last();
    assert_eq!(last.body["texts"], serde_json::json!(["abc", "de"]));
    assert_eq!(last.body["input_type"], "search_document");
    // Another family on Bedrock is refused by name before anything is sent.
    let o = cli::output(cmd(
        "bedrock:anthropic.claude-3-haiku-20240307-v1:0",
        &["hi"],
    ));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("amazon.titan-embed-text-v2:0"),
        "{}",
        stderr(&o)
    );
    assert_eq!(fake.requests().len(), 3);
}

#[test]
fn a_kind_without_embeddings_names_the_kinds_that_have_them() {
    let dirs = Folders::new();
    let mut c = dirs.genai(&embed_args("anthropic:claude-sonnet-4-5", &["hi"]));
    c.env("ANTHROPIC_API_KEY", "sk-ant-unused");
    let o: Output = cli::output(c);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "the anthropic provider kind has no embeddings; use a provider of kind openai, azure-openai, gemini, ollama, bedrock, local"
        ),
        "{}",
        stderr(&o)
    );
}

/// The cosine of two vectors.
fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

#[test]
fn the_local_engine_pools_a_gguf_into_unit_vectors_the_same_text_alike() {
    let Ok(model) = std::env::var("GENAI_TEST_MODEL") else {
        eprintln!("skipped: GENAI_TEST_MODEL is not set (scripts/test.sh sets it)");
        return;
    };
    let dirs = Folders::new();
    dirs.write_config(&format!(
        "[service_providers.gguf]\nkind = \"local\"\nmodel = \"{model}\"\n\n[defaults]\nembedding_model = \"gguf\"\n"
    ));
    let texts = [
        "The cat sat on the mat.",
        "Quarterly revenue rose by four percent.",
        "The cat sat on the mat.",
    ];
    let mut args = vec!["embed"];
    args.extend(texts);
    let v = embed_json(dirs.genai(&args), None);
    assert_eq!(v["provider"], "gguf");
    assert!(v["usage"]["inputTokens"].as_u64().unwrap() >= 12, "{v}");
    assert_eq!(v["cost"], 0.0, "a local model runs free");
    let vectors: Vec<Vec<f64>> = serde_json::from_value(v["vectors"].clone()).unwrap();
    assert_eq!(vectors.len(), 3);
    for x in &vectors {
        let norm = x.iter().map(|c| c * c).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "not unit length: {norm}");
    }
    assert!(cosine(&vectors[0], &vectors[2]) > 0.999);
    assert!(cosine(&vectors[0], &vectors[1]) < 0.99);
    // Shortened, then scaled back to length 1.
    let v = embed_json(dirs.genai(&["embed", "--dimensions", "16", texts[0]]), None);
    let short: Vec<f64> = serde_json::from_value(v["vectors"][0].clone()).unwrap();
    assert_eq!(short.len(), 16);
    assert!((short.iter().map(|c| c * c).sum::<f64>().sqrt() - 1.0).abs() < 1e-3);
    let o = cli::output(dirs.genai(&["embed", "--dimensions", "100000", "x"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("over the model's"), "{}", stderr(&o));
}
