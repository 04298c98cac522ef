//! `genai components`: the registry as tables, or as the JSON of `ListComponents`.

use genai_core::error::Error;

pub fn run(json: bool) -> Result<(), Error> {
    let (_, config, registry) = super::load()?;
    // The core adds its built-in features when it starts; this command lists without one.
    genai_core::feature::register_builtin(&registry);
    let selector = genai_core::select::Selector {
        config: &config,
        registry: &registry,
    };
    let c = genai_protocol::listings::Components::from(selector.components()?);
    if json {
        super::print_json(&c);
        return Ok(());
    }
    outln!("SERVICE PROVIDERS");
    outln!(
        "  {:<16} {:<14} {:<10} DEFAULT MODEL",
        "NAME",
        "KIND",
        "ORIGIN"
    );
    for p in &c.service_providers {
        outln!(
            "  {:<16} {:<14} {:<10} {}",
            p.name,
            p.kind,
            p.origin,
            p.default_model.as_deref().unwrap_or("-")
        );
    }
    outln!("\nMODEL CONFIGURATIONS");
    if c.model_configurations.is_empty() {
        outln!("  (none; `provider:model` makes one on the fly)");
    }
    for m in &c.model_configurations {
        outln!("  {:<16} {:<16} {}", m.name, m.format, m.model);
    }
    outln!("\nFEATURES");
    for f in &c.features {
        outln!(
            "  {:<16} {:<8} {}",
            f["name"].as_str().unwrap_or(""),
            f["origin"].as_str().unwrap_or(""),
            f["description"].as_str().unwrap_or("")
        );
    }
    outln!("\nPROVIDER KINDS (formats they run)");
    for k in c.kinds["serviceProviders"].as_array().into_iter().flatten() {
        let formats: Vec<&str> = k["formats"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str())
            .collect();
        outln!(
            "  {:<16} {}",
            k["name"].as_str().unwrap_or(""),
            formats.join(", ")
        );
    }
    outln!("\nMODEL FORMATS (parameters)");
    for k in c.kinds["modelConfigurations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let params: Vec<&str> = k["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        outln!(
            "  {:<16} {}",
            k["name"].as_str().unwrap_or(""),
            params.join(", ")
        );
    }
    Ok(())
}
