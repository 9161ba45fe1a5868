//! Assistant turns passed back as received (`--api tools`): the fields a server puts on its
//! message and on each tool call — Gemini 3's `extra_content.google.thought_signature`,
//! OpenRouter's `reasoning_details`, fields no one here knows — go back with every later request,
//! are recorded, and replay with no model.

use std::process::Command;

use serde_json::{Value, json};
use wiremock::{Request, ResponseTemplate};

use crate::{binary, request_bodies, serve_posts};

/// The signature a Gemini-style server gives call `id`: opaque text, derived from the id so the
/// server can check it without keeping state.
fn signature(id: &str) -> String {
    format!("CiQB0e2Kb{id}+/Zm9vYmFy==")
}

/// The marker question `i` of [`questions`] carries, which the scripted model reads.
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

/// A Gemini 3-style model behind the OpenAI-compatible endpoint, as Google's thought-signatures
/// page documents it: each tool call carries `extra_content.google.thought_signature`, and a
/// request whose history holds an assistant tool call without its signature (or with another)
/// is answered 400. Its message also carries OpenRouter's `reasoning_details` and a field of its
/// own. It searches once, then answers: the gold answer for questions 0 to 6, a wrong one for
/// 7 to 9 (EM 0.7).
struct Gemini;

/// The fields the scripted message carries besides its text and calls.
fn message_extras(question: usize) -> (Value, Value) {
    let details = json!([{"type": "reasoning.encrypted", "data": format!("gAAAAB{question}/x+y=="),
                          "id": "rs_1", "format": "google-gemini-v1", "index": 0}]);
    let unknown = json!({"nested": [1, 2.5, "é \"quoted\""], "flag": true});
    (details, unknown)
}

impl wiremock::Respond for Gemini {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let mut calls_so_far = 0;
        for message in messages.iter().filter(|message| message["role"] == "assistant") {
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let id = call["id"].as_str().unwrap_or_default();
                if call["extra_content"]["google"]["thought_signature"] != json!(signature(id)) {
                    return ResponseTemplate::new(400).set_body_json(json!([{"error": {
                        "code": 400,
                        "message": format!("Function call `{id}` is missing a thought_signature in functionCall parts."),
                        "status": "INVALID_ARGUMENT"}}]));
                }
                calls_so_far += 1;
            }
        }
        let text = body.to_string();
        let question = (0..10).find(|i| text.contains(&marker(*i))).unwrap();
        let (name, arguments) = match calls_so_far {
            0 => ("search", json!({"entity": "Special Forces Regiment (Airborne)"})),
            _ if question < 7 => ("finish", json!({"answer": format!("Answer {question}")})),
            _ => ("finish", json!({"answer": "a wrong answer"})),
        };
        let id = format!("call_{question}_{calls_so_far}");
        let (details, unknown) = message_extras(question);
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gemini-3-pro-preview",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "reasoning_details": details, "x_vendor_state": unknown,
                "tool_calls": [{"id": id, "type": "function",
                    "function": {"name": name, "arguments": arguments.to_string()},
                    "extra_content": {"google": {"thought_signature": signature(&id)}}}]}}],
            "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                      "prompt_tokens_details": {"cached_tokens": 1920},
                      "completion_tokens_details": {"reasoning_tokens": 128}}
        }))
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
        .args([
            "--docstore",
            &corpus,
            "--api",
            "tools",
            "--model",
            "gemini-3-pro-preview",
        ])
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

