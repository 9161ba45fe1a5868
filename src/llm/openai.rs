//! `OpenAiClient`: any server that speaks the OpenAI HTTP API — OpenAI, vLLM, llama.cpp, Ollama,
//! LM Studio — through `/completions` or `/chat/completions`.
//!
//! The completions API gets the scratchpad as its prompt, the natural fit for few-shot ReAct. The
//! chat API gets a system message asking the model to continue the text in its format
//! ([`wire::CONTINUE_INSTRUCTION`]) and the scratchpad as the user message; the agent's tolerant
//! grammar reads a reply that repeats the `Thought n:` label.
//!
//! Transient failures (429, 5xx, timeouts, dropped connections) are retried with exponential
//! backoff (backon), honouring `Retry-After`. A 400 naming a parameter the model does not support
//! (`stop`, `temperature`, `max_tokens` on OpenAI's reasoning models) is answered by sending the
//! request again without it — and every later request too. Stop sequences are also applied here,
//! so a server that ignores or refuses them changes nothing.

mod wire;

use crate::http::retry_after;
use std::fmt;

pub use crate::secret::ApiKey;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use futures::future::BoxFuture;
use reqwest::StatusCode;
use serde_json::{Map, Value, json};

use super::{Completion, Llm, LlmError, LlmRequest, TokenUsage};

pub use wire::CONTINUE_INSTRUCTION;

/// OpenAI's own endpoint, used when no base URL is given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// A step is a thought and an action: a few dozen tokens. The cap keeps a runaway model cheap.
pub const DEFAULT_MAX_TOKENS: u32 = 256;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Which endpoint of the OpenAI API the client calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    /// `/chat/completions`: the scratchpad as a user message, continued by the model.
    #[default]
    Chat,
    /// `/completions`: the scratchpad as a text prompt.
    Completions,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Api::Chat => "chat/completions",
            Api::Completions => "completions",
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Api {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "chat" => Ok(Api::Chat),
            "completions" => Ok(Api::Completions),
            other => Err(format!("unknown API `{other}`: expected `chat` or `completions`")),
        }
    }
}

/// How transient failures are retried.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: usize,
    pub min_delay: Duration,
    pub max_delay: Duration,
    /// A `Retry-After` longer than this ends the retries at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 4,
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

/// Everything the client needs to know, checked.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Up to and including the version segment: `https://api.openai.com/v1`, `http://localhost:11434/v1`.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    pub model: String,
    pub api: Api,
    pub temperature: f64,
    /// Sent as `max_tokens` (or `max_completion_tokens` when the server asks for it); `None` sends none.
    pub max_tokens: Option<u32>,
    /// Extra request fields (`--llm-option key=value`), written last so they override ours.
    pub options: Map<String, Value>,
    /// Per attempt.
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl OpenAiConfig {
    /// The defaults: OpenAI's endpoint, the chat API, temperature 0, [`DEFAULT_MAX_TOKENS`].
    pub fn new(model: impl Into<String>) -> OpenAiConfig {
        OpenAiConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: model.into(),
            api: Api::Chat,
            temperature: 0.0,
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            options: Map::new(),
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
        }
    }
}

/// The model settings as the command line and the environment give them, before any check.
#[derive(Debug, Clone, Default)]
pub struct ModelSettings {
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<ApiKey>,
    pub api: Api,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// `key=value` pairs; the value is read as JSON when it parses, else as a string.
    pub options: Vec<String>,
    pub timeout: Option<Duration>,
}

const HOW_TO_CONFIGURE: &str = "configure one of:
  OpenAI:        export OPENAI_API_KEY=sk-...  REACT_MODEL=gpt-4o-mini
  Ollama:        --base-url http://localhost:11434/v1 --model llama3.1
  vLLM:          --base-url http://localhost:8000/v1 --model <served model name>
  llama.cpp:     --base-url http://localhost:8080/v1 --model <any name>
