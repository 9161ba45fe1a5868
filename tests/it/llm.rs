//! The OpenAI-compatible client against a local wiremock server serving recorded response bodies.

use std::sync::Mutex;
use std::time::Duration;

use react_docstore::base::secret::ApiKey;
use react_docstore::llm::openai::{CONTINUE_INSTRUCTION, MAX_COMPLETION_BYTES, RetryPolicy};
use react_docstore::llm::{
    CallPurpose, Completion, Llm, LlmError, LlmRequest, TokenUsage, openai::Api, openai::OpenAiClient,
    openai::OpenAiConfig,
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
        shared_prefix: 0,
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
    let client = client(&server, Api::Chat);
    assert!(!client.client_built(), "built before the first request");
    let completion = complete(&client, &stop()).await.unwrap();
    assert!(client.client_built());
    assert_eq!(
        completion,
        Completion {
            text: "Thought: This is a simple arithmetic problem. I can use the calculator tool to solve it.\nAction: calculator\nAction Input: 5 + 3".to_owned(),
            reasoning: None,
            // `finish_reason: stop`.
            ending: react_docstore::llm::reasoning::Ending::Ended,
            usage: Some(TokenUsage {
                prompt_tokens: 229,
                completion_tokens: 35,
                reasoning_tokens: 0,
                ..Default::default()
            }),
            past_stop: None,
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
            completion_tokens: 7,
            reasoning_tokens: 0,
            ..Default::default()
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
            reasoning_tokens: 0,
            ..Default::default()
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
            "answered 429 Too Many Requests and asked to wait 20663 s, longer than the 5 s this client waits: Rate limit reached. Retry after ~20663s."
        ),
        "{error}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

/// Everything logged on this thread — `tracing` events and `log` records, at every level down to
/// TRACE, as `RUST_LOG=trace` would print them — while `run` runs. Other threads' events are
/// dropped, so tests running in parallel do not mix.
pub async fn captured_logs<T>(run: impl std::future::Future<Output = T>) -> (T, String) {
    use std::cell::RefCell;
    use std::sync::{Arc, OnceLock};

    thread_local! {
        static CAPTURE: RefCell<Option<Arc<Mutex<Vec<u8>>>>> = const { RefCell::new(None) };
    }
    struct ThreadWriter;
    impl std::io::Write for ThreadWriter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            CAPTURE.with(|capture| {
                if let Some(buffer) = capture.borrow().as_ref() {
                    buffer.lock().unwrap().extend_from_slice(bytes);
                }
            });
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        use tracing_subscriber::Layer;
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        let capturing =
            tracing_subscriber::filter::filter_fn(|_| CAPTURE.with(|capture| capture.borrow().is_some()));
        let layer = tracing_subscriber::fmt::layer()
            .without_time()
            .with_ansi(false)
            .with_writer(|| ThreadWriter)
            .with_filter(capturing);
        // Also installs the `log` bridge, so reqwest's and rustls's records are captured too.
        tracing_subscriber::registry()
            .with(layer.with_filter(tracing_subscriber::filter::LevelFilter::TRACE))
            .try_init()
            .expect("no other global subscriber in the test binary");
    });
    let buffer = Arc::new(Mutex::new(Vec::new()));
    CAPTURE.with(|capture| *capture.borrow_mut() = Some(buffer.clone()));
    let output = run.await;
    CAPTURE.with(|capture| *capture.borrow_mut() = None);
    let logs = String::from_utf8_lossy(&buffer.lock().unwrap()).into_owned();
    (output, logs)
}

/// `error` and its sources, as `{:#}` prints them.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    chain
}

#[tokio::test]
async fn out_of_range_retry_after_is_an_error_quoting_the_server() {
    for (name, value, asked) in [
        ("retry-after", "1e30", "1e30 s"),
        ("retry-after-ms", "1e30", "1e30 ms"),
        ("retry-after", "18446744073709551616", "18446744073709551616 s"),
        (
            "retry-after",
            "Wed, 01 Jan 9000 00:00:00 GMT",
            " s (until Wed, 01 Jan 9000 00:00:00 GMT)",
        ),
    ] {
        let server = model_server(
            "chat/completions",
            ResponseTemplate::new(429)
                .insert_header(name, value)
                .set_body_json(json!({"error": {"message": "slow down"}})),
        )
        .await;
        let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, LlmError::WaitTooLong { .. }), "{message}");
        assert!(message.contains("asked to wait "), "{message}");
        assert!(
            message.contains(&format!(
                "{asked}, longer than the 5 s this client waits: slow down"
            )),
            "{message}"
        );
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            1,
            "{name}: {value}"
        );
    }
    // Values that mean nothing are ignored: the client retries on its own backoff.
    for value in ["-5", "NaN", "inf", "soon", "1e30e5"] {
        let server = model_server(
            "chat/completions",
            Sequence::new(vec![
                ResponseTemplate::new(429).insert_header("retry-after", value),
                ResponseTemplate::new(200).set_body_json(chat_body("in time")),
            ]),
        )
        .await;
        let completion = complete(&client(&server, Api::Chat), &stop()).await.unwrap();
        assert_eq!(completion.text, "in time", "{value}");
        assert_eq!(server.received_requests().await.unwrap().len(), 2, "{value}");
    }
}

