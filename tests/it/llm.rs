//! The OpenAI-compatible client against a local wiremock server serving recorded response bodies.

use std::sync::Mutex;
use std::time::Duration;

use react_docstore::llm::openai::{CONTINUE_INSTRUCTION, RetryPolicy};
use react_docstore::llm::{
    Api, ApiKey, CallPurpose, Completion, Llm, LlmError, LlmRequest, OpenAiClient, OpenAiConfig, TokenUsage,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The response bodies of an httprr recording in `fixtures/openai/`, in order.
pub fn httprr_bodies(name: &str) -> Vec<String> {
    let bytes = std::fs::read(crate::fixture(&format!("openai/{name}"))).unwrap();
    let (header, mut rest) = split_line(&bytes);
    assert_eq!(header, b"httprr trace v1");
    let mut bodies = Vec::new();
    while !rest.is_empty() {
        let (lengths, after) = split_line(rest);
        let lengths = std::str::from_utf8(lengths).unwrap();
        let (request_len, response_len) = lengths.split_once(' ').unwrap();
        let request_len: usize = request_len.parse().unwrap();
        let response_len: usize = response_len.parse().unwrap();
        let response = &after[request_len..request_len + response_len];
        let response = std::str::from_utf8(response).unwrap();
        let (_, body) = response
            .split_once("\r\n\r\n")
            .or_else(|| response.split_once("\n\n"))
            .unwrap();
        bodies.push(body.to_owned());
        rest = &after[request_len + response_len..];
    }
    bodies
}

fn split_line(bytes: &[u8]) -> (&[u8], &[u8]) {
    let end = bytes.iter().position(|&byte| byte == b'\n').unwrap();
    (&bytes[..end], &bytes[end + 1..])
}

/// A real gpt-4-0613 chat completion (`TestExecutorWithMRKLAgent`, first exchange) whose message
/// content is replaced by `content`; every other field is as recorded.
pub fn chat_body(content: &str) -> Value {
    let mut body: Value =
        serde_json::from_str(&httprr_bodies("TestExecutorWithMRKLAgent.httprr")[0]).unwrap();
    body["choices"][0]["message"]["content"] = json!(content);
    body
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(crate::fixture(&format!("openai/{name}"))).unwrap())
        .unwrap()
}

/// Answers with its responses in order; the last one repeats.
pub struct Sequence {
    responses: Vec<ResponseTemplate>,
    next: Mutex<usize>,
}

impl Sequence {
    pub fn new(responses: Vec<ResponseTemplate>) -> Sequence {
        Sequence {
            responses,
            next: Mutex::new(0),
        }
    }

    /// 200 responses with these chat completions, each in a real recorded body.
    pub fn chat(contents: &[&str]) -> Sequence {
        Sequence::new(
            contents
                .iter()
                .map(|content| ResponseTemplate::new(200).set_body_json(chat_body(content)))
                .collect(),
        )
    }
}

impl Respond for Sequence {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let mut next = self.next.lock().unwrap();
        let idx = (*next).min(self.responses.len() - 1);
        *next += 1;
        self.responses[idx].clone()
    }
}

/// A mock OpenAI-compatible server answering `POST /v1/{endpoint}` with `responder`.
pub async fn model_server(endpoint: &str, responder: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/v1/{endpoint}")))
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

/// A client of `server` that retries fast.
pub fn client(server: &MockServer, api: Api) -> OpenAiClient {
    let mut config = OpenAiConfig::new("gpt-4");
    config.base_url = format!("{}/v1", server.uri());
    config.api = api;
    config.api_key = Some(ApiKey::new("sk-test-secret"));
    config.retry = RetryPolicy {
        max_retries: 2,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    };
    OpenAiClient::new(config).unwrap()
}

const PROMPT: &str = "Question: What is the elevation range for the area that the eastern sector of the Colorado orogeny extends into?\nThought 1:";

async fn complete(client: &OpenAiClient, stop: &[String]) -> Result<Completion, LlmError> {
    let request = LlmRequest {
        prompt: PROMPT,
        stop,
        step: 1,
        purpose: CallPurpose::Step,
    };
    client.complete(request).await
}

fn stop() -> Vec<String> {
    vec!["\nObservation 1:".to_owned()]
}

async fn request_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| request.body_json().unwrap())
        .collect()
}

