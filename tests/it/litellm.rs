//! Replies as LiteLLM's proxy sends them (`fixtures/litellm/`, recorded from the proxy in front of
//! a Chat Completions server: `tests/clients/litellm_proxy.py` runs the whole path in CI). Its
//! bridge from the Responses API writes a reasoning item's text as an `output_text` content part
//! with no `summary`: that text is the step's reasoning, and the item goes back whole.

use serde_json::{Value, json};
use wiremock::{Request, ResponseTemplate};

use crate::fixture;

const QUESTION: &str =
    "Which building was the Grand Ole Opry's home before it moved to the Grand Ole Opry House?";

fn recorded(name: &str) -> Value {
    let path = fixture(&format!("litellm/{name}"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The proxy's Responses server: the recorded search step, then the same reply with its reasoning
/// and call turned into step 2's `finish`.
struct Bridge;

impl wiremock::Respond for Bridge {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let mut reply = recorded("responses-function-call.json");
        if body["input"].as_array().unwrap().len() > 2 {
            let output = &mut reply["output"];
            output[0]["id"] = json!("rs_step_2");
            output[0]["content"][0]["text"] = json!("Reasoning about question 0, step 2.");
            output[1]["call_id"] = json!("call_0_2");
            output[1]["id"] = json!("fc_call_0_2");
            output[1]["name"] = json!("finish");
            output[1]["arguments"] = json!(r#"{"answer": "Ryman Auditorium"}"#);
        }
        ResponseTemplate::new(200).set_body_json(reply)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reasoning_item_of_litellms_bridge_is_the_steps_reasoning_and_goes_back_whole() {
    let server = crate::serve_posts(Bridge).await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("run.json");
    let corpus = crate::test_corpus();
    let output = crate::binary()
        .args([
            "ask",
            QUESTION,
            "--api",
            "responses-tools",
            "--model",
            "scripted-react",
        ])
        .args(["--base-url", &format!("{}/v1", server.uri())])
        .args([
            "--api-key",
            "sk-litellm-proxy-test",
            "--docstore",
            &corpus,
            "--record",
        ])
        .arg(&record)
        .output()
        .unwrap();
    crate::assert_exit_0(&output);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Ryman Auditorium\n");

    let run: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    let steps = run["steps"].as_array().unwrap();
    assert_eq!(
        steps[0]["reasoning"], "Reasoning about question 0, step 1.",
        "{run:#}"
    );
    assert_eq!(
        steps[1]["reasoning"], "Reasoning about question 0, step 2.",
        "{run:#}"
    );
    let bodies = crate::request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let first = recorded("responses-function-call.json");
    assert_eq!(
        bodies[1]["input"][2], first["output"][0],
        "the reasoning item goes back whole"
    );
    assert_eq!(bodies[1]["input"][3], first["output"][1]);
}