#[tokio::test]
async fn retry_warnings_say_which_server_what_failed_and_when_in_plain_words() {
    let server = model_server(
        "chat/completions",
        Sequence::new(vec![
            ResponseTemplate::new(429).insert_header("retry-after", "0"),
            ResponseTemplate::new(200).set_body_json(chat_body("ok")),
        ]),
    )
    .await;
    let (completion, logs) = captured_logs(complete(&client(&server, Api::Chat), &stop())).await;
    assert_eq!(completion.unwrap().text, "ok");
    let host = server.uri().trim_start_matches("http://").to_owned();
    let warnings: Vec<&str> = logs.lines().filter(|line| line.contains("WARN")).collect();
    assert_eq!(
        warnings,
        [format!(
            " WARN react_docstore::base::http: model server {host}: HTTP 429 Too Many Requests; retrying in 0.0 s, attempt 2 of 3"
        )],
        "{logs}"
    );

    // Nobody listens on this machine's port: refused, in those words, with no Debug dump, and
    // at once — nothing will listen there in the seconds retries wait.
    let port = crate::refused_port();
    let mut config = client(&server, Api::Chat).config().clone();
    config.base_url = format!("http://user:password@127.0.0.1:{port}/v1");
    let client = OpenAiClient::new(config).unwrap();
    let (error, logs) = captured_logs(complete(&client, &stop())).await;
    let error = error.unwrap_err();
    assert!(matches!(error, LlmError::Refused { .. }), "{error:?}");
    assert!(error.is_permanent());
    assert_eq!(
        error.to_string(),
        format!(
            "cannot reach the model server at `http://127.0.0.1:{port}/v1/chat/completions`: connection refused, nothing listens at 127.0.0.1:{port} (is the server running, on that port?)"
        )
    );
    assert!(!logs.contains("WARN"), "{logs}");
    assert!(
        !logs.contains("password") && !error_chain(&error).contains("password"),
        "{logs}"
    );
}

