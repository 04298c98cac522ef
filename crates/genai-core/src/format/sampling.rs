//! The sampling parameters several formats share (temperature, top_p, top_k, max_tokens, stop,
//! seed and the two penalties), declared once: name, type, usual range and meaning. A format
//! lists the ones it accepts and changes only what differs on its wire (a name, a range, a
//! description that says where the value goes) with [`ParameterSpec`]'s `const` setters.
//!
//! It must never place values in a body nor know a format's wire: each format does that itself.

use super::ParameterSpec;

pub(crate) const TEMPERATURE: ParameterSpec = ParameterSpec::number(
    "temperature",
    0.0,
    2.0,
    "Sampling temperature; higher is more random.",
);

pub(crate) const TOP_P: ParameterSpec = ParameterSpec::number(
    "top_p",
    0.0,
    1.0,
    "Nucleus sampling: the probability mass to sample from.",
);

pub(crate) const TOP_K: ParameterSpec = ParameterSpec::integer(
    "top_k",
    0,
    1_000_000,
    "Sample from the k most likely tokens.",
);

pub const MAX_TOKENS: ParameterSpec = ParameterSpec::integer(
    "max_tokens",
    1,
    1_000_000,
    "The most tokens the reply may have.",
);

pub(crate) const STOP: ParameterSpec =
    ParameterSpec::string_list("stop", "Sequences where generation stops.");

pub(crate) const SEED: ParameterSpec = ParameterSpec::integer(
    "seed",
    i64::MIN,
    i64::MAX,
    "Seed for best-effort deterministic sampling.",
);

pub(crate) const PRESENCE_PENALTY: ParameterSpec = ParameterSpec::number(
    "presence_penalty",
    -2.0,
    2.0,
    "Penalty for tokens already present.",
);

pub(crate) const FREQUENCY_PENALTY: ParameterSpec = ParameterSpec::number(
    "frequency_penalty",
    -2.0,
    2.0,
    "Penalty proportional to how often a token appeared.",
);

pub(crate) const REPEAT_PENALTY: ParameterSpec = ParameterSpec::number(
    "repeat_penalty",
    0.0,
    10.0,
    "Penalty for repeating recent tokens (1: none).",
);