(`--model` is also read from `REACT_MODEL`, `--base-url` from `OPENAI_BASE_URL`, `--api-key` from `OPENAI_API_KEY`)";

/// Why the model settings cannot make a client.
#[derive(Debug, thiserror::Error)]
pub enum ModelConfigError {
    #[error("no model is configured; {HOW_TO_CONFIGURE}")]
    NoModel,
    #[error("`{base_url}` needs an API key (`OPENAI_API_KEY` or `--api-key`); {HOW_TO_CONFIGURE}")]
    NoApiKey { base_url: String },
    #[error(
        "invalid base URL `{base_url}`: expected an `http` or `https` URL such as `http://localhost:11434/v1`"
    )]
    BaseUrl { base_url: String },
    #[error("invalid model option `{option}`: expected `key=value`")]
    Option { option: String },
    #[error("cannot set up the HTTP client")]
    Client {
        #[source]
        source: reqwest::Error,
    },
}

impl ModelSettings {
    /// Checks the settings: a model must be named, and OpenAI's own endpoint needs a key.
    pub fn into_config(self) -> Result<OpenAiConfig, ModelConfigError> {
        let model = self
            .model
            .filter(|model| !model.trim().is_empty())
            .ok_or(ModelConfigError::NoModel)?;
        let mut config = OpenAiConfig::new(model);
        if let Some(base_url) = self.base_url.filter(|url| !url.trim().is_empty()) {
            config.base_url = base_url.trim().trim_end_matches('/').to_owned();
        }
        let url = reqwest::Url::parse(&config.base_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| ModelConfigError::BaseUrl {
                base_url: config.base_url.clone(),
            })?;
        config.api_key = self.api_key.filter(|key| !key.expose().trim().is_empty());
        if config.api_key.is_none() && url.host_str() == Some("api.openai.com") {
            return Err(ModelConfigError::NoApiKey {
                base_url: config.base_url,
            });
        }
        config.api = self.api;
        if let Some(temperature) = self.temperature {
            config.temperature = temperature;
        }
        if let Some(max_tokens) = self.max_tokens {
            config.max_tokens = (max_tokens > 0).then_some(max_tokens);
        }
        for option in &self.options {
            let (key, value) = parse_option(option)?;
            config.options.insert(key, value);
        }
        if let Some(timeout) = self.timeout {
            config.timeout = timeout;
        }
        Ok(config)
    }
}

/// Reads `key=value`: `temperature=0.2` → a number, `seed=7` → a number, `top_k=null` → null,
/// `reasoning_effort=low` → a string.
pub fn parse_option(option: &str) -> Result<(String, Value), ModelConfigError> {
    let (key, value) = option
        .split_once('=')
        .filter(|(key, _)| !key.trim().is_empty())
        .ok_or_else(|| ModelConfigError::Option {
            option: option.to_owned(),
        })?;
    let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
    Ok((key.trim().to_owned(), value))
}

/// Parameters a server refused once, so that no later request sends them.
#[derive(Debug, Default)]
struct Refused {
    stop: AtomicBool,
    temperature: AtomicBool,
    /// The server wants `max_completion_tokens` instead of `max_tokens`.
    max_tokens: AtomicBool,
}

/// How many refused parameters one call adapts to before giving up.
const MAX_ADAPTATIONS: usize = 3;

/// The OpenAI-compatible model client. One per process; shared by every question.
pub struct OpenAiClient {
    config: OpenAiConfig,
    http: reqwest::Client,
    /// The endpoint, e.g. `http://localhost:11434/v1/chat/completions`.
    url: reqwest::Url,
    refused: Refused,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("url", &display_url(&self.url))
            .field("model", &self.config.model)
            .field("api", &self.config.api)
            .field("api_key", &self.config.api_key)
            .finish_non_exhaustive()
    }
}

/// One failed attempt.
#[derive(Debug)]
enum AttemptError {
    Status {
        status: StatusCode,
        body: Vec<u8>,
        retry_after: Option<Duration>,
    },
    Transport(reqwest::Error),
}