/// The binary writes each retry as one plain line, as docs/models.md shows it: no level, no
/// module path.
#[tokio::test]
async fn the_binary_writes_a_retry_warning_as_one_plain_line() {
    let server = model_server(
        "completions",
        Sequence::new(vec![
            ResponseTemplate::new(429).insert_header("retry-after", "0"),
            ResponseTemplate::new(200)
                .set_body_json(json!({"choices": [{"text": " Easy.\nAction 1: Finish[yes]"}]})),
        ]),
    )
    .await;
    let output = crate::binary()
        .args(["ask", "--docstore", "corpus:fixtures/docstore/corpus-3.jsonl"])
        .args(["--api", "completions", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.uri()))
        .arg("Were Scott Derrickson and Ed Wood of the same nationality?")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "yes\n", "{stderr}");
    let host = server.uri().trim_start_matches("http://").to_owned();
    let warning = format!("model server {host}: HTTP 429 Too Many Requests; retrying in ");
    let warnings: Vec<&str> = stderr.lines().filter(|line| line.contains("retrying")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].starts_with(&warning) && warnings[0].ends_with(" s, attempt 2 of 5"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_key_never_leaves_through_errors_or_trace_logs() {
    const KEY: &str = "sk-test-secret";
    let key_but_last = &KEY[..KEY.len() - 1];

    // A 200 whose JSON quotes the key where serde expected something else.
    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(200).set_body_raw(format!(r#"{{"choices":"{KEY}"}}"#), "application/json"),
    )
    .await;
    let (error, logs) = captured_logs(complete(&client(&server, Api::Chat), &stop())).await;
    let error = error.unwrap_err();
    let chain = error_chain(&error);
    assert!(matches!(error, LlmError::InvalidResponse { .. }), "{chain}");
    assert!(chain.contains("invalid type: string \"<redacted>\""), "{chain}");
    for text in [&chain, &format!("{error:?}"), &logs] {
        assert!(!text.contains(key_but_last), "{text}");
    }
    assert!(logs.contains("TRACE"), "trace logging was on: {logs}");

    // A non-JSON error body with the key straddling the 300-character cut.
    // Cut at 300 characters before redaction, the key would survive minus its last character.
    let body = format!("{}{KEY}{}", "x".repeat(300 - KEY.len() + 1), "y".repeat(100));
    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(500).set_body_raw(body, "text/plain"),
    )
    .await;
    let (error, logs) = captured_logs(complete(&client(&server, Api::Chat), &stop())).await;
    let error = error.unwrap_err();
    let chain = error_chain(&error);
    assert!(
        chain.ends_with(&format!(": {}<redacted>yyy…", "x".repeat(300 - KEY.len() + 1))),
        "{chain}"
    );
    for text in [&chain, &format!("{error:?}"), &logs] {
        assert!(!text.contains(key_but_last), "{text}");
    }
    assert!(logs.contains("retrying in"), "{logs}");
}

#[tokio::test]
async fn permanent_failures_are_not_retried_and_say_so() {
    for (status, permanent) in [
        (400, false),
        (401, true),
        (403, true),
        (404, true),
        (405, true),
        (422, false),
        (501, true),
    ] {
        let server = model_server(
            "chat/completions",
            ResponseTemplate::new(status).set_body_json(json!({"error": {"message": "no"}})),
        )
        .await;
        let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
        assert!(matches!(error, LlmError::Rejected { .. }), "{status}: {error}");
        assert_eq!(error.is_permanent(), permanent, "{status}: {error}");
        assert_eq!(server.received_requests().await.unwrap().len(), 1, "{status}");
    }
    let server = model_server("chat/completions", ResponseTemplate::new(502)).await;
    let error = complete(&client(&server, Api::Chat), &stop()).await.unwrap_err();
    assert!(matches!(error, LlmError::GaveUp { attempts: 3, .. }), "{error}");
    assert!(!error.is_permanent());

    // A base URL without /v1: the 404 says what is probably missing.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(404).set_body_raw("404 page not found", "text/plain"))
        .mount(&server)
        .await;
    let mut config = client(&server, Api::Chat).config().clone();
    config.base_url = server.uri();
    let error = complete(&OpenAiClient::new(config).unwrap(), &stop())
        .await
        .unwrap_err();
    assert!(error.is_permanent());
    assert_eq!(
        error.to_string().replace(&server.uri(), "[SERVER]"),
        "the model server at `[SERVER]/chat/completions` answered 404 Not Found (404 page not found): the base URL `[SERVER]` has no /v1: did you mean `[SERVER]/v1`?"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);

    // A base URL with the endpoint's path: the client adds it again, and the 404 says to drop it.
    for (api, base_path, endpoint) in [
        (Api::Chat, "/v1/chat/completions", "/chat/completions"),
        (Api::Chat, "/v1/chat/completions/", "/chat/completions"),
        (Api::Completions, "/v1/completions", "/completions"),
        (Api::Chat, "/v1/completions", "/completions"),
    ] {
        let mut config = client(&server, api).config().clone();
        config.base_url = format!("{}{base_path}", server.uri());
        let error = complete(&OpenAiClient::new(config).unwrap(), &stop())
            .await
            .unwrap_err();
        assert!(error.is_permanent(), "{error}");
        let asked = format!("{}{}", base_path.trim_end_matches('/'), api_path(api));
        assert_eq!(
            error.to_string().replace(&server.uri(), "[SERVER]"),
            format!(
                "the model server at `[SERVER]{asked}` answered 404 Not Found (404 page not found): the base URL `[SERVER]{}` ends with the endpoint path `{endpoint}`, which the client adds itself: drop it, did you mean `[SERVER]/v1`?",
                base_path.trim_end_matches('/')
            )
        );
    }
}

/// The path the client adds to the base URL for `api`.
fn api_path(api: Api) -> &'static str {
    match api {
        Api::Completions => "/completions",
        Api::Chat | Api::Tools => "/chat/completions",
        Api::Anthropic | Api::AnthropicTools => "/messages",
        Api::Responses | Api::ResponsesTools => "/responses",
    }
}

