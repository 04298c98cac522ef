use super::*;
use genai_core::embedding::Embeddings;

#[test]
fn a_string_or_strings_are_read_and_token_arrays_refused_by_name() {
    let a = read(br#"{"model": "m", "input": "hello", "user": "u"}"#).unwrap();
    assert_eq!(
        a,
        Asked {
            model: "m".into(),
            inputs: vec!["hello".into()],
            dimensions: None,
            base64: false,
        }
    );
    let a = read(
        br#"{"model": "m", "input": ["a", "b"], "dimensions": 8, "encoding_format": "base64"}"#,
    )
    .unwrap();
    assert_eq!((a.inputs.len(), a.dimensions, a.base64), (2, Some(8), true));
    for tokens in [r#"[1, 2, 3]"#, r#"[[1, 2], [3]]"#] {
        let body = format!(r#"{{"model": "m", "input": {tokens}}}"#);
        let e = read(body.as_bytes()).unwrap_err();
        assert_eq!(e.status, http::StatusCode::BAD_REQUEST);
        assert!(
            e.message.contains("token arrays are not supported"),
            "{}",
            e.message
        );
        assert_eq!(e.param.as_deref(), Some("input"));
    }
    let e = read(br#"{"model": "m", "input": "a", "encoding_format": "int8"}"#).unwrap_err();
    assert_eq!(e.param.as_deref(), Some("encoding_format"));
    let e = read(br#"{"input": "a"}"#).unwrap_err();
    assert!(e.message.contains("missing field `model`"), "{}", e.message);
}

#[test]
fn the_answer_is_openais_shape_with_floats_or_base64_of_little_endian_f32s() {
    let e = Embedded {
        embeddings: Embeddings {
            vectors: vec![vec![0.5, -1.0], vec![0.25, 0.0]],
            input_tokens: Some(7),
        },
        provider: "openai".into(),
        model: "text-embedding-3-small".into(),
        cost: None,
    };
    let floats: Value = serde_json::from_slice(&answer_body(&e, "alias", false)).unwrap();
    assert_eq!(
        floats,
        serde_json::json!({
            "object": "list",
            "data": [
                {"object": "embedding", "index": 0, "embedding": [0.5, -1.0]},
                {"object": "embedding", "index": 1, "embedding": [0.25, 0.0]}
            ],
            "model": "alias",
            "usage": {"prompt_tokens": 7, "total_tokens": 7}
        })
    );
    let b64: Value = serde_json::from_slice(&answer_body(&e, "alias", true)).unwrap();
    let text = b64["data"][0]["embedding"].as_str().unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap();
    let back: Vec<f32> = bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(back, [0.5, -1.0]);
}
