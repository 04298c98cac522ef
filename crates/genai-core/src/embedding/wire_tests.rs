use super::*;

fn request(model: &str, inputs: &[&str], dimensions: Option<u32>) -> EmbedRequest {
    EmbedRequest {
        model: model.into(),
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        dimensions,
    }
}

#[test]
fn openai_bodies_carry_the_batch_and_dimensions_and_answers_come_back_in_index_order() {
    let r = request("text-embedding-3-small", &["a", "b"], Some(256));
    assert_eq!(
        Wire::OpenAi.bodies(&r),
        [
            json!({"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "float", "dimensions": 256})
        ]
    );
    // As the API answers (https://platform.openai.com/docs/api-reference/embeddings/create).
    let answer = br#"{"object":"list","data":[
        {"object":"embedding","index":1,"embedding":[0.3,0.4]},
        {"object":"embedding","index":0,"embedding":[0.1,0.2]}],
        "model":"text-embedding-3-small","usage":{"prompt_tokens":5,"total_tokens":5}}"#;
    let e = Wire::OpenAi.read("openai", answer).unwrap();
    assert_eq!(e.vectors, [vec![0.1, 0.2], vec![0.3, 0.4]]);
    assert_eq!(e.input_tokens, Some(5));
    let e = Wire::OpenAi.read("openai", b"{\"data\": 3}").unwrap_err();
    assert!(e
        .message
        .starts_with("openai: the embeddings answer is not the API's"));
}

#[test]
fn ollama_embed_takes_the_batch_and_counts_its_prompt() {
    let r = request("nomic-embed-text", &["a"], None);
    assert_eq!(
        Wire::Ollama.bodies(&r),
        [json!({"model": "nomic-embed-text", "input": ["a"]})]
    );
    let r = request("nomic-embed-text", &["a"], Some(64));
    assert_eq!(Wire::Ollama.bodies(&r)[0]["dimensions"], 64);
    let answer = br#"{"model":"nomic-embed-text","embeddings":[[0.01,-0.02]],"total_duration":14143917,"load_duration":1019500,"prompt_eval_count":8}"#;
    let e = Wire::Ollama.read("ollama", answer).unwrap();
    assert_eq!(
        (e.vectors, e.input_tokens),
        (vec![vec![0.01, -0.02]], Some(8))
    );
}

#[test]
fn gemini_batches_one_request_per_text_with_output_dimensionality() {
    let r = request("models/gemini-embedding-001", &["a", "b"], Some(768));
    let body = &Wire::Gemini.bodies(&r)[0];
    assert_eq!(
        body["requests"][1],
        json!({"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "b"}]}, "outputDimensionality": 768})
    );
    let answer = br#"{"embeddings": [{"values": [0.5]}, {"values": [0.25]}]}"#;
    let e = Wire::Gemini.read("gemini", answer).unwrap();
    assert_eq!(
        (e.vectors, e.input_tokens),
        (vec![vec![0.5], vec![0.25]], None)
    );
}

#[test]
fn bedrock_models_say_their_api_titan_one_text_a_body_cohere_a_batch() {
    let titan = "amazon.titan-embed-text-v2:0";
    assert_eq!(Wire::of(BEDROCK, titan).unwrap(), Wire::Titan);
    assert_eq!(
        Wire::of(BEDROCK, "cohere.embed-english-v3").unwrap(),
        Wire::Cohere
    );
    let e = Wire::of(BEDROCK, "anthropic.claude-3-haiku").unwrap_err();
    assert!(
        e.message.contains("amazon.titan-embed-text-v2:0"),
        "{}",
        e.message
    );
    let bodies = Wire::Titan.bodies(&request(titan, &["a", "b"], Some(256)));
    assert_eq!(
        bodies,
        [
            json!({"inputText": "a", "normalize": true, "dimensions": 256}),
            json!({"inputText": "b", "normalize": true, "dimensions": 256})
        ]
    );
    let v1 = Wire::Titan.bodies(&request("amazon.titan-embed-text-v1", &["a"], None));
    assert_eq!(v1, [json!({"inputText": "a"})]);
    let answer = br#"{"embedding":[0.1,0.2],"embeddingsByType":{"float":[0.1,0.2]},"inputTextTokenCount":3}"#;
    let e = Wire::Titan.read("bedrock", answer).unwrap();
    assert_eq!((e.vectors, e.input_tokens), (vec![vec![0.1, 0.2]], Some(3)));

    let cohere = Wire::Cohere.bodies(&request("cohere.embed-english-v3", &["a"], None));
    assert_eq!(
        cohere,
        [json!({"texts": ["a"], "input_type": "search_document"})]
    );
    let floats =
        br#"{"embeddings":[[0.5,0.5]],"id":"x","response_type":"embeddings_floats","texts":["a"]}"#;
    let by_type = br#"{"embeddings":{"float":[[0.5,0.5]]},"id":"x","response_type":"embeddings_by_type","texts":["a"]}"#;
    for answer in [&floats[..], &by_type[..]] {
        let e = Wire::Cohere.read("bedrock", answer).unwrap();
        assert_eq!((e.vectors, e.input_tokens), (vec![vec![0.5, 0.5]], None));
    }
}