impl AttemptError {
    fn is_transient(&self) -> bool {
        match self {
            AttemptError::Status { status, .. } => is_transient_status(*status),
            AttemptError::Transport(error) => {
                error.is_timeout() || error.is_connect() || error.is_request() || error.is_body()
            }
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            AttemptError::Status { retry_after, .. } => *retry_after,
            AttemptError::Transport(_) => None,
        }
    }
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<OpenAiClient, ModelConfigError> {
        let base = format!("{}/", config.base_url.trim_end_matches('/'));
        let url = reqwest::Url::parse(&base)
            .and_then(|base| base.join(config.api.path()))
            .map_err(|_| ModelConfigError::BaseUrl {
                base_url: config.base_url.clone(),
            })?;
        let http = reqwest::Client::builder()
            .user_agent(concat!(
                "react-docstore/",
                env!("CARGO_PKG_VERSION"),
                " (https://github.com/react-docstore)"
            ))
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|source| ModelConfigError::Client { source })?;
        Ok(OpenAiClient {
            config,
            http,
            url,
            refused: Refused::default(),
        })
    }

    /// Checks the settings and builds the client.
    pub fn from_settings(settings: ModelSettings) -> Result<OpenAiClient, ModelConfigError> {
        OpenAiClient::new(settings.into_config()?)
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The request body for `request`, leaving out what the server refused before.
    fn body(&self, request: &LlmRequest<'_>) -> Value {
        let mut body = wire::object([("model", json!(self.config.model))]);
        match self.config.api {
            Api::Completions => {
                body.insert("prompt".to_owned(), json!(request.prompt));
            }
            Api::Chat => {
                let messages = json!([
                    {"role": "system", "content": CONTINUE_INSTRUCTION},
                    {"role": "user", "content": request.prompt},
                ]);
                body.insert("messages".to_owned(), messages);
            }
        }
        if !self.refused.temperature.load(Ordering::Relaxed) {
            body.insert("temperature".to_owned(), json!(self.config.temperature));
        }
        if let Some(max_tokens) = self.config.max_tokens {
            let key = if self.refused.max_tokens.load(Ordering::Relaxed) {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(key.to_owned(), json!(max_tokens));
        }
        if !request.stop.is_empty() && !self.refused.stop.load(Ordering::Relaxed) {
            body.insert("stop".to_owned(), json!(request.stop));
        }
        for (key, value) in &self.config.options {
            body.insert(key.clone(), value.clone());
        }
        Value::Object(body)
    }

    async fn send_once(&self, body: &Value) -> Result<Vec<u8>, AttemptError> {
        let mut builder = self.http.post(self.url.clone()).json(body);
        if let Some(key) = self.config.api_key.as_ref().map(ApiKey::expose) {
            // reqwest marks the header sensitive: it never shows in its Debug output.
            builder = builder.bearer_auth(key);
        }
        let response = builder
            .send()
            .await
            .map_err(|error| AttemptError::Transport(error.without_url()))?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = response
            .bytes()
            .await
            .map_err(|error| AttemptError::Transport(error.without_url()))?;
        if status.is_success() {
            Ok(body.to_vec())
        } else {
            Err(AttemptError::Status {
                status,
                body: body.to_vec(),
                retry_after,
            })
        }
    }

    /// Sends `body`, retrying transient failures. On failure: the last attempt's error and the
    /// number of attempts made.
    async fn send(&self, body: &Value) -> Result<Vec<u8>, (AttemptError, usize)> {
        let policy = &self.config.retry;
        let backoff = ExponentialBuilder::default()
            .with_min_delay(policy.min_delay)
            .with_max_delay(policy.max_delay)
            .with_max_times(policy.max_retries)
            .with_jitter();
        let mut attempts = 0;
        let result = (|| {
            attempts += 1;
            self.send_once(body)
        })
        .retry(backoff)
        .when(AttemptError::is_transient)
        .adjust(|error, delay| match (delay, error.retry_after()) {
            (None, _) => None,
            (Some(_), Some(after)) if after > policy.max_retry_after => None,
            (Some(_), Some(after)) => Some(after),
            (Some(delay), None) => Some(delay),
        })
        .notify(|error, delay| match error {
            AttemptError::Status { status, .. } => {
                tracing::warn!(%status, ?delay, "model server failed; retrying");
            }
            AttemptError::Transport(error) => {
                tracing::warn!(%error, ?delay, "model server unreachable; retrying");
            }
        })
        .await;
        result.map_err(|error| (error, attempts))
    }

    /// When a 400 names a parameter the model does not support, remembers to leave it out and says
    /// whether the request is worth sending again.
    fn adapt_to_refusal(&self, body: &[u8], request: &LlmRequest<'_>) -> bool {
        let param = wire::error_param(body).unwrap_or_default();
        let message = wire::error_message(body).unwrap_or_default().to_lowercase();
        let names = |name: &str| param == name || message.contains(&format!("'{name}'"));
        let refuse = |flag: &AtomicBool, what: &str| {
            let first_time = !flag.swap(true, Ordering::Relaxed);
            if first_time {
                tracing::info!(model = %self.config.model, "the server refuses `{what}`; sending requests without it");
            }
            first_time
        };
        if !request.stop.is_empty() && names("stop") {
            return refuse(&self.refused.stop, "stop");
        }
        if names("temperature") {
            return refuse(&self.refused.temperature, "temperature");
        }
        if self.config.max_tokens.is_some()
            && (names("max_tokens") || message.contains("max_completion_tokens"))
        {
            return refuse(&self.refused.max_tokens, "max_tokens");
        }
        false
    }

    async fn complete_request(&self, request: LlmRequest<'_>) -> Result<Completion, LlmError> {
        let url = display_url(&self.url);
        let mut adaptations = 0;
        let bytes = loop {
            let body = self.body(&request);
            match self.send(&body).await {
                Ok(bytes) => break bytes,
                Err((AttemptError::Status { status, body, .. }, _))
                    if status == StatusCode::BAD_REQUEST
                        && adaptations < MAX_ADAPTATIONS
                        && self.adapt_to_refusal(&body, &request) =>
                {
                    adaptations += 1;
                }
                Err((
                    AttemptError::Status {
                        status,
                        body,
                        retry_after,
                    },
                    attempts,
                )) => {
                    let message = wire::error_message(&body)
                        .unwrap_or_else(|| status.canonical_reason().unwrap_or("no message").to_owned());
                    // Servers quote the key they refused ("Incorrect API key provided: sk-..."):
                    // it must not reach an error, a run file or a log.
                    let message = match &self.config.api_key {
                        Some(key) => key.redact(&message),
                        None => message,
                    };
                    let max_wait = self.config.retry.max_retry_after;
                    let transient = is_transient_status(status);
                    let status = status.to_string();
                    return Err(match retry_after {
                        Some(wait) if transient && wait > max_wait => LlmError::WaitTooLong {
                            url,
                            status,
                            wait_secs: wait.as_secs(),
                            max_wait_secs: max_wait.as_secs(),
                            message,
                        },
                        _ if transient => LlmError::GaveUp {
                            url,
                            status,
                            attempts,
                            message,
                        },
                        _ => LlmError::Rejected { url, status, message },
                    });
                }
                Err((AttemptError::Transport(source), attempts)) => {
                    return Err(LlmError::Transport {
                        url,
                        attempts,
                        source,
                    });
                }
            }
        };
        let response: wire::CompletionResponse =
            serde_json::from_slice(&bytes).map_err(|source| LlmError::InvalidResponse {
                url: url.clone(),
                source,
            })?;
        let usage = response.usage.map(|usage| TokenUsage {
            prompt_tokens: usage.prompt_tokens.unwrap_or(0),
            completion_tokens: usage.completion_tokens.unwrap_or(0),
        });
        let choice = response
            .choices
            .into_iter()
            .next()
            .ok_or(LlmError::NoChoices { url })?;
        if let Some(reason) = choice.finish_reason.as_ref().and_then(Value::as_str)
            && reason == "length"
        {
            tracing::debug!("the completion hit the max-tokens cap");
        }
        let mut text = choice.into_text();
        text.truncate(stop_index(&text, request.stop));
        Ok(Completion { text, usage })
    }
}

impl Llm for OpenAiClient {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.complete_request(request))
    }

    fn model(&self) -> &str {
        &self.config.model
    }
}

