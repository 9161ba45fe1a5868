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
    said(&output)
}

/// What a finished command printed, and its exit code.
fn said(output: &std::process::Output) -> (String, String, i32) {
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
    // A price file over the limit is refused unread, named (a sparse file: no disk spent).
    let big = std::fs::File::create(dir.path().join("big.json")).unwrap();
    big.set_len(react_docstore::analysis::prices::MAX_PRICES_BYTES + 1)
        .unwrap();
    drop(big);
    let (_, stderr, code) = eval(dir.path(), &server.uri(), &["--prices", "big.json"]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("the price file big.json is over 64 MiB"),
        "{stderr}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
    assert!(!dir.path().join("r.jsonl").exists());
}

/// A completions server that scripts ReAct for every question of a question file (search the
/// first supporting title, then finish with the gold answer) and accounts prefix caching as
/// OpenAI documents it: a prompt's cached tokens are the longest prefix it shares with an earlier
/// prompt, counted only from 1,024 tokens, in steps of 128. Its tokenizer is deterministic and
/// simple: a token is a run of letters and digits, or any other character but whitespace.
struct PrefixCachingServer {
    /// Question → (title to search, answer).
    scripts: std::collections::HashMap<String, (String, String)>,
    state: std::sync::Mutex<CacheAccount>,
}

/// What the server has seen and reported.
#[derive(Default)]
struct CacheAccount {
    prompts: Vec<Vec<String>>,
    prompt_tokens: u64,
    cached_tokens: u64,
    completion_tokens: u64,
}

/// The test server's tokens of `text`.
fn pieces(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            tokens.push(std::mem::take(&mut word));
        }
        if !c.is_whitespace() {
            tokens.push(c.to_string());
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    tokens
}

/// OpenAI's rule: no cache below 1,024 tokens, then whole steps of 128.
fn cached_of(shared_prefix: usize) -> usize {
    if shared_prefix < 1024 {
        0
    } else {
        shared_prefix / 128 * 128
    }
}

impl wiremock::Respond for PrefixCachingServer {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let prompt = body["prompt"].as_str().unwrap();
        let (question, step) = crate::react_question_and_step(prompt);
        let (title, answer) = &self.scripts[question.trim()];
        let text = match step {
            1 => format!(" I need to search {title}.\nAction 1: Search[{title}]"),
            _ => format!(" So the answer is {answer}.\nAction {step}: Finish[{answer}]"),
        };
        let tokens = pieces(prompt);
        let mut account = self.state.lock().unwrap();
        let shared = account
            .prompts
            .iter()
            .map(|earlier| earlier.iter().zip(&tokens).take_while(|(a, b)| a == b).count())
            .max()
            .unwrap_or(0);
        let (prompt_tokens, cached, completion) = (
            tokens.len() as u64,
            cached_of(shared) as u64,
            pieces(&text).len() as u64,
        );
        account.prompts.push(tokens);
        account.prompt_tokens += prompt_tokens;
        account.cached_tokens += cached;
        account.completion_tokens += completion;
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "cmpl-1",
            "object": "text_completion",
            "model": "m",
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion,
                "prompt_tokens_details": {"cached_tokens": cached}
            }
        }))
    }
}

/// `$0.000001234` from picodollars (10⁻¹² $), every digit, trailing zeros dropped.
fn dollars_of_picodollars(picodollars: u128) -> String {
    let fraction = format!("{:012}", picodollars % 1_000_000_000_000);
    let fraction = fraction.trim_end_matches('0');
    match fraction {
        "" => format!("${}", picodollars / 1_000_000_000_000),
        _ => format!("${}.{fraction}", picodollars / 1_000_000_000_000),
    }
}

