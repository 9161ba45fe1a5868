//! `--api anthropic` and `--api anthropic-tools` through the command line, against a scripted
//! Messages API server: each request's headers and body checked field by field against Anthropic's
//! documented schema, the replies served from `fixtures/anthropic/` (which the `anthropic` SDK's
//! models parse: `tests/clients/sdk_models.py`), a tool-use loop refused (400, as the API does) when
//! an earlier assistant turn comes back with its blocks missing or altered, and the runs replayed
//! with no model. Every method and way of running an evaluation under both APIs is the
//! transparency harness's (`transparency.rs`).

use std::sync::{Arc, Mutex};

use react_docstore::llm::openai::Api;
use react_docstore::record::run::Run;
use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::fixture;

const QUESTION: &str =
    "Which building was the Grand Ole Opry's home before it moved to the Grand Ole Opry House?";
const KEY: &str = "sk-ant-test-4b1e";

fn reply(name: &str) -> Value {
    let path = fixture(&format!("anthropic/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A request body's top-level fields, sorted.
fn fields(body: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    names.sort_unstable();
    names
}

/// The scripted Messages server: a 529 first (Anthropic's overloaded, which the client retries),
/// then `replies` in turn. Each request is checked by `check` (a refusal is a 400 in Anthropic's
/// shape) after the headers, which must carry the key as `x-api-key` and the API version, and no
/// bearer token.
#[derive(Clone)]
struct Messages {
    replies: Arc<Vec<Value>>,
    state: Arc<Mutex<(usize, usize)>>,
    check: fn(&Value, &[Value]) -> Result<(), String>,
    refused: Arc<Mutex<Vec<String>>>,
}

impl Messages {
    fn new(replies: Vec<Value>, check: fn(&Value, &[Value]) -> Result<(), String>) -> Messages {
        Messages {
            replies: Arc::new(replies),
            state: Arc::default(),
            check,
            refused: Arc::default(),
        }
    }

    fn check_headers(request: &Request) -> Result<(), String> {
        let header = |name: &str| request.headers.get(name).and_then(|value| value.to_str().ok());
        if request.url.path() != "/v1/messages" {
            return Err(format!("path {}", request.url.path()));
        }
        if header("x-api-key") != Some(KEY) || header("anthropic-version") != Some("2023-06-01") {
            return Err("authentication_error: x-api-key or anthropic-version missing".to_owned());
        }
        if header("authorization").is_some() {
            return Err("a bearer token was sent".to_owned());
        }
        Ok(())
    }
}

impl Respond for Messages {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let mut state = self.state.lock().unwrap();
        let (received, answered) = &mut *state;
        *received += 1;
        if *received == 1 {
            return ResponseTemplate::new(529).set_body_json(reply("error-overloaded"));
        }
        let checked =
            Messages::check_headers(request).and_then(|()| (self.check)(&body, &self.replies[..*answered]));
        if let Err(problem) = checked {
            self.refused.lock().unwrap().push(problem.clone());
            let error =
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": problem}});
            return ResponseTemplate::new(400).set_body_json(error);
        }
        let answer = &self.replies[(*answered).min(self.replies.len() - 1)];
        *answered += 1;
        ResponseTemplate::new(200).set_body_json(answer)
    }
}

/// A text request (`--api anthropic`): exactly `model`, `system` (the continue-instruction),
/// one user message of two text blocks split where the question starts (the few-shot part
/// marked for the cache), `max_tokens`, `temperature` and the step's stop sequence.
fn check_text(body: &Value, answered: &[Value]) -> Result<(), String> {
    let step = answered.len() + 1;
    let expected = [
        "max_tokens",
        "messages",
        "model",
        "stop_sequences",
        "system",
        "temperature",
    ];
    if fields(body) != expected {
        return Err(format!("fields {:?}", fields(body)));
    }
    let content = &body["messages"][0]["content"];
    let ok = body["model"] == "claude-sonnet-4-5"
        && body["system"]
            .as_str()
            .is_some_and(|system| system.starts_with("Continue the text"))
        && body["messages"].as_array().map(Vec::len) == Some(1)
        && body["messages"][0]["role"] == "user"
        && body["max_tokens"] == 512
        && body["temperature"] == 0.0
        && body["stop_sequences"] == json!([format!("\nObservation {step}:")])
        && content.as_array().map(Vec::len) == Some(2)
        && content[0]["type"] == "text"
        && content[0]["cache_control"] == json!({"type": "ephemeral"})
        && content[0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("Here are some examples."))
        && content[1]["type"] == "text"
        && content[1].get("cache_control").is_none()
        && content[1]["text"].as_str().is_some_and(|text| {
            text.starts_with(&format!("Question: {QUESTION}\n"))
                && text.ends_with(&format!("Thought {step}:"))
        });
    ok.then_some(())
        .ok_or_else(|| format!("request {step}: {body:#}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_with_the_messages_api_continues_the_prompt_and_replays() {
    let messages = Messages::new(vec![reply("text-step-1"), reply("text-step-2")], check_text);
    let refused = Arc::clone(&messages.refused);
    let server = crate::serve_posts(messages).await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("run.json");
    let corpus = crate::test_corpus();
    let output = crate::binary()
        .args([
            "ask",
            QUESTION,
            "--api",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
        ])
        .args([
            "--base-url",
            &format!("{}/v1", server.uri()),
            "--max-tokens",
            "512",
        ])
        .args(["--docstore", &corpus, "--record"])
        .arg(&record)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("OPENAI_API_KEY", "sk-openai-not-for-anthropic")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}\n{:?}", refused.lock().unwrap());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Ryman Auditorium\n");
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        3,
        "a 529, then two steps"
    );

    let run = Run::read(&record).unwrap();
    assert_eq!(run.api, Some(Api::Anthropic));
    assert_eq!(
        run.steps[0].reasoning.as_deref(),
        reply("text-step-1")["content"][0]["thinking"].as_str()
    );
    assert_eq!(run.steps[0].action.as_deref(), Some("Search[Grand Ole Opry]"));
    // Every input token, of them those read from Anthropic's cache.
    assert_eq!(run.usage.prompt_tokens, 41 + 1920 + 95 + 1920);
    assert_eq!(run.usage.cached_tokens, 2 * 1920);

    let replayed = crate::binary()
        .args(["replay", "--json"])
        .arg(&record)
        .output()
        .unwrap();
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    let replayed: Value = serde_json::from_slice(&replayed.stdout).unwrap();
    assert_eq!(replayed["answer"], "Ryman Auditorium");
    assert_eq!(replayed["steps"][0]["reasoning"], json!(run.steps[0].reasoning));
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(recorded["api"], "anthropic");
    // The run file's schema takes the API and the cached tokens.
    assert_eq!(recorded["usage"]["cached_tokens"], 2 * 1920);
    assert_eq!(crate::docs::validate_run(&recorded), Vec::<String>::new());
}

/// A tool-use request with extended thinking (`--api anthropic-tools`): no `temperature` (the API
/// takes none with thinking), the functions as `{name, description, input_schema}`, the opening as
/// a user message, each earlier assistant turn with every block it came with, whole and in order,
/// each call answered by a `tool_result` under its id, and cache breakpoints after the system prompt
/// and on the conversation's last block (at most four).
fn check_tools(body: &Value, answered: &[Value]) -> Result<(), String> {
    let expected = ["max_tokens", "messages", "model", "system", "thinking", "tools"];
    if fields(body) != expected {
        return Err(format!("fields {:?}", fields(body)));
    }
    if body["thinking"] != json!({"type": "enabled", "budget_tokens": 1024}) || body["max_tokens"] != 2048 {
        return Err(format!(
            "thinking {} max_tokens {}",
            body["thinking"], body["max_tokens"]
        ));
    }
    let names: Vec<&Value> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["name"])
        .collect();
    let described = body["tools"].as_array().unwrap().iter().all(|tool| {
        fields(tool) == ["description", "input_schema", "name"] && tool["input_schema"]["type"] == "object"
    });
    if !described || names != [&json!("search"), &json!("lookup"), &json!("finish")] {
        return Err(format!("tools {}", body["tools"]));
    }
    let messages = body["messages"].as_array().unwrap();
    if messages.len() != 1 + 2 * answered.len()
        || messages[0]["role"] != "user"
        || messages[0]["content"][0]["text"] != format!("Question: {QUESTION}")
    {
        return Err(format!("messages {}", body["messages"]));
    }
    for (turn, sent) in answered.iter().enumerate() {
        let assistant = &messages[1 + 2 * turn];
        if assistant != &json!({"role": "assistant", "content": sent["content"]}) {
            return Err(format!(
                "messages.{}: the assistant turn's blocks must come back as sent (thinking blocks with their signatures unmodified): {assistant}",
                1 + 2 * turn
            ));
        }
        let call = sent["content"].as_array().unwrap().last().unwrap();
        let result = &messages[2 + 2 * turn];
        if result["role"] != "user"
            || result["content"][0]["type"] != "tool_result"
            || result["content"][0]["tool_use_id"] != call["id"]
        {
            return Err(format!(
                "messages.{}: no tool_result for {}",
                2 + 2 * turn,
                call["id"]
            ));
        }
    }
    let breakpoints = body.to_string().matches("\"cache_control\"").count();
    let last_block = messages.last().unwrap()["content"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    if breakpoints != 2
        || body["system"][0]["cache_control"] != json!({"type": "ephemeral"})
        || last_block["cache_control"] != json!({"type": "ephemeral"})
    {
        return Err(format!("cache breakpoints: {breakpoints} in {body}"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_use_loop_passes_every_block_back_whole_and_replays() {
    let messages = Messages::new(
        vec![reply("tools-1-search"), reply("tools-2-finish")],
        check_tools,
    );
    let refused = Arc::clone(&messages.refused);
    let server = crate::serve_posts(messages).await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("run.json");
    let corpus = crate::test_corpus();
    let output = crate::binary()
        .args([
            "ask",
            QUESTION,
            "--api",
            "anthropic-tools",
            "--model",
            "claude-sonnet-4-5",
        ])
        .args([
            "--base-url",
            &format!("{}/v1", server.uri()),
            "--max-tokens",
            "2048",
        ])
        .args([
            "--llm-option",
            r#"thinking={"type":"enabled","budget_tokens":1024}"#,
        ])
        .args([
            "--api-key-env",
            "MY_ANTHROPIC_KEY",
            "--docstore",
            &corpus,
            "--record",
        ])
        .arg(&record)
        .env("MY_ANTHROPIC_KEY", KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}\n{:?}", refused.lock().unwrap());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Ryman Auditorium\n");
    assert!(refused.lock().unwrap().is_empty());
    assert!(!stderr.contains(KEY));

    let run = Run::read(&record).unwrap();
    assert_eq!(run.api, Some(Api::AnthropicTools));
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(recorded["api"], "anthropic-tools", "as the command line names it");
    // The run file's schema takes the blocks passed back and the cache's tokens.
    assert_eq!(crate::docs::validate_run(&recorded), Vec::<String>::new());
    let first = reply("tools-1-search");
    assert_eq!(
        run.steps[0].reasoning.as_deref(),
        first["content"][0]["thinking"].as_str()
    );
    // The blocks are recorded whole: a replay serves them as they came.
    assert_eq!(run.steps[0].replies[0].passback["content"], first["content"]);
    assert_eq!(run.usage.cache_write_tokens, 1650 + 310);

    let replayed = crate::binary()
        .args(["replay", "--json"])
        .arg(&record)
        .output()
        .unwrap();
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    let mut replayed: Value = serde_json::from_slice(&replayed.stdout).unwrap();
    replayed.as_object_mut().unwrap().remove("source");
    assert_eq!(replayed, recorded);

    // Exported, the run is the text a Chat Completions run of the same trajectory gives: no
    // thinking block, no signature.
    let results = dir.path().join("anthropic.jsonl");
    // A results line names its question.
    let mut line = recorded.clone();
    line["id"] = json!("q1");
    std::fs::write(&results, format!("{line}\n")).unwrap();
    let chat = dir.path().join("tools.jsonl");
    crate::responses_api::as_chat_tools_run(&results, &chat);
    for format in ["openai-chat", "sharegpt", "alpaca"] {
        let exported = crate::responses_api::export(&results, format);
        assert!(exported.contains("Ryman Auditorium"), "{format}: {exported}");
        assert_eq!(exported, crate::responses_api::export(&chat, format), "{format}");
        for secret in ["signature", "thinking", "redacted_thinking"] {
            assert!(!exported.contains(secret), "{format}: {secret} in {exported}");
        }
    }
}

/// What the API would refuse, or what cannot reach it, is said before any request: no key for
/// api.anthropic.com (the default base URL), a variable `--api-key-env` names that is not set, a
/// thinking budget `max_tokens` leaves no room past.
#[test]
fn settings_the_api_would_refuse_are_errors_before_any_request() {
    #[track_caller]
    fn check(args: &[&str], expected: &str) {
        let corpus = crate::test_corpus();
        let output = crate::binary()
            .args(["ask", "q", "--model", "claude-sonnet-4-5", "--docstore", &corpus])
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    check(
        &["--api", "anthropic"],
        "`https://api.anthropic.com/v1` needs an API key (`ANTHROPIC_API_KEY` or `--api-key`)",
    );
    check(
        &["--api", "anthropic", "--api-key-env", "REACT_TEST_UNSET_KEY"],
        "`--api-key-env REACT_TEST_UNSET_KEY`: the environment variable `REACT_TEST_UNSET_KEY` is not set",
    );
    check(
        &[
            "--api",
            "anthropic-tools",
            "--api-key",
            "k",
            "--llm-option",
            r#"thinking={"type":"enabled","budget_tokens":1024}"#,
        ],
        "extended thinking's `budget_tokens` (1024) must be less than `max_tokens` (256)",
    );
}