#[tokio::test(flavor = "multi_thread")]
async fn a_gemini_style_eval_passes_every_signature_back_and_replays_offline() {
    let server = serve_posts(Gemini).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("gemini.jsonl");
    let output = eval(&questions, &out, &server.uri(), &[]);
    crate::assert_exit_0(&output);
    let recorded = runs(&out);
    assert_eq!(recorded.len(), 10);
    let em: f64 = recorded.iter().map(|run| run["em"].as_f64().unwrap()).sum();
    assert_eq!(em, 7.0, "{recorded:#?}");
    assert!(recorded.iter().all(|run| run["error"].is_null()), "{recorded:#?}");
    // Each run sums its two calls' tokens, cached and reasoning ones among them.
    for run in &recorded {
        let usage = &run["usage"];
        assert_eq!(
            [
                &usage["prompt_tokens"],
                &usage["cached_tokens"],
                &usage["completion_tokens"],
                &usage["reasoning_tokens"]
            ],
            [&json!(4012), &json!(3840), &json!(600), &json!(256)],
            "{usage:#}"
        );
        assert!(usage.get("cache_write_tokens").is_none(), "{usage:#}");
    }

    // Every later request carries every earlier call with its signature, unchanged, and the
    // message's other fields as the server sent them.
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 20, "two requests a question");
    for body in &bodies {
        let text = body.to_string();
        let question = (0..10).find(|i| text.contains(&marker(*i))).unwrap();
        let assistants: Vec<&Value> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|message| message["role"] == "assistant")
            .collect();
        for message in &assistants {
            let call = &message["tool_calls"][0];
            let id = call["id"].as_str().unwrap();
            assert_eq!(
                call["extra_content"],
                json!({"google": {"thought_signature": signature(id)}})
            );
            let (details, unknown) = message_extras(question);
            assert_eq!(message["reasoning_details"], details);
            assert_eq!(message["x_vendor_state"], unknown);
        }
    }
    assert_eq!(
        bodies
            .iter()
            .filter(|body| body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "assistant"))
            .count(),
        10,
        "each question's second request carries its first reply"
    );

    // The run file records the fields, so replay serves them with no model and answers alike.
    let first = &recorded[0]["steps"][0]["replies"][0];
    assert!(
        first["tool_calls"][0]["passback"]["extra_content"]["google"]["thought_signature"].is_string(),
        "{first:#}"
    );
    assert!(first["passback"]["reasoning_details"].is_array(), "{first:#}");
    let replayed = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(["replay", "--json"])
        .arg(&out)
        .output()
        .unwrap();
    crate::assert_exit_0(&replayed);
    // A run a line, then the summary line.
    let mut replayed: Vec<Value> = String::from_utf8_lossy(&replayed.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let summary = replayed.pop().unwrap();
    assert_eq!(
        (&summary["summary"]["em"], &summary["summary"]["changed"]),
        (&json!(0.7), &json!(0)),
        "{summary:#}"
    );
    assert_eq!(answers(&replayed), answers(&recorded));
    for run in &replayed {
        assert_eq!(
            run["usage"]["cached_tokens"],
            json!(3840),
            "replay keeps the recorded tokens"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_reasoning_echo_keeps_the_reasoning_fields_back_but_not_the_signatures() {
    let server = serve_posts(Gemini).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("gemini.jsonl");
    let output = eval(
        &questions,
        &out,
        &server.uri(),
        &["--no-reasoning-echo", "--limit", "2"],
    );
    crate::assert_exit_0(&output);
    let bodies = request_bodies(&server).await;
    let assistants: Vec<Value> = bodies
        .iter()
        .flat_map(|body| body["messages"].as_array().unwrap().clone())
        .filter(|message| message["role"] == "assistant")
        .collect();
    assert_eq!(assistants.len(), 2);
    for message in &assistants {
        assert!(message.get("reasoning_details").is_none(), "{message:#}");
        assert!(message["x_vendor_state"].is_object(), "{message:#}");
        assert!(
            message["tool_calls"][0]["extra_content"]["google"]["thought_signature"].is_string(),
            "{message:#}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn fields_passed_back_go_back_as_the_bytes_received() {
    let server = serve_posts(Gemini).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = questions(dir.path());
    let out = dir.path().join("gemini.jsonl");
    crate::assert_exit_0(&eval(&questions, &out, &server.uri(), &["--limit", "1"]));
    let requests = server.received_requests().await.unwrap();
    let second = String::from_utf8_lossy(&requests[1].body);
    let (details, unknown) = message_extras(0);
    // The server wrote them with serde_json's order of keys; the request holds the same bytes.
    for field in [
        format!("\"reasoning_details\":{details}"),
        format!("\"x_vendor_state\":{unknown}"),
        format!(
            "\"extra_content\":{}",
            json!({"google": {"thought_signature": signature("call_0_0")}})
        ),
    ] {
        assert!(second.contains(&field), "{field} not in {second}");
    }
}