/// Issue 47's check: ReAct over 100 distractor questions against a server that caches prompt
/// prefixes as OpenAI does reads at least 80% of its input from the cache; `eval --prices` costs
/// the evaluation exactly as computed here by hand from what the server reported, and `replay`
/// of its results file gives the same cost with no model.
#[tokio::test(flavor = "multi_thread")]
async fn react_reads_most_of_its_prompt_from_the_prefix_cache_and_replay_prices_it_alike() {
    let questions = crate::fixture("docstore/hotpotqa-distractor-100.json");
    let records: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&questions).unwrap()).unwrap();
    assert_eq!(records.len(), 100);
    let scripts = records
        .iter()
        .map(|record| {
            let title = record["supporting_facts"]["title"][0]
                .as_str()
                .unwrap()
                .to_owned();
            let answer = record["answer"].as_str().unwrap().to_owned();
            (
                record["question"].as_str().unwrap().trim().to_owned(),
                (title, answer),
            )
        })
        .collect();
    let server = std::sync::Arc::new(PrefixCachingServer {
        scripts,
        state: std::sync::Mutex::new(CacheAccount::default()),
    });
    let mock = crate::serve_posts(SharedResponder(server.clone())).await;
    let dir = tempfile::tempdir().unwrap();
    // Dollars per million tokens: $1.25 input, $0.125 cached input, $10 output.
    std::fs::write(
        dir.path().join("prices.toml"),
        "m = { input = 1.25, cached_input = 0.125, output = 10 }\n",
    )
    .unwrap();
    let output = crate::binary()
        .arg("eval")
        .arg(&questions)
        .args([
            "--docstore",
            "distractor",
            "--concurrency",
            "1",
            "--out",
            "r.jsonl",
        ])
        .args(crate::completions_model(&mock.uri()))
        .args(["--prices", "prices.toml", "--json"])
        .current_dir(dir.path())
        .env_remove("REACT_PRICES")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (summary["n"].as_u64(), summary["em"].as_f64()),
        (Some(100), Some(1.0)),
        "{summary}"
    );

    let (prompt_tokens, cached_tokens, completion_tokens) = {
        let account = server.state.lock().unwrap();
        (
            account.prompt_tokens,
            account.cached_tokens,
            account.completion_tokens,
        )
    };
    // What the evaluation reports of its prompt cache is what the server counted.
    let per_question = &summary["per_question"];
    assert_eq!(
        per_question["prompt_tokens"].as_f64(),
        Some(prompt_tokens as f64 / 100.0)
    );
    assert_eq!(
        per_question["cached_tokens"].as_f64(),
        Some(cached_tokens as f64 / 100.0)
    );
    let share = cached_tokens as f64 / prompt_tokens as f64;
    eprintln!(
        "prefix cache: {cached_tokens} of {prompt_tokens} input tokens cached ({:.1}%)",
        100.0 * share
    );
    assert!(
        share >= 0.8,
        "{cached_tokens} of {prompt_tokens} input tokens cached ({share:.3})"
    );

    // By hand, in picodollars a token: input $1.25/M = 1,250,000; cached $0.125/M = 125,000;
    // output $10/M = 10,000,000.
    let picodollars = u128::from(prompt_tokens - cached_tokens) * 1_250_000
        + u128::from(cached_tokens) * 125_000
        + u128::from(completion_tokens) * 10_000_000;
    let by_hand = dollars_of_picodollars(picodollars);
    assert_eq!(
        summary["cost"]["total"].as_str(),
        Some(by_hand.as_str()),
        "{summary}"
    );
    assert_eq!(summary["cost"]["priced"], json!(100));
    let n_requests = server.state.lock().unwrap().prompts.len();

    // Replay prices the recorded usage alike, with no model: the server hears nothing more.
    let replayed = crate::binary()
        .args(["replay", "r.jsonl", "--prices", "prices.toml"])
        .current_dir(dir.path())
        .env_remove("REACT_PRICES")
        .output()
        .unwrap();
    let replay_stderr = String::from_utf8_lossy(&replayed.stderr);
    assert_eq!(replayed.status.code(), Some(0), "{replay_stderr}");
    let cost_line = replay_stderr
        .lines()
        .find(|line| line.starts_with("-- cost "))
        .unwrap_or_else(|| panic!("{replay_stderr}"));
    assert!(
        cost_line.starts_with(&format!("-- cost           {by_hand} in all, "))
            && cost_line.ends_with(" over 100 runs"),
        "{cost_line}"
    );
    let tokens_line = format!(
        "-- tokens         {prompt_tokens} input ({cached_tokens} cached, 0 cache write), {completion_tokens} output (0 reasoning), over 100 runs"
    );
    assert!(
        replay_stderr.lines().any(|line| line == tokens_line),
        "{replay_stderr}"
    );
    assert_eq!(server.state.lock().unwrap().prompts.len(), n_requests);
    assert_eq!(mock.received_requests().await.unwrap().len(), n_requests);
}

/// A responder shared with the test, which reads its account after the run.
struct SharedResponder(std::sync::Arc<PrefixCachingServer>);

impl wiremock::Respond for SharedResponder {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        self.0.respond(request)
    }
}

/// `binary args…` in `dir`, no price file from the environment: (stdout, stderr, exit code).
fn run_in(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let output = crate::binary()
        .args(args)
        .current_dir(dir)
        .env_remove("REACT_PRICES")
        .output()
        .unwrap();
    said(&output)
}

