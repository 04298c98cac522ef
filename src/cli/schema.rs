//! `genai schema [NAME]`: prints generated JSON Schemas.

use genai_core::error::{Error, ErrorKind};

pub fn run(name: Option<&str>) -> Result<(), Error> {
    let all = genai_rpc::schema::all();
    match name {
        None => {
            for (n, _) in &all {
                outln!("{n}");
            }
            Ok(())
        }
        Some(name) => {
            let name = name.trim_end_matches(".json");
            let (_, v) = all
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidParams,
                        format!("no schema named `{name}`; run `genai schema` for the list"),
                    )
                })?;
            out!("{}", genai_rpc::schema::render(v));
            Ok(())
        }
    }
}
