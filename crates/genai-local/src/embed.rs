//! Pooled embeddings of any GGUF: the model (loaded once per process, shared with its chat
//! engine) run in a context of its own with embeddings on, one text at a time, each text's
//! token vectors pooled as the model declares (mean pooling when it declares none, as a chat
//! model does), cut to `dimensions` when asked, and scaled to length 1 as OpenAI's are.
//!
//! It owns that context and the pooling choice. It must never run on an async worker (it
//! blocks: the provider runs it with `spawn_blocking`), never touch a chat engine's context or
//! scheduler, and never sample.

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::OnceLock;

use llama_cpp_2::context::params::{LlamaContextParams, LlamaPoolingType};
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;

use super::engine::{self, EngineSettings};
use super::load;
use super::scheduler::CONTEXT_CREATION;
use genai_core::embedding::{normalize, EmbedRequest, Embeddings};
use genai_core::error::{Error, Result};

/// The pooling a context uses: the model's own when its GGUF declares mean, CLS or last
/// pooling (`{arch}.pooling_type` 1, 2, 3), else mean pooling.
pub(crate) fn pooling(declared: Option<&str>) -> LlamaPoolingType {
    match declared.map(str::trim) {
        Some("1" | "2" | "3") => LlamaPoolingType::Unspecified,
        _ => LlamaPoolingType::Mean,
    }
}

/// The vectors of `request`'s texts from the model at `path`.
pub(crate) fn embed(
    path: &Path,
    settings: EngineSettings,
    request: &EmbedRequest,
    provider: &str,
) -> Result<Embeddings> {
    let model = engine::model(&engine::canonical(path)?)?;
    let vocab = model.vocab();
    let texts: Vec<_> = request
        .inputs
        .iter()
        .map(|t| vocab.tokenize(t.replace('\0', "").as_bytes(), true, false))
        .collect();
    let limit = model.n_ctx_train().max(1) as usize;
    if let Some((i, t)) = texts.iter().enumerate().find(|(_, t)| t.len() > limit) {
        return Err(Error::invalid_params(format!(
            "{provider}: text {} has {} tokens, over the {limit} the model takes: shorten it",
            i + 1,
            t.len()
        )));
    }
    let width = model.n_embd_out().max(1) as usize;
    if let Some(d) = request.dimensions.filter(|d| *d as usize > width) {
        return Err(Error::invalid_params(format!(
            "{provider}: dimensions {d} is over the model's {width}: ask for {width} or fewer"
        )));
    }
    let longest = texts.iter().map(Vec::len).max().unwrap_or(1).max(1) as u32;
    let mut context = {
        let architecture = model.meta_val_str("general.architecture").ok();
        let declared =
            architecture.and_then(|a| model.meta_val_str(&format!("{a}.pooling_type")).ok());
        let threads = threads(settings) as i32;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(longest))
            .with_n_batch(longest)
            .with_n_ubatch(longest)
            .with_embeddings(true)
            .with_pooling_type(pooling(declared.as_deref()))
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let _one_at_a_time = CONTEXT_CREATION.lock().unwrap_or_else(|p| p.into_inner());
        model
            .new_context(engine::backend()?, params)
            .map_err(|e| failed(provider, model, &e.to_string()))?
    };
    let mut out = Embeddings {
        vectors: Vec::with_capacity(texts.len()),
        input_tokens: Some(texts.iter().map(|t| t.len() as u64).sum()),
    };
    let mut batch = LlamaBatch::new(longest as usize, 1);
    for tokens in &texts {
        context.clear_kv_cache();
        batch.clear();
        batch
            .add_sequence(tokens, 0, true)
            .map_err(|e| failed(provider, model, &e.to_string()))?;
        context
            .decode(&mut batch)
            .map_err(|e| failed(provider, model, &e.to_string()))?;
        let pooled = context
            .embeddings_seq_ith(0)
            .map_err(|_| failed(provider, model, "no pooled vector came out"))?;
        let mut v = pooled.to_vec();
        if let Some(d) = request.dimensions {
            v.truncate(d as usize);
        }
        normalize(&mut v);
        out.vectors.push(v);
    }
    Ok(out)
}

/// The threads of an embedding context: the configured ones, else the default ones fitted
/// once per process to the cores other processes keep busy (`load.rs`: on a busy 2-core
/// machine 100 short texts took 27 s on 2 threads and 6.9 s on 1).
fn threads(settings: EngineSettings) -> u32 {
    static FITTED: OnceLock<u32> = OnceLock::new();
    if !settings.fit_to_load {
        return settings.threads_batch.max(1);
    }
    *FITTED.get_or_init(|| {
        let wanted = (settings.threads, settings.threads_batch);
        let fitted = match load::CpuTimes::now() {
            Some(before) => load::fitted(wanted, before, engine::cores()),
            None => wanted,
        };
        fitted.1.max(1)
    })
}

fn failed(provider: &str, model: &LlamaModel, why: &str) -> Error {
    let name = model.meta_val_str("general.name").unwrap_or_default();
    Error::internal(format!("{provider}: embedding with {name} failed: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_declaring_no_pooling_is_mean_pooled_and_a_declared_one_kept() {
        assert_eq!(pooling(None), LlamaPoolingType::Mean);
        assert_eq!(pooling(Some("0")), LlamaPoolingType::Mean);
        assert_eq!(pooling(Some("4")), LlamaPoolingType::Mean);
        for declared in ["1", "2", "3"] {
            assert_eq!(pooling(Some(declared)), LlamaPoolingType::Unspecified);
        }
    }
}