/// `score`, `compare`, `report` and `replay` give the tokens by kind and, with `--prices`, the
/// cost `eval` gave, from the usage the results file recorded and no model; a model the file has
/// no price for is named unpriced, not costed at zero; an official predictions file, which holds
/// answers only, is said to record no tokens.
#[tokio::test(flavor = "multi_thread")]
async fn every_command_that_reads_runs_prices_them_as_eval_did() {
    let server = crate::serve_posts(scripted_usage()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prices.toml"),
        "m = { input = 0.15, cached_input = 0.075, output = 0.6 }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("other.toml"),
        "[gpt-4o]\ninput = 2.5\noutput = 10\n",
    )
    .unwrap();
    let (stdout, stderr, code) = eval(dir.path(), &server.uri(), &["--prices", "prices.toml"]);
    assert_eq!(code, 0, "{stderr}");
    // By hand, as above: 3 × (200 × $0.15 + 800 × $0.075 + 30 × $0.60) per million = $0.000324.
    let cost = "cost           $0.000324 in all, $0.000108 a run, over 3 runs";
    assert!(stdout.lines().any(|line| line == cost), "{stdout}");
    let tokens =
        "tokens         3000 input (2400 cached, 0 cache write), 90 output (30 reasoning), over 3 runs";
    let n_requests = server.received_requests().await.unwrap().len();
    let gold = crate::fixture("docstore/hotpotqa-distractor-100.json");
    let gold = gold.to_str().unwrap();

    let (stdout, stderr, _) = run_in(dir.path(), &["score", "r.jsonl", gold, "--prices", "prices.toml"]);
    assert!(stdout.lines().any(|line| line == tokens), "{stdout}{stderr}");
    assert!(stdout.lines().any(|line| line == cost), "{stdout}");
    let (stdout, _, _) = run_in(
        dir.path(),
        &["score", "r.jsonl", gold, "--prices", "prices.toml", "--json"],
    );
    let score: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(score["cost"]["total"], json!("$0.000324"), "{score}");
    assert_eq!(
        score["tokens"],
        json!({"runs": 3, "runs_with_tokens": 3, "input": 3000, "cached_input": 2400, "cache_write": 0, "output": 90, "reasoning": 30})
    );
    // Without a price file, the tokens and no cost.
    let (stdout, _, _) = run_in(dir.path(), &["score", "r.jsonl", gold]);
    assert!(stdout.lines().any(|line| line == tokens), "{stdout}");
    assert!(!stdout.lines().any(|line| line.starts_with("cost")), "{stdout}");
    // A model the price file does not know is named, never costed at zero.
    let (stdout, _, _) = run_in(dir.path(), &["score", "r.jsonl", gold, "--prices", "other.toml"]);
    assert!(
        stdout.contains("cost           $0 in all, $0.000000 a run, over 0 runs; no price for m\n"),
        "{stdout}"
    );
    // Official predictions hold answers only: no tokens to count, said so, not zeros.
    std::fs::write(dir.path().join("official.json"), r#"{"answer": {}}"#).unwrap();
    let (stdout, _, _) = run_in(
        dir.path(),
        &["score", "official.json", gold, "--prices", "prices.toml"],
    );
    assert!(
        stdout.contains("tokens         not recorded: official predictions hold answers only"),
        "{stdout}"
    );
    assert!(!stdout.lines().any(|line| line.starts_with("cost")), "{stdout}");

    let (stdout, stderr, code) = run_in(
        dir.path(),
        &["compare", "r.jsonl", "r.jsonl", "--prices", "prices.toml"],
    );
    assert_eq!(code, 0, "{stderr}");
    for side in ["A", "B"] {
        assert!(
            stdout.contains(&format!("tokens {side}       3000 input (2400 cached, 0 cache write), 90 output (30 reasoning), over 3 runs\n")),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!(
                "cost {side}         $0.000324 in all, $0.000108 a run, over 3 runs\n"
            )),
            "{stdout}"
        );
    }
    let (stdout, _, _) = run_in(
        dir.path(),
        &[
            "compare",
            "r.jsonl",
            "r.jsonl",
            "--prices",
            "prices.toml",
            "--json",
        ],
    );
    let comparison: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        comparison["b"]["cost"]["total"],
        json!("$0.000324"),
        "{comparison}"
    );
    assert_eq!(
        comparison["a"]["tokens"]["cached_input"],
        json!(2400),
        "{comparison}"
    );

    let (_, stderr, code) = run_in(
        dir.path(),
        &["report", "r.jsonl", "--out", "r.html", "--prices", "prices.toml"],
    );
    assert_eq!(code, 0, "{stderr}");
    let html = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
    for cell in [
        "<th>input tokens (in all; a run)</th><td>3000<br><span class=\"sub\">1000 a run</span></td>",
        "<th>of them cached (in all; a run)</th><td>2400<br><span class=\"sub\">800 a run</span></td>",
        "<th>of them reasoning (in all; a run)</th><td>30<br><span class=\"sub\">10 a run</span></td>",
        "<td>$0.000324<br><span class=\"sub\">$0.000108 a run, over 3 runs</span></td>",
    ] {
        assert!(html.contains(cell), "{cell} not in the report");
    }

    let (_, stderr, code) = run_in(dir.path(), &["replay", "r.jsonl", "--prices", "prices.toml"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.lines().any(|line| line == format!("-- {tokens}")),
        "{stderr}"
    );
    assert!(
        stderr.lines().any(|line| line == format!("-- {cost}")),
        "{stderr}"
    );
    let (stdout, _, _) = run_in(
        dir.path(),
        &["replay", "r.jsonl", "--prices", "prices.toml", "--json"],
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        summary["summary"]["cost"]["total"],
        json!("$0.000324"),
        "{summary}"
    );

    // Not one of them asked the model.
    assert_eq!(server.received_requests().await.unwrap().len(), n_requests);
}