#[tokio::test]
async fn chat_request_carries_model_messages_stop_temperature_and_reads_usage() {
    let body = httprr_bodies("TestExecutorWithMRKLAgent.httprr")[0].clone();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test-secret"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let completion = complete(&client(&server, Api::Chat), &stop()).await.unwrap();
    assert_eq!(
        completion,
        Completion {
            text: "Thought: This is a simple arithmetic problem. I can use the calculator tool to solve it.\nAction: calculator\nAction Input: 5 + 3".to_owned(),
            usage: Some(TokenUsage {
                prompt_tokens: 229,
                completion_tokens: 35
            }),
        }
    );
    assert_eq!(
        request_bodies(&server).await,
        [json!({
            "model": "gpt-4",
            "messages": [
                {"role": "system", "content": CONTINUE_INSTRUCTION},
                {"role": "user", "content": PROMPT},
            ],
            "temperature": 0.0,
            "max_tokens": 256,
            "stop": ["\nObservation 1:"],
        })]
    );
}

#[tokio::test]
async fn completions_request_sends_the_prompt_as_text() {
    let server = model_server(
        "completions",
        ResponseTemplate::new(200).set_body_json(fixture_json("completions-react.json")),
    )
    .await;
    let mut config = client(&server, Api::Completions).config().clone();
    config.options.insert("seed".to_owned(), json!(7));
    config.options.insert("max_tokens".to_owned(), json!(64));
    let client = OpenAiClient::new(config).unwrap();
    let completion = complete(&client, &stop()).await.unwrap();
    assert_eq!(
        completion.text,
        " I need to search Colorado orogeny, find the area that the eastern sector of the Colorado orogeny extends into.\nAction 1: Search[Colorado orogeny]"
    );
    assert_eq!(
        completion.usage,
        Some(TokenUsage {
            prompt_tokens: 5,
            completion_tokens: 7
        })
    );
    assert_eq!(
        request_bodies(&server).await,
        [json!({
            "model": "gpt-4",
            "prompt": PROMPT,
            "temperature": 0.0,
            "max_tokens": 64,
            "stop": ["\nObservation 1:"],
            "seed": 7,
        })]
    );
}

#[tokio::test]
async fn refused_stop_is_sent_again_without_and_never_again() {
    let content = "Thought 1: I need to search Colorado orogeny.\nAction 1: Search[Colorado orogeny]\nObservation 1: The Colorado orogeny was";
    let server = model_server(
        "chat/completions",
        Sequence::new(vec![
            ResponseTemplate::new(400).set_body_json(fixture_json("error-stop-unsupported.json")),
            ResponseTemplate::new(200).set_body_json(chat_body(content)),
        ]),
    )
    .await;
    let client = client(&server, Api::Chat);
    for _ in 0..2 {
        let completion = complete(&client, &stop()).await.unwrap();
        // Cut here, since the server no longer does.
        assert_eq!(
            completion.text,
            "Thought 1: I need to search Colorado orogeny.\nAction 1: Search[Colorado orogeny]"
        );
    }
    let has_stop: Vec<bool> = request_bodies(&server)
        .await
        .iter()
        .map(|body| body.get("stop").is_some())
        .collect();
    assert_eq!(has_stop, [true, false, false]);
}

#[tokio::test]
async fn rate_limit_is_retried_after_retry_after() {
    let body = httprr_bodies("TestConversationalWithMemory.httprr")[0].clone();
    let rate_limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "0")
        .set_body_json(json!({"error": {"message": "Rate limit reached for gpt-4", "type": "requests"}}));
    let server = model_server(
        "chat/completions",
        Sequence::new(vec![
            rate_limited,
            ResponseTemplate::new(200).set_body_raw(body, "application/json"),
        ]),
    )
    .await;
    let completion = complete(&client(&server, Api::Chat), &stop()).await.unwrap();
    assert!(
        completion
            .text
            .starts_with("Do I need to use a tool? No\nAI: Hi Bob!")
    );
    assert_eq!(completion.usage.map(|usage| usage.prompt_tokens), Some(393));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn failures_give_the_servers_own_message() {
    #[track_caller]
    fn check(error: LlmError, server: &MockServer, expected: &str) {
        let message = error.to_string().replace(&server.uri(), "[SERVER]");
        assert_eq!(message, expected);
        assert!(!format!("{error:?}").contains("sk-test-secret"));
    }

    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(500).set_body_json(fixture_json("error-server.json")),
    )
    .await;
    let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
    check(
        error,
        &server,
        "the model server at `[SERVER]/v1/chat/completions` answered 500 Internal Server Error after 3 attempts: The server had an error while processing your request. Sorry about that!",
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        3,
        "1 attempt + 2 retries"
    );

    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(401).set_body_json(fixture_json("error-invalid-key.json")),
    )
    .await;
    let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
    check(
        error,
        &server,
        "the model server at `[SERVER]/v1/chat/completions` rejected the request (401 Unauthorized): Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "a 401 is not retried"
    );

    // A server that quotes the key it refused: the key never reaches the error.
    let mut echoed = fixture_json("error-invalid-key.json");
    echoed["error"]["message"] = "Incorrect API key provided: sk-test-secret.".into();
    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(401).set_body_json(echoed),
    )
    .await;
    let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
    check(
        error,
        &server,
        "the model server at `[SERVER]/v1/chat/completions` rejected the request (401 Unauthorized): Incorrect API key provided: <redacted>.",
    );

    let server = model_server("chat/completions", ResponseTemplate::new(503)).await;
    let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
    check(
        error,
        &server,
        "the model server at `[SERVER]/v1/chat/completions` answered 503 Service Unavailable after 3 attempts: Service Unavailable",
    );

    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(200).set_body_raw("<html>proxy login</html>", "text/html"),
    )
    .await;
    let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
    check(
        error,
        &server,
        "the model server at `[SERVER]/v1/chat/completions` sent a response that is not an OpenAI completion",
    );
}