/// 408, 429 and 5xx: worth asking again.
fn is_transient_status(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error()
}

/// Where the first stop sequence starts, or the text's length.
fn stop_index(text: &str, stop: &[String]) -> usize {
    stop.iter()
        .filter(|stop| !stop.is_empty())
        .filter_map(|stop| text.find(stop.as_str()))
        .min()
        .unwrap_or(text.len())
}

/// The endpoint without any user name or password a base URL might carry.
fn display_url(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_as_json_else_string() {
        #[track_caller]
        fn check(option: &str, expected: Option<(&str, Value)>) {
            let parsed = parse_option(option).ok();
            let expected = expected.map(|(key, value)| (key.to_owned(), value));
            assert_eq!(parsed, expected, "{option}");
        }
        check("seed=7", Some(("seed", json!(7))));
        check("top_p=0.5", Some(("top_p", json!(0.5))));
        check("reasoning_effort=low", Some(("reasoning_effort", json!("low"))));
        check(
            "logit_bias={\"50256\": -100}",
            Some(("logit_bias", json!({"50256": -100}))),
        );
        check("stop=null", Some(("stop", Value::Null)));
        check("empty=", Some(("empty", json!(""))));
        check("no-equals", None);
        check("=value", None);
    }

    #[test]
    fn stop_index_finds_the_earliest_stop() {
        let stop = ["\nObservation 1:".to_owned(), "\nQuestion:".to_owned()];
        assert_eq!(stop_index("a\nQuestion: b\nObservation 1: c", &stop), 1);
        assert_eq!(stop_index("abc", &stop), 3);
        assert_eq!(stop_index("abc", &[]), 3);
    }

    #[test]
    fn settings_need_a_model_and_openai_needs_a_key() {
        let error = ModelSettings::default().into_config().unwrap_err();
        assert!(matches!(error, ModelConfigError::NoModel));
        let openai = ModelSettings {
            model: Some("gpt-4o-mini".into()),
            ..ModelSettings::default()
        };
        assert!(matches!(
            openai.into_config(),
            Err(ModelConfigError::NoApiKey { .. })
        ));
        let ollama = ModelSettings {
            model: Some("llama3.1".into()),
            base_url: Some("http://localhost:11434/v1/".into()),
            ..ModelSettings::default()
        };
        let config = ollama.into_config().unwrap();
        assert_eq!(config.base_url, "http://localhost:11434/v1");
        assert_eq!(config.max_tokens, Some(DEFAULT_MAX_TOKENS));
        let ftp = ModelSettings {
            model: Some("m".into()),
            base_url: Some("ftp://host/v1".into()),
            ..ModelSettings::default()
        };
        assert!(matches!(ftp.into_config(), Err(ModelConfigError::BaseUrl { .. })));
    }

    #[test]
    fn debug_output_redacts_the_key() {
        let mut config = OpenAiConfig::new("gpt-4o-mini");
        config.api_key = Some(ApiKey::new("sk-secret-123"));
        config.base_url = "https://user:pass@example.com/v1".into();
        let client = OpenAiClient::new(config.clone()).unwrap();
        for debug in [format!("{config:?}"), format!("{client:?}")] {
            assert!(!debug.contains("sk-secret-123"), "{debug}");
            assert!(debug.contains("<redacted>"), "{debug}");
        }
        assert!(!format!("{client:?}").contains("pass"));
    }
}
