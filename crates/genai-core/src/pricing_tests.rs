//! Tests of pricing: each kind of token priced apart, the config over the table, and unknown
//! costs kept unknown.

use super::*;

fn usage(input: u64, output: u64, read: Option<u64>, write: Option<u64>) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: read,
        cache_write_tokens: write,
        reasoning_tokens: None,
    }
}

#[test]
fn the_cost_prices_each_kind_of_token_apart() {
    let p = Price::new(3.0, 15.0, 0.3, 3.75);
    // 1M input of which 600k read and 100k written: 300k at 3, 600k at 0.3, 100k at 3.75;
    // 200k output at 15.
    let u = usage(1_000_000, 200_000, Some(600_000), Some(100_000));
    let cost = p.cost(&u);
    assert!((cost - (0.9 + 0.18 + 0.375 + 3.0)).abs() < 1e-9, "{cost}");
    assert!((p.cost(&usage(1000, 0, None, None)) - 0.003).abs() < 1e-12);
    assert_eq!(p.cost(&usage(0, 0, None, None)), 0.0);
    // Counts that do not add up never go negative.
    assert!(p.cost(&usage(10, 0, Some(50), None)) > 0.0);
}

#[test]
fn the_config_overrides_the_table_and_unknown_models_have_no_price() {
    let none = Prices::default();
    let claude = none
        .lookup("anthropic", "anthropic", "claude-sonnet-4-5-20250929")
        .unwrap();
    assert_eq!(claude.price, Price::new(3.0, 15.0, 0.3, 3.75));
    assert!(
        claude.source.to_string().contains(TABLE_DATE),
        "{}",
        claude.source
    );
    // Bedrock's ids, the longest name that matches, and no match by a mere prefix.
    let bedrock = none
        .lookup(
            "work",
            "bedrock",
            "us.anthropic.claude-haiku-4-5-20251001-v1:0",
        )
        .unwrap();
    assert_eq!(bedrock.price.input, 1.0);
    assert_eq!(
        none.lookup("openai", "openai", "gpt-4o-mini")
            .unwrap()
            .price
            .input,
        0.15
    );
    assert!(none.lookup("openai", "openai", "gpt-4.1-nano").is_none());
    assert!(none.lookup("ollama", "ollama", "llama3.2").is_none());
    assert!(
        none.lookup("openai", "openai", "claude-sonnet-4-5")
            .is_none(),
        "a price belongs to its provider kinds"
    );
    assert_eq!(
        none.lookup("local", "local", "any").unwrap().price.output,
        0.0
    );
    // Another server speaking OpenAI's API: its `gpt-4o-mini` is not OpenAI's.
    assert!(none
        .lookup_at("openai", "openai", "gpt-4o-mini", false)
        .is_none());

    let mut config = BTreeMap::new();
    let c = |input: f64| PriceConfig {
        input,
        output: 2.0,
        cache_read: None,
        cache_write: Some(9.0),
    };
    config.insert("anthropic:claude-sonnet-4-5".to_string(), c(1.0));
    config.insert("ollama:*".to_string(), c(0.5));
    config.insert("work:gpt-4o".to_string(), c(7.0));
    let prices = Prices::new(&config).unwrap();
    // The config prices another server's models too.
    assert_eq!(
        prices
            .lookup_at("work", "openai", "gpt-4o", false)
            .unwrap()
            .price
            .input,
        7.0
    );
    let p = prices
        .lookup("anthropic", "anthropic", "claude-sonnet-4-5")
        .unwrap();
    assert_eq!(
        p.price,
        Price::new(1.0, 2.0, 1.0, 9.0),
        "cache_read defaults to input"
    );
    assert_eq!(
        p.source.to_string(),
        "[pricing.\"anthropic:claude-sonnet-4-5\"]"
    );
    assert_eq!(
        prices
            .lookup("o", "ollama", "llama3.2")
            .unwrap()
            .price
            .input,
        0.5
    );
    assert_eq!(
        prices
            .lookup("work", "openai", "gpt-4o")
            .unwrap()
            .price
            .input,
        7.0
    );
    assert_eq!(
        prices
            .lookup("openai", "openai", "gpt-4o")
            .unwrap()
            .price
            .input,
        2.5
    );

    for (key, input) in [("no-colon", 1.0), ("a:b", -1.0), ("a:b", f64::NAN)] {
        let mut bad = BTreeMap::new();
        bad.insert(key.to_string(), c(input));
        let e = Prices::new(&bad).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Config);
        assert!(e.message.contains("pricing."), "{}", e.message);
    }
}

#[test]
fn a_turn_without_price_or_usage_costs_unknown() {
    let u = usage(1_000_000, 0, None, None);
    let priced = Prices::default().lookup("openai", "openai", "gpt-4o");
    let (cost, line) = turn_cost(priced.as_ref(), Some(&u), "openai", "gpt-4o");
    assert_eq!(cost, Some(2.5));
    assert!(line.starts_with("cost: $2.50 (built-in estimate"), "{line}");
    let (cost, line) = turn_cost(None, Some(&u), "o", "x");
    assert_eq!(cost, None);
    assert_eq!(
        line,
        "cost: unknown (no price for o:x: set [pricing.\"o:x\"])"
    );
    assert_eq!(turn_cost(priced.as_ref(), None, "o", "x").0, None);
}

#[test]
fn costs_read_as_money_or_unknown() {
    assert_eq!(show(None), "unknown");
    assert_eq!(show(Some(0.0)), "$0");
    assert_eq!(show(Some(0.000_42)), "$0.000420");
    assert_eq!(show(Some(0.1234)), "$0.1234");
    assert_eq!(show(Some(12.345)), "$12.35");
}