#[tokio::test]
async fn responses_are_read_leniently() {
    #[track_caller]
    fn check(body: Value, text: &str, usage: Option<(u64, u64)>, completion: Completion) {
        assert_eq!(completion.text, text, "{body}");
        let usage = usage.map(|(prompt_tokens, completion_tokens)| TokenUsage {
            prompt_tokens,
            completion_tokens,
        });
        assert_eq!(completion.usage, usage, "{body}");
    }

    let real = chat_body("Thought 1: x\nAction 1: Finish[y]");
    let mut cases = Vec::new();
    let mut empty_finish_reason = real.clone();
    empty_finish_reason["choices"][0]["finish_reason"] = json!("");
    cases.push((
        empty_finish_reason,
        "Thought 1: x\nAction 1: Finish[y]",
        Some((229, 35)),
    ));
    let mut null_finish_reason_no_usage = real.clone();
    null_finish_reason_no_usage["choices"][0]["finish_reason"] = Value::Null;
    null_finish_reason_no_usage
        .as_object_mut()
        .unwrap()
        .remove("usage");
    cases.push((
        null_finish_reason_no_usage,
        "Thought 1: x\nAction 1: Finish[y]",
        None,
    ));
    let mut extra_fields = real.clone();
    extra_fields["choices"][0]["message"]["reasoning_content"] = json!("Let me think.");
    extra_fields["choices"][0]["stop_reason"] = json!(128_009);
    extra_fields["x_groq"] = json!({"id": "req_01"});
    extra_fields["usage"] = json!({"prompt_tokens": 12, "completion_tokens": null, "prompt_time": 0.01});
    cases.push((extra_fields, "Thought 1: x\nAction 1: Finish[y]", Some((12, 0))));
    let mut null_content = real.clone();
    null_content["choices"][0]["message"]["content"] = Value::Null;
    cases.push((null_content, "", Some((229, 35))));

    for (body, text, usage) in cases {
        let server = model_server(
            "chat/completions",
            ResponseTemplate::new(200).set_body_json(&body),
        )
        .await;
        let completion = complete(&client(&server, Api::Chat), &stop()).await.unwrap();
        check(body, text, usage, completion);
    }
}

#[tokio::test]
async fn a_timeout_is_retried_and_a_long_retry_after_is_not_waited_for() {
    let slow = ResponseTemplate::new(200)
        .set_body_json(chat_body("too late"))
        .set_delay(Duration::from_secs(2));
    let server = model_server(
        "chat/completions",
        Sequence::new(vec![
            slow,
            ResponseTemplate::new(200).set_body_json(chat_body("in time")),
        ]),
    )
    .await;
    let mut config = client(&server, Api::Chat).config().clone();
    config.timeout = Duration::from_millis(200);
    let completion = complete(&OpenAiClient::new(config).unwrap(), &stop())
        .await
        .unwrap();
    assert_eq!(completion.text, "in time");

    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(429)
            .insert_header("retry-after", "20663")
            .set_body_json(json!({"error": {"message": "Rate limit reached. Retry after ~20663s."}})),
    )
    .await;
    let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
    assert!(
        error.to_string().ends_with(
            "answered 429 Too Many Requests and asks to retry after 20663 s, longer than the 5 s this client waits: Rate limit reached. Retry after ~20663s."
        ),
        "{error}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}
