//! `--api responses` and `--api responses-tools` against a scripted server speaking OpenAI's
//! Responses API (`POST /v1/responses`): each request body is checked field by field against the
//! documented schema (the server answers 400 naming what is wrong), each reply is one of
//! `fixtures/responses/` (written from the documented schema, parsed by the `openai` SDK's
//! `Response` model in `tests/clients/sdk_models.py`) with its texts and ids changed. The methods
//! give the scripted EM, every later request carries the earlier reasoning items unchanged, and a
//! replay of the results gives the same answers with no model.

use std::process::Command;

use serde_json::{Value, json};
use wiremock::{Request, ResponseTemplate};

use crate::{binary, fixture, request_bodies, serve_posts};

/// A reply of `fixtures/responses/`, as the server's template.
fn template(name: &str) -> Value {
    let path = fixture(&format!("responses/{name}"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The marker question `i` carries, which the scripted model reads.
fn marker(i: usize) -> String {
    format!("zqx{i}qxz")
}

/// Ten questions, question `i`'s gold `Answer {i}`.
fn questions(dir: &std::path::Path) -> std::path::PathBuf {
    let questions: Vec<Value> = (0..10)
        .map(
            |i| json!({"question": format!("Which page is {}?", marker(i)), "answer": format!("Answer {i}")}),
        )
        .collect();
    let path = dir.join("questions.json");
    std::fs::write(&path, Value::Array(questions).to_string()).unwrap();
    path
}

/// The question a request asks.
fn question_of(body: &Value) -> usize {
    let text = body["input"].to_string();
    let at = text.rfind("Which page is ").unwrap();
    (0..10)
        .find(|i| text[at..].starts_with(&format!("Which page is {}", marker(*i))))
        .unwrap()
}

/// What the model answers: the gold answer for questions 0 to 6, a wrong one for 7 to 9 (EM 0.7).
fn answer(question: usize) -> String {
    match question {
        0..7 => format!("Answer {question}"),
        _ => "a wrong answer".to_owned(),
    }
}

/// The entity the model searches first: a page of the test corpus.
const ENTITY: &str = "Special Forces Regiment (Airborne)";

/// The reasoning item the model sends at step `step` of `question`: opaque encrypted content
/// the server can check without keeping state.
fn reasoning_item(question: usize, step: usize) -> Value {
    let mut item = template("function-call.json")["output"][0].clone();
    item["id"] = json!(format!("rs_{question}_{step}"));
    item["encrypted_content"] = json!(format!("gAAAAB{question}x{step}/+zz=="));
    item["summary"][0]["text"] = json!(format!("**Step {step}**\n\nThinking about question {question}."));
    item
}

/// The function call item of step `step` of `question`.
fn call_item(question: usize, step: usize) -> Value {
    let (name, arguments) = match step {
        1 => ("search", json!({"entity": ENTITY})),
        _ => ("finish", json!({"answer": answer(question)})),
    };
    let mut item = template("function-call.json")["output"][1].clone();
    item["id"] = json!(format!("fc_{question}_{step}"));
    item["call_id"] = json!(format!("call_{question}_{step}"));
    item["name"] = json!(name);
    item["arguments"] = json!(arguments.to_string());
    item
}

/// A 400 in OpenAI's words, naming what the scripted server found wrong.
fn invalid(message: String) -> ResponseTemplate {
    ResponseTemplate::new(400).set_body_json(json!({"error": {
        "message": message, "type": "invalid_request_error", "param": null, "code": null}}))
}

/// The fields every request of either protocol carries, as the client sends them by default.
fn check_common(body: &Value) -> Result<(), String> {
    let fields = body.as_object().ok_or("the body is no object")?;
    for absent in [
        "stop",
        "n",
        "messages",
        "prompt",
        "max_tokens",
        "max_completion_tokens",
    ] {
        if fields.contains_key(absent) {
            return Err(format!("`{absent}` is no field of the Responses API"));
        }
    }
    let expected = [
        ("model", json!("gpt-5")),
        ("store", json!(false)),
        ("include", json!(["reasoning.encrypted_content"])),
        ("max_output_tokens", json!(256)),
    ];
    for (field, value) in expected {
        if body[field] != value {
            return Err(format!("`{field}` is {}, expected {value}", body[field]));
        }
    }
    Ok(())
}

/// A Responses server for `--api responses-tools`: checks the tools and every input item, the
/// earlier steps' reasoning and call items exactly as it sent them; searches, then answers.
struct ToolsModel;

/// What is wrong with a function-calling request, if anything; else the step it asks for.
fn check_tools_request(body: &Value) -> Result<usize, String> {
    check_common(body)?;
    if body["tool_choice"] != "auto" {
        return Err("`tool_choice` is not `auto`".to_owned());
    }
    let tools = body["tools"].as_array().ok_or("no `tools`")?;
    for tool in tools {
        let keys: Vec<&String> = tool.as_object().ok_or("a tool is no object")?.keys().collect();
        if keys != ["description", "name", "parameters", "type"]
            || tool["type"] != "function"
            || !tool["parameters"].is_object()
        {
            return Err(format!("a tool is not a function tool: {tool}"));
        }
    }
    let input = body["input"].as_array().ok_or("`input` is no list of items")?;
    for (idx, role) in [(0, "system"), (1, "user")] {
        let item = &input[idx];
        if item["type"] != "message" || item["role"] != role || !item["content"].is_string() {
            return Err(format!("input item {idx} is not the {role} message: {item}"));
        }
    }
    let question = question_of(body);
    let rest = &input[2..];
    if rest.len() % 3 != 0 {
        return Err(format!(
            "{} items after the messages, not whole steps",
            rest.len()
        ));
    }
    for (idx, step) in rest.chunks(3).enumerate() {
        let number = idx + 1;
        if step[0] != reasoning_item(question, number) {
            return Err(format!("step {number}'s reasoning item changed: {}", step[0]));
        }
        if step[1] != call_item(question, number) {
            return Err(format!("step {number}'s function call changed: {}", step[1]));
        }
        let output = &step[2];
        if output["type"] != "function_call_output"
            || output["call_id"] != step[1]["call_id"]
            || !output["output"].is_string()
        {
            return Err(format!(
                "step {number}'s observation is no function_call_output: {output}"
            ));
        }
    }
    Ok(rest.len() / 3 + 1)
}

impl wiremock::Respond for ToolsModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if body["temperature"] != json!(0.0) {
            return invalid(format!("`temperature` is {}", body["temperature"]));
        }
        let step = match check_tools_request(&body) {
            Ok(step) => step,
            Err(message) => return invalid(message),
        };
        let question = question_of(&body);
        let mut reply = template("function-call.json");
        reply["id"] = json!(format!("resp_{question}_{step}"));
        reply["output"] = json!([reasoning_item(question, step), call_item(question, step)]);
        ResponseTemplate::new(200).set_body_json(reply)
    }
}

fn eval(
    questions: &std::path::Path,
    out: &std::path::Path,
    server: &str,
    args: &[&str],
) -> std::process::Output {
    let corpus = crate::test_corpus();
    binary()
        .arg("eval")
        .arg(questions)
        .args(["--docstore", &corpus, "--model", "gpt-5"])
        .args(["--base-url", &format!("{server}/v1"), "--out"])
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

fn runs(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The answers of `runs`, by question.
fn answers(runs: &[Value]) -> Vec<(String, String)> {
    let mut answers: Vec<(String, String)> = runs
        .iter()
        .map(|run| {
            (
                run["question"].as_str().unwrap().to_owned(),
                run["answer"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    answers.sort();
    answers
}

fn em(runs: &[Value]) -> f64 {
    runs.iter().map(|run| run["em"].as_f64().unwrap()).sum()
}

/// `replay --json` of a results file with no model: the runs and the summary line.
fn replay(out: &std::path::Path) -> (Vec<Value>, Value) {
    let replayed = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(["replay", "--json"])
        .arg(out)
        .output()
        .unwrap();
    crate::assert_exit_0(&replayed);
    let mut replayed: Vec<Value> = String::from_utf8_lossy(&replayed.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let summary = replayed.pop().unwrap();
    (replayed, summary)
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_tools_passes_every_reasoning_item_back_and_replays_offline() {
    let server = serve_posts(ToolsModel).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("responses-tools.jsonl");
    let output = eval(&questions, &out, &server.uri(), &["--api", "responses-tools"]);
    crate::assert_exit_0(&output);
    let recorded = runs(&out);
    assert_eq!(recorded.len(), 10);
    assert!(recorded.iter().all(|run| run["error"].is_null()), "{recorded:#?}");
    assert_eq!(em(&recorded), 7.0, "{recorded:#?}");
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 20, "two requests a question");
    // The server refused any request whose earlier items were not as it sent them; each
    // question's second request carries its first step's three items.
    let with_history = bodies
        .iter()
        .filter(|body| body["input"].as_array().unwrap().len() == 5)
        .count();
    assert_eq!(with_history, 10);
    // Responses not stored are never chained.
    assert!(
        bodies
            .iter()
            .all(|body| body.get("previous_response_id").is_none())
    );
    for run in &recorded {
        assert_eq!(run["api"], "responses-tools");
        // The run file's schema takes the API, the output items passed back and the cached
        // tokens.
        assert_eq!(crate::docs::validate_run(run), Vec::<String>::new());
        let step = &run["steps"][0];
        // The summary is the step's reasoning; the output items, encrypted content and all, are
        // what the run file keeps to send back.
        let question = question_index(run);
        assert_eq!(
            step["reasoning"],
            format!("**Step 1**\n\nThinking about question {question}.")
        );
        let kept = &step["replies"][0]["passback"]["output"];
        assert_eq!(
            kept[0]["encrypted_content"],
            reasoning_item(question, 1)["encrypted_content"]
        );
        let usage = &run["usage"];
        assert_eq!(
            [
                &usage["prompt_tokens"],
                &usage["cached_tokens"],
                &usage["reasoning_tokens"]
            ],
            [&json!(4012), &json!(3840), &json!(256)],
            "{usage:#}"
        );
    }

    let (replayed, summary) = replay(&out);
    assert_eq!(
        (&summary["summary"]["em"], &summary["summary"]["changed"]),
        (&json!(0.7), &json!(0)),
        "{summary:#}"
    );
    assert_eq!(answers(&replayed), answers(&recorded));
}

/// The index of the question a run answered.
fn question_index(run: &Value) -> usize {
    let question = run["question"].as_str().unwrap();
    (0..10).find(|i| question.contains(&marker(*i))).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn no_reasoning_echo_leaves_the_reasoning_items_out() {
    let server = serve_posts(ToolsModel).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("responses-tools.jsonl");
    let args = ["--api", "responses-tools", "--no-reasoning-echo", "--limit", "1"];
    let output = eval(&questions, &out, &server.uri(), &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("2 items after the messages, not whole steps"),
        "{stderr}"
    );
    let bodies = request_bodies(&server).await;
    // The server refuses the second request, whose first step lacks its reasoning item.
    assert_eq!(bodies.len(), 2);
    let second = bodies[1]["input"].as_array().unwrap();
    assert!(
        second.iter().all(|item| item["type"] != "reasoning"),
        "{second:#?}"
    );
    assert_eq!(second[2], call_item(0, 1));
    assert!(runs(&out)[0]["error"].is_string());
}

/// A Responses server for `--api responses`: a text model that writes past the step's
/// `Observation` marker (the API has no `stop`), and CoT samples.
struct TextModel {
    /// Refuses `temperature` as OpenAI's reasoning models do (`error-temperature.json`).
    refuses_temperature: bool,
}

impl TextModel {
    /// The text the model continues `input` with.
    fn text(input: &str, question: usize) -> String {
        let tail = &input[input.rfind("Which page is ").unwrap()..];
        if tail.ends_with("\nThought:") {
            return format!(" The page is {}.\nAnswer: {}", answer(question), answer(question));
        }
        let step = tail.matches("\nObservation ").count() + 1;
        match step {
            1 => format!(
                " I need to search {ENTITY}.\nAction 1: Search[{ENTITY}]\nObservation 1: made up by the model past the marker."
            ),
            _ => format!(
                " It is {0}.\nAction {step}: Finish[{0}]\nObservation {step}: more past the marker.",
                answer(question)
            ),
        }
    }
}

impl wiremock::Respond for TextModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if self.refuses_temperature && body.get("temperature").is_some() {
            return ResponseTemplate::new(400).set_body_json(template("error-temperature.json"));
        }
        if let Err(message) = check_common(&body) {
            return invalid(message);
        }
        let (Some(instructions), Some(input)) = (body["instructions"].as_str(), body["input"].as_str())
        else {
            return invalid("a text request is `instructions` and an `input` text".to_owned());
        };
        if !instructions.starts_with("Continue the text the user sends") {
            return invalid(format!("`instructions` is {instructions:?}"));
        }
        let question = question_of(&body);
        let mut reply = template("text.json");
        reply["instructions"] = json!(instructions);
        reply["output"][0]["summary"][0]["text"] = json!(format!("Thinking about question {question}."));
        reply["output"][1]["content"][0]["text"] = json!(Self::text(input, question));
        ResponseTemplate::new(200).set_body_json(reply)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_text_protocol_cuts_at_the_marker_for_react_and_samples_one_request_each() {
    let server = serve_posts(TextModel {
        refuses_temperature: false,
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("react.jsonl");
    let evaluated = eval(&questions, &out, &server.uri(), &["--api", "responses"]);
    crate::assert_exit_0(&evaluated);
    let recorded = runs(&out);
    assert_eq!(em(&recorded), 7.0, "{recorded:#?}");
    for run in &recorded {
        assert_eq!(run["api"], "responses");
        assert_eq!(run["format"], "react-docstore.run.v2");
        assert_eq!(crate::docs::validate_run(run), Vec::<String>::new());
        let question = question_index(run);
        for (idx, step) in run["steps"].as_array().unwrap().iter().enumerate() {
            let completion = step["completions"][0].as_str().unwrap();
            assert!(!completion.contains("Observation"), "{completion:?}");
            // The step records what the client cut past the marker: the characters, and the
            // text's output tokens (300 less 128 of reasoning, `text.json`) in proportion.
            let prompt = format!(
                "Which page is {}?\n{}",
                marker(question),
                "Observation ".repeat(idx)
            );
            let written = TextModel::text(&prompt, question);
            let at = written.find(&format!("\nObservation {}:", idx + 1)).unwrap();
            let (cut, total) = (written[at..].chars().count(), written.chars().count());
            let tokens = (172.0 * cut as f64 / total as f64).round();
            assert_eq!(
                step["past_stop"],
                json!({"chars": cut, "tokens_estimated": tokens as u64}),
                "{step:#}"
            );
        }
        let step = &run["steps"][0];
        assert_eq!(step["action"], format!("Search[{ENTITY}]"));
        assert_eq!(step["reasoning"], format!("Thinking about question {question}."));
    }
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 20);
    assert!(bodies.iter().all(|body| body["temperature"] == json!(0.0)));
    let (replayed, summary) = replay(&out);
    assert_eq!(
        (&summary["summary"]["em"], &summary["summary"]["changed"]),
        (&json!(0.7), &json!(0)),
        "{summary:#}"
    );
    assert_eq!(answers(&replayed), answers(&recorded));
    // The replay records the same cuts, with no model.
    let cuts = |runs: &[Value]| {
        let mut cuts: Vec<(String, Value)> = runs
            .iter()
            .flat_map(|run| {
                run["steps"].as_array().unwrap().iter().map(|step| {
                    (
                        run["question"].as_str().unwrap().to_owned(),
                        step["past_stop"].clone(),
                    )
                })
            })
            .collect();
        cuts.sort_by(|a, b| a.0.cmp(&b.0));
        cuts
    };
    assert_eq!(cuts(&replayed), cuts(&recorded));
    // The summary counts the tokens written past the marker, per question.
    let expected: f64 = recorded
        .iter()
        .flat_map(|run| run["steps"].as_array().unwrap().iter())
        .map(|step| step["past_stop"]["tokens_estimated"].as_f64().unwrap())
        .sum::<f64>()
        / 10.0;
    let stdout = String::from_utf8_lossy(&evaluated.stdout);
    let line = format!("600 completion tokens ({expected:.0} of them past the stop sequence, est.)");
    assert!(stdout.contains(&line), "{line}\n{stdout}");

    // CoT-SC: the API has no `n`, so each sample is a request of its own.
    let sampled = dir.path().join("cot-sc.jsonl");
    let args = [
        "--api",
        "responses",
        "--method",
        "cot-sc",
        "--samples",
        "3",
        "--limit",
        "2",
    ];
    crate::assert_exit_0(&eval(&questions, &sampled, &server.uri(), &args));
    let recorded = runs(&sampled);
    assert_eq!(em(&recorded), 2.0, "{recorded:#?}");
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 20 + 6, "three requests a question");
    assert!(bodies[20..].iter().all(|body| body["temperature"] == json!(0.7)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_temperature_is_left_out_of_every_later_request() {
    let server = serve_posts(TextModel {
        refuses_temperature: true,
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("react.jsonl");
    let args = ["--api", "responses", "--limit", "2", "--concurrency", "1"];
    crate::assert_exit_0(&eval(&questions, &out, &server.uri(), &args));
    assert_eq!(em(&runs(&out)), 2.0);
    let bodies = request_bodies(&server).await;
    // The first request refused, then four without `temperature`.
    assert_eq!(bodies.len(), 5, "{bodies:#?}");
    assert!(bodies[0].get("temperature").is_some());
    assert!(bodies[1..].iter().all(|body| body.get("temperature").is_none()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_cut_inside_its_reasoning_stops_the_run_at_the_token_cap() {
    struct Incomplete;
    impl wiremock::Respond for Incomplete {
        fn respond(&self, _: &Request) -> ResponseTemplate {
            ResponseTemplate::new(200).set_body_json(template("incomplete.json"))
        }
    }
    let server = serve_posts(Incomplete).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("react.jsonl");
    let args = ["--api", "responses", "--limit", "1"];
    let output = eval(&questions, &out, &server.uri(), &args);
    assert_eq!(output.status.code(), Some(1), "the question failed");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the token cap (`--max-tokens 256`) cut it inside its thinking"),
        "{stderr}"
    );
    let run = &runs(&out)[0];
    assert_eq!(run["stopped"], "max_tokens", "{run:#}");
    assert_eq!(
        run["steps"][0]["reasoning"],
        "**Weighing the sources**\n\nThe magazine's founding date matters most"
    );
    assert_eq!(run["usage"]["cache_write_tokens"], 2006, "{run:#}");
}

/// The fields of a Responses text request, sorted.
fn fields(body: &Value) -> Vec<&str> {
    let mut fields: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort_unstable();
    fields
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_cache_key_goes_on_every_request_and_leaves_the_reply_cache_key_alone() {
    let server = serve_posts(TextModel {
        refuses_temperature: false,
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let cache = dir.path().join("replies");
    let cache_arg = format!("--cache={}", cache.display());
    let keyed = dir.path().join("keyed.jsonl");
    let args = [
        "--api",
        "responses",
        "--limit",
        "2",
        "--prompt-cache-key",
        "hotpot-run-7",
        &cache_arg,
    ];
    crate::assert_exit_0(&eval(&questions, &keyed, &server.uri(), &args));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 4, "two steps a question");
    for body in &bodies {
        assert_eq!(
            fields(body),
            [
                "include",
                "input",
                "instructions",
                "max_output_tokens",
                "model",
                "prompt_cache_key",
                "store",
                "temperature"
            ]
        );
        assert_eq!(body["prompt_cache_key"], "hotpot-run-7");
        assert_eq!(body["model"], "gpt-5");
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["max_output_tokens"], 256);
        assert_eq!(body["temperature"], 0.0);
        assert!(body["instructions"].is_string() && body["input"].is_string());
    }

    // The key routes a request and cannot change its answer: the same requests without it are
    // the replies cached with it, and the server is asked nothing.
    let unkeyed = dir.path().join("unkeyed.jsonl");
    let args = ["--api", "responses", "--limit", "2", &cache_arg];
    crate::assert_exit_0(&eval(&questions, &unkeyed, &server.uri(), &args));
    assert_eq!(
        request_bodies(&server).await.len(),
        4,
        "every reply from the cache"
    );
    assert_eq!(answers(&runs(&unkeyed)), answers(&runs(&keyed)));

    // Unasked, only OpenAI's own endpoint gets one: this server is not it.
    let plain = dir.path().join("plain.jsonl");
    let args = ["--api", "responses", "--limit", "1"];
    crate::assert_exit_0(&eval(&questions, &plain, &server.uri(), &args));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 6);
    assert!(
        bodies[4..]
            .iter()
            .all(|body| body.get("prompt_cache_key").is_none())
    );
}

#[test]
fn a_prompt_cache_key_is_refused_where_it_cannot_go() {
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("out.jsonl");
    let refused = [
        (
            vec!["--api", "completions", "--prompt-cache-key", "k"],
            "`--prompt-cache-key`: `--api completions` has no `prompt_cache_key`",
        ),
        (
            vec!["--api", "anthropic", "--prompt-cache-key", "k"],
            "`--api anthropic` has no `prompt_cache_key`",
        ),
        (
            vec!["--prompt-cache-key", "k", "--no-prompt-cache"],
            "cannot be used with",
        ),
        (
            vec!["--prompt-cache-key", "  "],
            "`--prompt-cache-key`: the key must be 1 to 64 characters, not 2 of blanks",
        ),
    ];
    for (args, expected) in refused {
        // Nothing listens there: the flags are refused before any request.
        let server = format!("http://127.0.0.1:{}", crate::refused_port());
        let output = eval(&questions, &out, &server, &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// `body` with `store: false`, as [`check_common`] expects.
fn with_store_false(body: &Value) -> Value {
    let mut body = body.clone();
    body["store"] = json!(false);
    body
}

/// A Responses server that stores its responses (`store: true`): a request that names the
/// previous response sends only the items after it, the observation; any other is refused.
struct StoredModel;

impl wiremock::Respond for StoredModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if body["store"] != true {
            return invalid(format!("`store` is {}", body["store"]));
        }
        let (question, step) = match body["previous_response_id"].as_str() {
            // The first request of a question is as without `store` (but for it).
            None => match check_tools_request(&with_store_false(&body)) {
                Ok(1) => (question_of(&body), 1),
                Ok(step) => return invalid(format!("step {step} sent the whole conversation")),
                Err(message) => return invalid(message),
            },
            Some(previous) => {
                let Some(question) = (0..10).find(|i| previous == format!("resp_{i}_1")) else {
                    return invalid(format!("no response `{previous}` was stored"));
                };
                let input = body["input"].as_array().unwrap();
                let expected = format!("call_{question}_1");
                if input.len() != 1
                    || input[0]["type"] != "function_call_output"
                    || input[0]["call_id"] != expected.as_str()
                {
                    return invalid(format!(
                        "after a stored response, only its call's output: {input:?}"
                    ));
                }
                (question, 2)
            }
        };
        let mut reply = template("function-call.json");
        reply["id"] = json!(format!("resp_{question}_{step}"));
        reply["store"] = json!(true);
        reply["output"] = json!([reasoning_item(question, step), call_item(question, step)]);
        ResponseTemplate::new(200).set_body_json(reply)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stored_responses_are_chained_by_previous_response_id() {
    let server = serve_posts(StoredModel).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("stored.jsonl");
    let args = [
        "--api",
        "responses-tools",
        "--llm-option",
        "store=true",
        "--limit",
        "3",
    ];
    crate::assert_exit_0(&eval(&questions, &out, &server.uri(), &args));
    let recorded = runs(&out);
    assert_eq!(em(&recorded), 3.0, "{recorded:#?}");
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 6, "two requests a question");
    let chained: Vec<&Value> = bodies
        .iter()
        .filter(|body| body.get("previous_response_id").is_some())
        .collect();
    assert_eq!(chained.len(), 3);
    for body in chained {
        // Not the old items: neither the messages nor the first step's reasoning and call.
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 1, "{body:#}");
        assert!(input.iter().all(|item| item["type"] == "function_call_output"));
    }
    for run in &recorded {
        let question = question_index(run);
        assert_eq!(
            run["steps"][0]["replies"][0]["passback"]["id"],
            format!("resp_{question}_1")
        );
    }
    // Replayed with no server.
    let (_, summary) = replay(&out);
    assert_eq!(summary["summary"]["changed"], 0, "{summary:#}");
}

/// `export FILE --format FORMAT` (with the run's examples, every run): the file written.
pub(crate) fn export(results: &std::path::Path, format: &str) -> String {
    let out = results.with_extension(format);
    let output = binary()
        .arg("export")
        .arg(results)
        .args(["--format", format, "--with-examples", "--all", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    crate::assert_exit_0(&output);
    std::fs::read_to_string(out).unwrap()
}

/// The results file `results` as a Chat Completions run of the same trajectory would record it:
/// the API `tools`, the replies without the fields only the Responses API passes back.
pub(crate) fn as_chat_tools_run(results: &std::path::Path, to: &std::path::Path) {
    let lines: Vec<String> = runs(results)
        .into_iter()
        .map(|mut run| {
            run["api"] = json!("tools");
            if run["evaluation"].is_object() {
                run["evaluation"]["api"] = json!("tools");
            }
            for step in run["steps"].as_array_mut().unwrap() {
                for reply in step["replies"].as_array_mut().into_iter().flatten() {
                    reply.as_object_mut().unwrap().remove("passback");
                }
            }
            run.to_string()
        })
        .collect();
    std::fs::write(to, lines.join("\n") + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_responses_run_exports_the_text_a_chat_completions_run_of_it_would() {
    let server = serve_posts(ToolsModel).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("responses-tools.jsonl");
    crate::assert_exit_0(&eval(
        &questions,
        &out,
        &server.uri(),
        &["--api", "responses-tools"],
    ));
    let chat = dir.path().join("tools.jsonl");
    as_chat_tools_run(&out, &chat);
    for format in ["openai-chat", "sharegpt", "alpaca"] {
        let exported = export(&out, format);
        assert!(!exported.trim().is_empty());
        assert_eq!(exported, export(&chat, format), "{format}");
        // No encrypted reasoning, no response id: training text only.
        for secret in ["encrypted_content", "gAAAAB", "resp_", "passback"] {
            assert!(!exported.contains(secret), "{format}: {secret} in {exported}");
        }
    }
    // openai-chat keeps to the keys fine-tuning takes.
    for line in export(&out, "openai-chat").lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        for message in line["messages"].as_array().unwrap() {
            for key in message.as_object().unwrap().keys() {
                assert!(
                    ["role", "content", "tool_calls", "tool_call_id"].contains(&key.as_str()),
                    "{key} in {message}"
                );
            }
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let keys: Vec<&String> = call.as_object().unwrap().keys().collect();
                assert_eq!(keys, ["function", "id", "type"], "{call}");
            }
        }
    }
}