#[tokio::test]
async fn response_bodies_and_completions_are_bounded() {
    // Larger than the client's limit: an error naming the endpoint and the limit.
    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(200).set_body_json(chat_body(&"a".repeat(4096))),
    )
    .await;
    let mut config = client(&server, Api::Chat).config().clone();
    config.max_response_bytes = 1024;
    let error = complete(&OpenAiClient::new(config).unwrap(), &stop())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string().replace(&server.uri(), "[SERVER]"),
        "the model server at `[SERVER]/v1/chat/completions` sent a response larger than 1024 bytes, the limit of this client"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "not retried");

    // A long completion within the body limit is cut to what one step may add, on a character
    // boundary; no max_tokens changes nothing.
    let long = "é".repeat(MAX_COMPLETION_BYTES);
    let server = model_server(
        "chat/completions",
        ResponseTemplate::new(200).set_body_json(chat_body(&long)),
    )
    .await;
    let mut config = client(&server, Api::Chat).config().clone();
    config.max_tokens = None;
    let completion = complete(&OpenAiClient::new(config).unwrap(), &stop())
        .await
        .unwrap();
    assert_eq!(completion.text.len(), MAX_COMPLETION_BYTES);
    assert!(completion.text.chars().all(|c| c == 'é'));
}

/// A model server on a raw socket, for what wiremock cannot send: each connection gets the next
/// of `responses` (bytes written as they are, then the connection is closed).
async fn raw_server(responses: Vec<Vec<u8>>) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counter = connections.clone();
    tokio::spawn(async move {
        for response in responses {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            counter.fetch_add(1, Ordering::Relaxed);
            // Read the whole request (headers, then Content-Length bytes), so closing the
            // socket is a clean close, not a reset of unread data.
            let mut request = Vec::new();
            let mut buffer = [0u8; 4096];
            loop {
                let n = socket.read(&mut buffer).await.unwrap();
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buffer[..n]);
                let text = String::from_utf8_lossy(&request);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length: usize = text[..end]
                        .lines()
                        .find_map(|line| {
                            let (name, value) = line.split_once(':')?;
                            name.eq_ignore_ascii_case("content-length")
                                .then(|| value.trim().parse().ok())?
                        })
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            socket.write_all(&response).await.unwrap();
            socket.shutdown().await.unwrap();
        }
    });
    (url, connections)
}

fn raw_client(base_url: String) -> OpenAiClient {
    let mut config = OpenAiConfig::new("gpt-4");
    config.base_url = base_url;
    config.retry = RetryPolicy {
        max_retries: 2,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    };
    OpenAiClient::new(config).unwrap()
}

fn raw_response(head: &str, body: &[u8]) -> Vec<u8> {
    let mut response =
        format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{head}\r\n").into_bytes();
    response.extend_from_slice(body);
    response
}

#[tokio::test]
async fn a_connection_dropped_mid_body_is_retried() {
    let whole = serde_json::to_vec(&chat_body("Thought 1: whole")).unwrap();
    let cut = raw_response(&format!("content-length: {}\r\n", whole.len()), &whole[..40]);
    let (url, connections) = raw_server(vec![
        cut,
        raw_response(&format!("content-length: {}\r\n", whole.len()), &whole),
    ])
    .await;
    let (completion, logs) = captured_logs(complete(&raw_client(url), &stop())).await;
    assert_eq!(completion.unwrap().text, "Thought 1: whole");
    assert_eq!(connections.load(std::sync::atomic::Ordering::Relaxed), 2);
    assert!(
        logs.contains(": connection dropped mid-body; retrying in 0.0 s, attempt 2 of 3"),
        "{logs}"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_by_its_length_or_as_it_streams() {
    // Announced too large: refused before the body is read.
    let (url, _) = raw_server(vec![raw_response("content-length: 1000000000000\r\n", b"{")]).await;
    let mut config = raw_client(url).config().clone();
    config.max_response_bytes = 1024;
    let error = complete(&OpenAiClient::new(config).unwrap(), &stop())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::TooLarge { limit: 1024, .. }), "{error}");

    // No length, chunks past the limit: cut off as soon as it passes it.
    let mut chunked = Vec::new();
    for _ in 0..64 {
        chunked.extend_from_slice(format!("40\r\n{}\r\n", "a".repeat(64)).as_bytes());
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let (url, _) = raw_server(vec![raw_response("transfer-encoding: chunked\r\n", &chunked)]).await;
    let mut config = raw_client(url).config().clone();
    config.max_response_bytes = 1024;
    let error = complete(&OpenAiClient::new(config).unwrap(), &stop())
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::TooLarge { limit: 1024, .. }), "{error}");
}
