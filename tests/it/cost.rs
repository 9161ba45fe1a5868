//! `--prices FILE`: what an evaluation's tokens cost, exactly, from LiteLLM's price map or a TOML
//! table, checked against a hand computation.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

/// Every request answered by one completion with the same usage: 1,000 prompt tokens of which 800
/// read from the server's prompt cache, 30 completion tokens of which 10 reasoning.
fn scripted_usage() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "cmpl-1",
        "object": "text_completion",
        "model": "m",
        "choices": [{"index": 0, "text": " Paris", "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 1000,
            "completion_tokens": 30,
            "total_tokens": 1030,
            "prompt_tokens_details": {"cached_tokens": 800},
            "completion_tokens_details": {"reasoning_tokens": 10}
        }
    }))
}

fn eval(dir: &Path, base_url: &str, extra: &[&str]) -> (String, String, i32) {
    let questions = crate::fixture("docstore/hotpotqa-distractor-100.json");
    let output = crate::binary()
        .args(["eval"])
        .arg(&questions)
        .args([
            "--docstore",
            "distractor",
            "--method",
            "standard",
            "--limit",
            "3",
            "--out",
            "r.jsonl",
        ])
        .args(crate::completions_model(base_url))
        .args(extra)
        .current_dir(dir)
        .env_remove("REACT_PRICES")
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_prices_its_runs_exactly_from_either_price_format() {
    let server = crate::serve_posts(scripted_usage()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prices.toml"),
        "m = { input = 0.15, cached_input = 0.075, output = 0.6 }\n",
    )
    .unwrap();
    // LiteLLM's map names the model with its provider, and bills reasoning apart.
    std::fs::write(
        dir.path().join("prices.json"),
        r#"{"sample_spec": {"max_tokens": "LEGACY"},
            "openai/m": {"input_cost_per_token": 1.5e-07, "output_cost_per_token": 6e-07,
                         "output_cost_per_reasoning_token": 1.2e-06}}"#,
    )
    .unwrap();

    let (stdout, stderr, code) = eval(dir.path(), &server.uri(), &["--prices", "prices.toml"]);
    assert_eq!(code, 0, "{stderr}");
    // By hand: 3 questions × (200 × $0.15 + 800 × $0.075 + 30 × $0.60) per million tokens
    // = 3 × $0.000108 = $0.000324.
    // The summary says how much of the prompt the server's cache served.
    assert!(
        stdout.contains(
            "1000 prompt tokens (800 read from the prompt cache, 0 written to it), 30 completion tokens\n"
        ),
        "{stdout}"
    );
    let line = stdout
        .lines()
        .find(|line| line.starts_with("cost"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(
        line,
        "cost           $0.000324 in all, $0.000108 a run, over 3 runs"
    );

    // The resumed evaluation, priced from LiteLLM's map, as JSON: no cached price (cached input
    // at the input price), reasoning at its own price,
    // 3 × (1,000 × 0.15 + 20 × 0.60 + 10 × 1.20) / 10^6 = $0.000522.
    let (stdout, stderr, code) = eval(dir.path(), &server.uri(), &["--prices", "prices.json", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["cost"]["total"], json!("$0.000522"), "{summary}");
    assert_eq!(summary["cost"]["priced"], json!(3));
    assert_eq!(summary["per_question"]["cached_tokens"], json!(800.0));
    assert_eq!(summary["cost"].get("unpriced_models"), None);
    // Three requests in all: pricing asked nothing again.
    assert_eq!(server.received_requests().await.unwrap().len(), 3);

    // A price file without the model: the cost says which model it could not price.
    std::fs::write(
        dir.path().join("other.toml"),
        "[gpt-4o]\ninput = 2.5\noutput = 10\n",
    )
    .unwrap();
    let (stdout, _, code) = eval(dir.path(), &server.uri(), &["--prices", "other.toml"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("cost           $0 in all, $0.000000 a run, over 0 runs; no price for m\n"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_price_file_is_refused_before_any_request() {
    let server = crate::serve_posts(scripted_usage()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prices.toml"), "[m]\ninput = 0.15\noutput = -1\n").unwrap();
    let (_, stderr, code) = eval(dir.path(), &server.uri(), &["--prices", "prices.toml"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("the price file prices.toml, model `m`, `output`: `-1` is negative"),
        "{stderr}"
    );
    let (_, stderr, code) = eval(dir.path(), &server.uri(), &["--prices", "missing.toml"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("cannot read the price file missing.toml"),
        "{stderr}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
    assert!(!dir.path().join("r.jsonl").exists());
}
