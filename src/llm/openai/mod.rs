//! `OpenAiClient`: any server that speaks the OpenAI HTTP API — OpenAI, vLLM, llama.cpp, Ollama,
//! LM Studio — through `/completions` or `/chat/completions`.
//!
//! The completions API gets the scratchpad as its prompt, the natural fit for few-shot ReAct. The
//! chat API gets a system message asking the model to continue the text in its format
//! ([`wire::CONTINUE_INSTRUCTION`]) and the scratchpad as the user message; the agent's tolerant
//! grammar reads a reply that repeats the `Thought n:` label.
//!
//! Transient failures (408, 429, 5xx but 501, timeouts, connections refused by a remote host,
//! reset or dropped in the middle of a body) are retried by `http::retry` (exponential backoff, honouring
//! `Retry-After` up to [`RetryPolicy::max_retry_after`]; each retry is announced by a plain-words
//! warning); a connection refused on this machine or its private network is not: no server
//! listens there ([`LlmError::Refused`]). A response body is read up to [`OpenAiConfig::max_response_bytes`], and one completion is cut
//! to [`MAX_COMPLETION_BYTES`] before the agent sees it. Every message built from a response is
//! redacted of every secret the request carried (the API key, the base URL's credentials, the
//! secrets of the `--llm-option`s) before it is shortened, whatever the status; a base URL is
//! never shown with its credentials. The reqwest client is
//! built by the first request. A 400 naming a parameter the model does not support (`stop`,
//! `temperature`, `max_tokens` on OpenAI's reasoning models) is answered by sending the request
//! again without it — and every later request too, including those already sent when the first
//! refusal came back. Stop sequences are also applied here,
//! so a server that ignores or refuses them changes nothing.

mod wire;
mod anthropic;
mod responses;
pub mod batch;

pub use wire::ReasoningEcho;
/// A conversation message as the chat API sends it (`role`, `content`, `tool_calls`,
/// `tool_call_id`): what `export` writes for fine-tuning, the same JSON.
pub use wire::message as wire_message;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use crate::base::http::RetryPolicy;
use crate::base::http::{
    self, AttemptFailure, BodyError, GaveUp, LazyClient, RetryAfter, read_body, retry_after,
};
use crate::base::secret::ApiKey;
use crate::base::secret::{RedactedMessage, Secrets};

use futures::future::BoxFuture;
use reqwest::StatusCode;
use serde_json::{Map, Value, json};

use super::batch::{Batcher, Fallback, ItemError};
use super::cache::{CacheCall, ReplyCache};
use super::{
    CallPurpose, Completion, ConverseRequest, Ending, Llm, LlmError, LlmRequest, PastStop, Reply,
    SampleRequest, Samples, TokenUsage,
};

/// Where `--api anthropic` reads its key unless `--api-key-env` names another variable.
pub use anthropic::KEY_ENV as ANTHROPIC_KEY_ENV;
pub use wire::CONTINUE_INSTRUCTION;

/// OpenAI's own endpoint, used when no base URL is given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// A step is a thought and an action: a few dozen tokens. The cap keeps a runaway model cheap.
pub const DEFAULT_MAX_TOKENS: u32 = 256;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// A response body larger than this is an error: a completion of a few hundred tokens is a few
/// KB, so 4 MiB leaves room for any real answer and keeps a runaway or hostile server from
/// filling memory.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;
/// What one completion may add to the scratchpad (and so to the run file and every later
/// prompt): longer text is cut, at a character boundary, with a warning. It holds even with no
/// `max_tokens` (`--max-tokens 0`).
pub const MAX_COMPLETION_BYTES: usize = 64 * 1024;
/// The calls one reply may make: more are dropped, with a warning (each call is a step, and the
/// step budget is a handful).
pub const MAX_CALLS_PER_REPLY: usize = 32;
/// A call's function name is cut to this; a longer id is dropped (the agent gives the call one).
pub const MAX_NAME_BYTES: usize = 256;
/// One call's arguments, as JSON text: longer ones are cut (and then no longer parse).
pub const MAX_ARGUMENT_BYTES: usize = 16 * 1024;
/// How much of a server's own message an error quotes.
const MAX_MESSAGE_CHARS: usize = 300;

/// Which endpoint of the OpenAI API the client calls, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `/chat/completions`: the scratchpad as a user message, continued by the model.
    #[default]
    Chat,
    /// `/completions`: the scratchpad as a text prompt.
    Completions,
    /// `/chat/completions` with the actions as functions in its `tools` field: the model calls
    /// them, each call a step ([`Llm::converse`]).
    Tools,
    /// Anthropic's `/messages`: the scratchpad as the user's content, continued by the model
    /// ([`anthropic`]).
    Anthropic,
    /// Anthropic's `/messages` with the actions as tools the model calls, each call a step.
    #[serde(rename = "anthropic-tools")]
    AnthropicTools,
    /// `/responses` (OpenAI's Responses API): the continue-instruction as `instructions`, the
    /// scratchpad as `input` ([`responses`]).
    Responses,
    /// `/responses` with the actions as function tools: the model calls them, its output items
    /// (reasoning among them) going back on every later request ([`Llm::converse`]).
    #[serde(rename = "responses-tools")]
    ResponsesTools,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Tools => "tools",
            Api::Anthropic => "anthropic",
            Api::AnthropicTools => "anthropic-tools",
            Api::Responses => "responses",
            Api::ResponsesTools => "responses-tools",
        }
    }

    /// Whether the agent converses with function calls through this API ([`Llm::converse`])
    /// rather than continuing the scratchpad's text.
    pub fn calls_functions(self) -> bool {
        matches!(self, Api::Tools | Api::AnthropicTools | Api::ResponsesTools)
    }

    /// Whether this is Anthropic's Messages API (its headers, bodies and replies).
    pub fn is_anthropic(self) -> bool {
        matches!(self, Api::Anthropic | Api::AnthropicTools)
    }

    /// Whether this is OpenAI's Responses API.
    pub fn is_responses(self) -> bool {
        matches!(self, Api::Responses | Api::ResponsesTools)
    }

    /// Whether a text step's reply may run on past its stop sequence by design: the Responses
    /// API has no `stop`, so the client's own cut is a step's only one and the step records what
    /// it took ([`PastStop`]). Elsewhere `stop` is sent, and a server that writes on past it is
    /// cut silently as ever: whether the text was cut is then no fact of the run's settings (a
    /// refusal of `stop` is learned per process, and a warm reply cache never learns it), and a
    /// run of the paper's shape stays v1.
    pub fn records_past_stop(self) -> bool {
        self.is_responses()
    }

    /// Whether OpenAI documents a `prompt_cache_key` for this API's requests (Chat Completions
    /// and Responses).
    pub fn takes_prompt_cache_key(self) -> bool {
        matches!(
            self,
            Api::Chat | Api::Tools | Api::Responses | Api::ResponsesTools
        )
    }

    fn path(self) -> &'static str {
        match self {
            Api::Chat | Api::Tools => "chat/completions",
            Api::Completions => "completions",
            Api::Anthropic | Api::AnthropicTools => "messages",
            Api::Responses | Api::ResponsesTools => "responses",
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
            "tools" => Ok(Api::Tools),
            "responses" => Ok(Api::Responses),
            "responses-tools" => Ok(Api::ResponsesTools),
            "anthropic" => Ok(Api::Anthropic),
            "anthropic-tools" => Ok(Api::AnthropicTools),
            other => Err(format!(
                "unknown API `{other}`: expected `chat`, `completions`, `tools`, `responses`, `responses-tools`, `anthropic` or `anthropic-tools`"
            )),
        }
    }
}

/// How the model client retries unless told otherwise.
pub const DEFAULT_RETRY: RetryPolicy = RetryPolicy {
    max_retries: 4,
    min_delay: Duration::from_secs(1),
    max_delay: Duration::from_secs(30),
    max_retry_after: Duration::from_secs(120),
};

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
    /// A larger response body (by its `Content-Length` or as it streams in) is an error.
    pub max_response_bytes: usize,
    /// Whether an assistant turn of `--api tools` goes back with its reasoning.
    pub reasoning_echo: ReasoningEcho,
    /// Whether requests ask the server to cache their shared prefix (Anthropic's breakpoints,
    /// OpenAI's `prompt_cache_key`).
    pub prompt_cache: PromptCache,
    /// `--prompt-cache-key`: the `prompt_cache_key` every OpenAI chat and Responses request
    /// carries, instead of the one derived from what it shares with the others
    /// ([`OpenAiClient::prompt_cache_key`]).
    pub prompt_cache_key: Option<String>,
}

/// Whether requests mark the prefix they share with later ones for the server's prompt cache:
/// Anthropic's `cache_control` breakpoints, and OpenAI's `prompt_cache_key`, which routes the
/// requests that share a prefix to one cache (other servers cache prefixes unasked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptCache {
    /// Breakpoints after the few-shot prompt (or the system prompt and the conversation so far);
    /// a `prompt_cache_key` on requests to OpenAI's own endpoint.
    #[default]
    Breakpoints,
    /// None (`--no-prompt-cache`).
    Off,
}

/// The host whose chat and Responses endpoints get a `prompt_cache_key` unasked: other servers
/// may refuse a field they do not know.
pub const PROMPT_CACHE_KEY_HOST: &str = "api.openai.com";

/// The longest `prompt_cache_key` taken (OpenAI's limit is 64 characters).
pub const MAX_PROMPT_CACHE_KEY_CHARS: usize = 64;

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
            retry: DEFAULT_RETRY,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            reasoning_echo: ReasoningEcho::Send,
            prompt_cache: PromptCache::Breakpoints,
            prompt_cache_key: None,
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
    /// `--no-reasoning-echo` gives [`ReasoningEcho::Drop`].
    pub reasoning_echo: ReasoningEcho,
    /// `--no-prompt-cache` gives [`PromptCache::Off`].
    pub prompt_cache: PromptCache,
    /// `--prompt-cache-key KEY`.
    pub prompt_cache_key: Option<String>,
}

const HOW_TO_CONFIGURE: &str = "configure one of:
  OpenAI:        export OPENAI_API_KEY=sk-...  REACT_MODEL=gpt-4o-mini
  Ollama:        --base-url http://localhost:11434/v1 --model llama3.1
  vLLM:          --base-url http://localhost:8000/v1 --model <served model name>
  llama.cpp:     --base-url http://localhost:8080/v1 --model <any name>
  Anthropic:     export ANTHROPIC_API_KEY=sk-ant-...  --api anthropic --model claude-sonnet-4-5
(`--model` is also read from `REACT_MODEL`, `--base-url` from `OPENAI_BASE_URL`, `--api-key` from `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` for `--api anthropic`, or the variable `--api-key-env` names)";

/// Why the model settings cannot make a client.
#[derive(Debug, thiserror::Error)]
pub enum ModelConfigError {
    #[error("no model is configured; {HOW_TO_CONFIGURE}")]
    NoModel,
    #[error("`{base_url}` needs an API key (`{env}` or `--api-key`); {HOW_TO_CONFIGURE}")]
    NoApiKey { base_url: String, env: &'static str },
    #[error(
        "extended thinking's `budget_tokens` ({budget}) must be less than `max_tokens` ({max_tokens}): raise `--max-tokens` (0 sends {} plus the budget)",
        anthropic::DEFAULT_MAX_TOKENS
    )]
    ThinkingBudget { budget: u64, max_tokens: u64 },
    #[error(
        "invalid base URL `{base_url}`: expected an `http` or `https` URL such as `http://localhost:11434/v1`"
    )]
    BaseUrl { base_url: String },
    #[error("invalid model option `{option}`: expected `key=value`")]
    Option { option: String },
    #[error("`--prompt-cache-key`: {why}")]
    PromptCacheKey { why: String },
}

impl ModelSettings {
    /// Checks the settings: a model must be named, and OpenAI's own endpoint needs a key.
    pub fn into_config(self) -> Result<OpenAiConfig, ModelConfigError> {
        let model = self
            .model
            .filter(|model| !model.trim().is_empty())
            .ok_or(ModelConfigError::NoModel)?;
        let mut config = OpenAiConfig::new(model);
        if self.api.is_anthropic() {
            config.base_url = anthropic::DEFAULT_BASE_URL.to_owned();
        }
        if let Some(base_url) = self.base_url.filter(|url| !url.trim().is_empty()) {
            config.base_url = base_url.trim().trim_end_matches('/').to_owned();
        }
        let url = reqwest::Url::parse(&config.base_url)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https"))
            .ok_or_else(|| ModelConfigError::BaseUrl {
                base_url: http::without_credentials(&config.base_url),
            })?;
        config.api_key = self.api_key.filter(|key| !key.expose().trim().is_empty());
        let needs_key = [
            ("api.openai.com", "OPENAI_API_KEY"),
            ("api.anthropic.com", anthropic::KEY_ENV),
        ]
        .into_iter()
        .find(|(host, _)| url.host_str() == Some(host));
        if let (None, Some((_, env))) = (&config.api_key, needs_key) {
            return Err(ModelConfigError::NoApiKey {
                base_url: http::without_credentials(&config.base_url),
                env,
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
        config.reasoning_echo = self.reasoning_echo;
        config.prompt_cache = self.prompt_cache;
        config.prompt_cache_key = self.prompt_cache_key.map(checked_prompt_cache_key).transpose()?;
        if config.prompt_cache_key.is_some() {
            if !config.api.takes_prompt_cache_key() {
                return Err(ModelConfigError::PromptCacheKey {
                    why: format!(
                        "`--api {}` has no `prompt_cache_key` (it is OpenAI's, for `chat`, `tools`, `responses` and `responses-tools`)",
                        config.api
                    ),
                });
            }
            if config.prompt_cache == PromptCache::Off {
                return Err(ModelConfigError::PromptCacheKey {
                    why: "`--no-prompt-cache` sends none".to_owned(),
                });
            }
        }
        if config.api.is_anthropic() {
            anthropic::check(&config)?;
        }
        Ok(config)
    }
}

/// A `--prompt-cache-key` as given, when it is one: not blank, at most
/// [`MAX_PROMPT_CACHE_KEY_CHARS`] characters.
fn checked_prompt_cache_key(key: String) -> Result<String, ModelConfigError> {
    let chars = key.chars().count();
    if key.trim().is_empty() || chars > MAX_PROMPT_CACHE_KEY_CHARS {
        return Err(ModelConfigError::PromptCacheKey {
            why: format!(
                "the key must be 1 to {MAX_PROMPT_CACHE_KEY_CHARS} characters, not {chars}{}",
                if key.trim().is_empty() { " of blanks" } else { "" }
            ),
        });
    }
    Ok(key)
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

/// Which parameters a request body leaves out because the server refused them: none for the
/// request as asked (what the reply cache keys), [`Refused::now`] for the request as sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Leave {
    stop: bool,
    temperature: bool,
    /// `max_completion_tokens` instead of `max_tokens`.
    max_tokens: bool,
    n: bool,
}

impl Leave {
    /// The request as asked: every parameter the caller gave.
    const NOTHING: Leave = Leave {
        stop: false,
        temperature: false,
        max_tokens: false,
        n: false,
    };
}

/// Parameters a server refused once, so that no later request sends them.
#[derive(Debug, Default)]
struct Refused {
    stop: AtomicBool,
    temperature: AtomicBool,
    /// The server wants `max_completion_tokens` instead of `max_tokens`.
    max_tokens: AtomicBool,
    /// The server refuses `n` (several completions a request): samples are asked one by one.
    n: AtomicBool,
}

impl Refused {
    /// What a request sent now leaves out.
    fn now(&self) -> Leave {
        Leave {
            stop: self.stop.load(Ordering::Relaxed),
            temperature: self.temperature.load(Ordering::Relaxed),
            max_tokens: self.max_tokens.load(Ordering::Relaxed),
            n: self.n.load(Ordering::Relaxed),
        }
    }
}

/// How many refused parameters one call adapts to before giving up.
const MAX_ADAPTATIONS: usize = 3;

/// The OpenAI-compatible model client. One per process; shared by every question.
pub struct OpenAiClient {
    config: OpenAiConfig,
    /// Built by the first request: replaying recorded runs never loads the TLS roots.
    http: LazyClient,
    /// The endpoint, e.g. `http://localhost:11434/v1/chat/completions`.
    url: reqwest::Url,
    refused: Refused,
    /// `--cache`: replies kept on disk, asked for before the server.
    cache: Option<ReplyCache>,
    /// Every secret the request carries (the key, the base URL's credentials, the options'
    /// secrets): taken out of whatever the server says before an error quotes it.
    secrets: Secrets,
    /// `eval --batch`: requests go through the vendor's batch API instead of one by one.
    batcher: Option<Arc<Batcher>>,
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

/// What a request carries, so a refusal can be read for what it refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sends {
    /// A prompt or messages, no `tools` field.
    Text,
    /// The `tools` field (`--api tools`): a refusal of it is permanent.
    Tools,
}

/// A reply's body, and the cache request it answers: none when it came from the cache.
struct Exchanged {
    bytes: Vec<u8>,
    keep_under: Option<CacheCall>,
}

/// One failed attempt.
#[derive(Debug)]
enum AttemptError {
    Status {
        status: StatusCode,
        /// Empty when the error body was too large or cut short.
        body: Vec<u8>,
        retry_after: Option<RetryAfter>,
    },
    /// Sending failed, no response came (refused, reset, timed out), or its body stopped before
    /// its end (retried like a reset connection).
    Transport(reqwest::Error),
    /// A server on this machine or its private network refused the connection
    /// ([`http::refused_nearby`]): nothing listens there, not retried.
    Refused(reqwest::Error),
    /// The body is larger than the limit.
    TooLarge,
    /// The HTTP client could not be built.
    Client(reqwest::Error),
    /// The batch a request went in did not answer it (`eval --batch`): asked again.
    Batch(String),
}

impl AttemptFailure for AttemptError {
    fn is_transient(&self) -> bool {
        match self {
            AttemptError::Status { status, .. } => crate::base::http::is_transient_status(*status),
            AttemptError::Transport(error) => {
                error.is_timeout()
                    || error.is_connect()
                    || error.is_request()
                    || error.is_body()
                    || error.is_decode()
            }
            AttemptError::Refused(_) | AttemptError::TooLarge | AttemptError::Client(_) => false,
            AttemptError::Batch(_) => true,
        }
    }

    fn retry_after(&self) -> Option<&RetryAfter> {
        match self {
            AttemptError::Status { retry_after, .. } => retry_after.as_ref(),
            _ => None,
        }
    }

    fn failure(&self) -> String {
        match self {
            AttemptError::Status { status, .. } => format!("HTTP {status}"),
            AttemptError::Transport(error) | AttemptError::Refused(error) => {
                http::transport_failure(error).to_owned()
            }
            AttemptError::TooLarge => "response too large".to_owned(),
            AttemptError::Client(_) => "cannot set up the HTTP client".to_owned(),
            AttemptError::Batch(why) => why.clone(),
        }
    }
}

impl OpenAiClient {
    pub fn new(config: OpenAiConfig) -> Result<OpenAiClient, ModelConfigError> {
        let base = format!("{}/", config.base_url.trim_end_matches('/'));
        let url = reqwest::Url::parse(&base)
            .and_then(|base| base.join(config.api.path()))
            .map_err(|_| ModelConfigError::BaseUrl {
                base_url: http::without_credentials(&config.base_url),
            })?;
        let secrets = Secrets::new()
            .with_key(config.api_key.as_ref())
            .with_url_credentials(&config.base_url)
            .with_json(&Value::Object(config.options.clone()));
        let timeout = config.timeout;
        let http = LazyClient::new(move || {
            reqwest::Client::builder()
                .user_agent(concat!(
                    "react-docstore/",
                    env!("CARGO_PKG_VERSION"),
                    " (https://github.com/react-docstore)"
                ))
                .timeout(timeout)
                .connect_timeout(Duration::from_secs(10))
        });
        Ok(OpenAiClient {
            config,
            http,
            url,
            refused: Refused::default(),
            cache: None,
            secrets,
            batcher: None,
        })
    }

    /// The client, answering from `cache` what it answered before (`--cache`).
    pub fn with_cache(mut self, cache: ReplyCache) -> OpenAiClient {
        self.cache = Some(cache);
        self
    }

    /// The client, sending every request through `batcher` (`eval --batch`).
    pub fn with_batcher(mut self, batcher: Arc<Batcher>) -> OpenAiClient {
        self.batcher = Some(batcher);
        self
    }

    /// Checks the settings and builds the client.
    pub fn from_settings(settings: ModelSettings) -> Result<OpenAiClient, ModelConfigError> {
        OpenAiClient::new(settings.into_config()?)
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// Whether a request has built the HTTP client yet (it is built by the first one).
    pub fn client_built(&self) -> bool {
        self.http.is_built()
    }

    /// The `prompt_cache_key` of a request that shares `shared` (the few-shot prompt; a
    /// conversation's system prompt and functions) with the run's other requests:
    /// `--prompt-cache-key`, else — on OpenAI's own endpoint only ([`PROMPT_CACHE_KEY_HOST`]),
    /// since another server may refuse a field it does not know — `react-docstore-` and 32 hex
    /// digits of the SHA-256 of the model and `shared`, so that every question's requests are
    /// routed to one cache; none with `--no-prompt-cache`, through an API that has no such field,
    /// or when nothing is shared. It routes a request and cannot change its answer: it goes on the
    /// body as sent, never on the body the reply cache keys ([`Self::exchange`]).
    fn prompt_cache_key(&self, shared: &[&str]) -> Option<String> {
        if self.config.prompt_cache == PromptCache::Off || !self.config.api.takes_prompt_cache_key() {
            return None;
        }
        if let Some(key) = &self.config.prompt_cache_key {
            return Some(key.clone());
        }
        if self.url.host_str() != Some(PROMPT_CACHE_KEY_HOST) || shared.iter().all(|part| part.is_empty()) {
            return None;
        }
        let mut hashed = self.config.model.clone();
        for part in shared {
            hashed.push('\0');
            hashed.push_str(part);
        }
        let hex = crate::base::digest::file_key(hashed.as_bytes());
        Some(format!("react-docstore-{}", &hex[..32]))
    }

    /// The `prompt_cache_key` of a text request: its few-shot prompt is what it shares.
    fn text_cache_key(&self, prompt: &str, shared_prefix: usize) -> Option<String> {
        self.prompt_cache_key(&[prompt.get(..shared_prefix).unwrap_or("")])
    }

    /// The `prompt_cache_key` of a tool-calling turn: its system prompt and its functions are
    /// what it shares.
    fn converse_cache_key(&self, request: &ConverseRequest<'_>) -> Option<String> {
        let functions = serde_json::to_string(request.functions).unwrap_or_default();
        let mut shared: Vec<&str> = request
            .messages
            .iter()
            .filter_map(|message| match message {
                super::Message::System(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        shared.push(&functions);
        self.prompt_cache_key(&shared)
    }

    /// The request body for `request`, leaving out what `leave` says the server refused.
    fn body(&self, request: &LlmRequest<'_>, leave: Leave) -> Value {
        if self.config.api.is_anthropic() {
            let (prompt, prefix) = (request.prompt, request.shared_prefix);
            return anthropic::text_body(&self.config, prompt, prefix, request.stop, None, leave);
        }
        if matches!(self.config.api, Api::Responses | Api::ResponsesTools) {
            return responses::text_body(&self.config, request.prompt, leave);
        }
        let mut body = wire::object([("model", json!(self.config.model))]);
        match self.config.api {
            Api::Completions => {
                body.insert("prompt".to_owned(), json!(request.prompt));
            }
            // A text call of a tools client (rewriting a chat follow-up) is a plain chat call; the
            // Responses and Anthropic APIs have their bodies above.
            _ => {
                let messages = json!([
                    {"role": "system", "content": CONTINUE_INSTRUCTION},
                    {"role": "user", "content": request.prompt},
                ]);
                body.insert("messages".to_owned(), messages);
            }
        }
        self.finish_body(body, request.stop, leave)
    }

    /// The request body of one tool-calling turn: the conversation and the functions, the model
    /// free to call any of them (`tool_choice: auto`).
    fn converse_body(&self, request: &ConverseRequest<'_>, leave: Leave) -> Value {
        if self.config.api.is_anthropic() {
            return anthropic::converse_body(&self.config, request, leave);
        }
        if self.config.api == Api::ResponsesTools {
            return responses::converse_body(&self.config, request, leave);
        }
        let mut body = wire::object([("model", json!(self.config.model))]);
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|message| wire::message(message, self.config.reasoning_echo))
            .collect();
        body.insert("messages".to_owned(), Value::Array(messages));
        let tools: Vec<Value> = request
            .functions
            .iter()
            .map(|function| json!({"type": "function", "function": function}))
            .collect();
        body.insert("tools".to_owned(), Value::Array(tools));
        body.insert("tool_choice".to_owned(), json!("auto"));
        self.finish_body(body, &[], leave)
    }

    /// The sampling fields and the user's options, after the prompt.
    fn finish_body(&self, mut body: Map<String, Value>, stop: &[String], leave: Leave) -> Value {
        if !leave.temperature {
            body.insert("temperature".to_owned(), json!(self.config.temperature));
        }
        if let Some(max_tokens) = self.config.max_tokens {
            let key = if leave.max_tokens {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(key.to_owned(), json!(max_tokens));
        }
        if !stop.is_empty() && !leave.stop {
            body.insert("stop".to_owned(), json!(stop));
        }
        for (key, value) in &self.config.options {
            body.insert(key.clone(), value.clone());
        }
        Value::Object(body)
    }

    async fn send_once(&self, body: &Value) -> Result<Vec<u8>, AttemptError> {
        let http = self.http.get().map_err(AttemptError::Client)?;
        super::requests::count_sent();
        let mut builder = http.post(self.url.clone()).json(body);
        let key = self.config.api_key.as_ref().map(ApiKey::expose);
        if self.config.api.is_anthropic() {
            builder = anthropic::headers(builder, key);
        } else if let Some(key) = key {
            // reqwest marks the header sensitive: it never shows in its Debug output.
            builder = builder.bearer_auth(key);
        }
        let response = builder.send().await.map_err(|error| {
            if http::refused_nearby(&error, &self.url) {
                AttemptError::Refused(error.without_url())
            } else {
                AttemptError::Transport(error.without_url())
            }
        })?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let body = read_body(response, self.config.max_response_bytes).await;
        if status.is_success() {
            return body.map_err(|error| match error {
                BodyError::TooLarge => AttemptError::TooLarge,
                BodyError::Cut(error) => AttemptError::Transport(error),
            });
        }
        // An error body is only read for the server's message: one too large or cut short
        // leaves the status to speak.
        Err(AttemptError::Status {
            status,
            body: body.unwrap_or_default(),
            retry_after,
        })
    }

    /// Sends `body`, retrying transient failures.
    async fn send(&self, body: &Value) -> Result<Vec<u8>, GaveUp<AttemptError>> {
        let server = format!("model server {}", http::server_name(self.url.as_str()));
        http::retry(&server, &self.config.retry, || self.send_once(body)).await
    }

    /// Sends `body` through the batcher when there is one (each request that failed inside a
    /// batch asked again in the next round, or at once synchronously with
    /// [`Fallback::Synchronous`], up to the retries), else synchronously.
    async fn transport(&self, body: &Value) -> Result<Vec<u8>, GaveUp<AttemptError>> {
        let Some(batcher) = &self.batcher else {
            return self.send(body).await;
        };
        let mut attempts = 0;
        loop {
            attempts += 1;
            super::requests::count_sent();
            let error = match batcher.send(body, wire::reply_usage).await {
                Ok(bytes) => return Ok(bytes),
                Err(ItemError::Status { status, body }) => AttemptError::Status {
                    status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    body,
                    retry_after: None,
                },
                Err(ItemError::Batch(why)) => AttemptError::Batch(why),
            };
            if !error.is_transient() || attempts > self.config.retry.max_retries {
                return Err(GaveUp {
                    error,
                    attempts,
                    wait_too_long: None,
                });
            }
            tracing::warn!(
                "a request failed inside its batch ({}); asking again",
                error.failure()
            );
            if batcher.settings().fallback == Fallback::Synchronous {
                return self.send(body).await;
            }
        }
    }

    /// A server's own words, fit for an error: redacted of every secret the request carried, then
    /// shortened.
    fn server_words(&self, text: &str) -> RedactedMessage {
        RedactedMessage::new(&self.secrets, text, MAX_MESSAGE_CHARS)
    }

    /// When a 400 names a parameter the model does not support, remembers to leave it out of every
    /// request from now on and says so (once); whether the 400 named one. The caller asks again
    /// when the request it rebuilds differs from the refused one.
    fn adapt_to_refusal(&self, body: &[u8], stop: &[String]) -> bool {
        let param = wire::error_param(body).unwrap_or_default();
        let message = wire::error_message(body).unwrap_or_default().to_lowercase();
        let names = |name: &str| param == name || message.contains(&format!("'{name}'"));
        let (flag, what) = if !stop.is_empty() && names("stop") {
            (&self.refused.stop, "stop")
        } else if names("temperature") {
            (&self.refused.temperature, "temperature")
        } else if names("n") {
            (&self.refused.n, "n")
        } else if self.config.max_tokens.is_some()
            && (names("max_tokens") || message.contains("max_completion_tokens"))
        {
            (&self.refused.max_tokens, "max_tokens")
        } else {
            return false;
        };
        if !flag.swap(true, Ordering::Relaxed) {
            tracing::info!(model = %self.config.model, "the server refuses `{what}`; sending requests without it");
        }
        true
    }

    /// Sends the body `build` makes for what the server refuses (again after each refused
    /// parameter), retrying transient failures: the response body, or the error. `tools`: the
    /// body offers functions, and a 4xx that refuses that field ([`wire::refuses_tools`]) means
    /// the server does not take them.
    ///
    /// With a cache, the call is named by the request as asked (`build(Leave::NOTHING)`), never
    /// by what the server made it leave out: a cold run, a warm run and a run that has or has not
    /// yet learned of a refusal count the same requests, so the k-th one of an attempt is the
    /// same entry in each, and a request no server refused keys as it always did. The
    /// `prompt_cache_key` ([`Self::prompt_cache_key`]) goes on the body as sent, not as asked: it
    /// routes the request and cannot change its answer, so a reply cached with it and without it
    /// is one entry.
    async fn exchange(
        &self,
        build: impl Fn(Leave) -> Value,
        stop: &[String],
        sends: Sends,
        prompt_cache_key: Option<String>,
    ) -> Result<Exchanged, LlmError> {
        super::requests::counting();
        let sent = |leave: Leave| {
            let mut body = build(leave);
            if let (Some(key), Value::Object(fields)) = (&prompt_cache_key, &mut body) {
                // A `--llm-option prompt_cache_key=...` stands.
                fields.entry("prompt_cache_key").or_insert_with(|| json!(key));
            }
            body
        };
        let mut adaptations = 0;
        let mut body = sent(self.refused.now());
        let mut keep_under = None;
        if let Some(cache) = &self.cache {
            let asked = build(Leave::NOTHING);
            let call = cache.call(self.config.api, &http::endpoint(self.url.as_str()), &asked);
            if let Some(bytes) = cache.read(&call) {
                return Ok(Exchanged {
                    bytes,
                    keep_under: None,
                });
            }
            keep_under = Some(call);
        }
        loop {
            let gave_up = match self.transport(&body).await {
                Ok(bytes) => return Ok(Exchanged { bytes, keep_under }),
                Err(gave_up) => gave_up,
            };
            // A refused parameter is left out of this request and every later one. Whether this
            // request carried it is what counts, not whether it was the first refused: requests
            // sent together are refused one after the other, and each is asked again without it.
            if let AttemptError::Status {
                status, body: answer, ..
            } = &gave_up.error
                && *status == StatusCode::BAD_REQUEST
                && adaptations < MAX_ADAPTATIONS
                && self.adapt_to_refusal(answer, stop)
            {
                let adapted = sent(self.refused.now());
                if adapted != body {
                    adaptations += 1;
                    body = adapted;
                    continue;
                }
            }
            return Err(self.failed(gave_up, sends));
        }
    }

    /// Keeps a reply the server gave in the cache, under the request it answers, once it has
    /// been read: a reply this client cannot read is never served again from the cache.
    fn keep(&self, exchanged: Exchanged) {
        if let (Some(cache), Some(call)) = (&self.cache, &exchanged.keep_under) {
            let api_key = self.config.api_key.as_ref();
            cache.write(call, &self.config.model, &exchanged.bytes, api_key);
        }
    }

    /// The error for a request the retries gave up on.
    fn failed(&self, gave_up: GaveUp<AttemptError>, sends: Sends) -> LlmError {
        let url = display_url(&self.url);
        let GaveUp {
            error,
            attempts,
            wait_too_long,
        } = gave_up;
        match error {
            AttemptError::Status { status, body, .. } => {
                let message = wire::error_message(&body)
                    .unwrap_or_else(|| status.canonical_reason().unwrap_or("no message").to_owned());
                // Servers quote the key they refused ("Incorrect API key provided: sk-..."):
                // it must not reach an error, a run file or a log.
                let message = self.server_words(&message).as_str().to_owned();
                if sends == Sends::Tools
                    && status.is_client_error()
                    && !matches!(status.as_u16(), 401 | 403 | 404 | 408 | 429)
                    && wire::refuses_tools(&body)
                {
                    return LlmError::ToolsRejected { url, status, message };
                }
                match wait_too_long {
                    Some(asked) => LlmError::WaitTooLong {
                        url,
                        status: status.to_string(),
                        asked: asked.asked,
                        max_wait_secs: self.config.retry.max_retry_after.as_secs(),
                        message,
                    },
                    None if crate::base::http::is_transient_status(status) => LlmError::GaveUp {
                        url,
                        status: status.to_string(),
                        attempts,
                        message,
                    },
                    None => self.rejected(url, status, message),
                }
            }
            AttemptError::Transport(source) => LlmError::Transport {
                url,
                attempts,
                source,
            },
            AttemptError::Refused(source) => LlmError::Refused {
                server: http::server_name(self.url.as_str()),
                url,
                source,
            },
            AttemptError::Client(source) => LlmError::Client { url, source },
            AttemptError::Batch(message) => LlmError::NoBatchReply {
                url,
                attempts,
                message: self.server_words(&message).as_str().to_owned(),
            },
            AttemptError::TooLarge => LlmError::TooLarge {
                url,
                limit: self.config.max_response_bytes,
            },
        }
    }

    /// A response body read as a completion: its first choice and the tokens it cost.
    fn first_choice(&self, bytes: &[u8]) -> Result<(wire::Choice, Option<TokenUsage>), LlmError> {
        let (choices, usage) = self.choices(bytes)?;
        let url = display_url(&self.url);
        let choice = choices.into_iter().next().ok_or(LlmError::NoChoices { url })?;
        Ok((choice, usage))
    }

    /// A response body read as completions: its choices in the order sent, and the tokens the
    /// request cost.
    fn choices(&self, bytes: &[u8]) -> Result<(Vec<wire::Choice>, Option<TokenUsage>), LlmError> {
        if matches!(self.config.api, Api::Responses | Api::ResponsesTools) {
            let read = self.read_response(bytes)?;
            let usage = read.usage;
            return Ok((vec![read.into_choice()], usage));
        }
        // serde quotes what it could not read, and a hostile server may echo the key there.
        let invalid = |error: serde_json::Error| LlmError::InvalidResponse {
            url: display_url(&self.url),
            source: self.server_words(&error.to_string()),
        };
        if self.config.api.is_anthropic() {
            return anthropic::choices(bytes).map_err(invalid);
        }
        let response: wire::CompletionResponse = serde_json::from_slice(bytes).map_err(invalid)?;
        let usage = response.usage.map(|usage| usage.tokens());
        Ok((response.choices, usage))
    }

    /// A Responses API body, read ([`responses::read`]).
    fn read_response(&self, bytes: &[u8]) -> Result<responses::Read, LlmError> {
        responses::read(bytes).map_err(|error| match error {
            responses::NotAResponse::Json(words) => LlmError::InvalidResponse {
                url: display_url(&self.url),
                source: self.server_words(&words),
            },
            responses::NotAResponse::NoOutput => LlmError::NoChoices {
                url: display_url(&self.url),
            },
        })
    }

    /// Several completions of one prompt: `n` (left out for one, or once the server refused it)
    /// and the sampling temperature over the model's; the choices cut at the stop sequences and
    /// capped like any completion, never more than `n` of them.
    async fn sample_request(&self, request: SampleRequest<'_>) -> Result<Samples, LlmError> {
        let text_request = LlmRequest {
            prompt: request.prompt,
            shared_prefix: request.shared_prefix,
            stop: request.stop,
            step: 0,
            purpose: CallPurpose::Sample,
        };
        let build = |leave: Leave| {
            if self.config.api.is_anthropic() {
                // No `n`: one sample a request, and the caller asks again for the rest.
                let (prompt, prefix) = (request.prompt, request.shared_prefix);
                let temperature = request.temperature;
                return anthropic::text_body(&self.config, prompt, prefix, request.stop, temperature, leave);
            }
            let mut body = self.body(&text_request, leave);
            if let Value::Object(fields) = &mut body {
                // The Responses API has no `n`: the caller asks again for the rest.
                if request.n > 1
                    && !leave.n
                    && !matches!(self.config.api, Api::Responses | Api::ResponsesTools)
                {
                    fields.insert("n".to_owned(), json!(request.n));
                }
                if let Some(temperature) = request.temperature
                    && !leave.temperature
                {
                    fields.insert("temperature".to_owned(), json!(temperature));
                }
            }
            body
        };
        let key = self.text_cache_key(request.prompt, request.shared_prefix);
        let exchanged = self.exchange(build, request.stop, Sends::Text, key).await?;
        let (choices, usage) = self.choices(&exchanged.bytes)?;
        if choices.is_empty() {
            return Err(LlmError::NoChoices {
                url: display_url(&self.url),
            });
        }
        self.keep(exchanged);
        let (mut texts, mut reasoning, mut endings) = (Vec::new(), Vec::new(), Vec::new());
        for choice in choices.into_iter().take(request.n.max(1)) {
            let (text, thinking, ending) = read_choice(choice, request.stop);
            texts.push(text);
            reasoning.push(thinking);
            endings.push(ending);
        }
        Ok(Samples {
            texts,
            reasoning,
            endings,
            usage,
        })
    }

    async fn complete_request(&self, request: LlmRequest<'_>) -> Result<Completion, LlmError> {
        let exchanged = self
            .exchange(
                |leave| self.body(&request, leave),
                request.stop,
                Sends::Text,
                self.text_cache_key(request.prompt, request.shared_prefix),
            )
            .await?;
        let (choice, usage) = self.first_choice(&exchanged.bytes)?;
        self.keep(exchanged);
        let (text, reasoning, ending, past_stop) = read_choice_cut(choice, request.stop, usage.as_ref());
        let past_stop = past_stop.filter(|_| self.config.api.records_past_stop());
        if ending == Ending::Cut {
            tracing::debug!("the completion hit the max-tokens cap");
        }
        Ok(Completion {
            text,
            reasoning,
            ending,
            usage,
            past_stop,
        })
    }

    async fn converse_request(&self, request: ConverseRequest<'_>) -> Result<Reply, LlmError> {
        let exchanged = self
            .exchange(
                |leave| self.converse_body(&request, leave),
                &[],
                Sends::Tools,
                self.converse_cache_key(&request),
            )
            .await?;
        let (mut message, ending, usage) = if self.config.api == Api::ResponsesTools {
            let read = self.read_response(&exchanged.bytes)?;
            let (ending, usage) = (read.ending(), read.usage);
            (read.into_reply(), ending, usage)
        } else {
            let (choice, usage) = self.first_choice(&exchanged.bytes)?;
            let ending = ending_of(&choice);
            (choice.into_reply(), ending, usage)
        };
        self.keep(exchanged);
        if let Some(content) = &mut message.content {
            cap_completion(content);
        }
        message.reasoning.cap();
        wire::bound_passback(&mut message, &self.secrets);
        if message.tool_calls.len() > MAX_CALLS_PER_REPLY {
            tracing::warn!(
                "the model made {} calls in one reply; keeping the first {MAX_CALLS_PER_REPLY}",
                message.tool_calls.len()
            );
            message.tool_calls.truncate(MAX_CALLS_PER_REPLY);
        }
        for call in &mut message.tool_calls {
            cap_arguments(&mut call.arguments);
            // A function name or an id is a few dozen characters: longer ones are not kept whole.
            call.name.truncate(call.name.floor_char_boundary(MAX_NAME_BYTES));
            call.id = call.id.take().filter(|id| id.len() <= MAX_NAME_BYTES);
        }
        Ok(Reply {
            message,
            ending,
            usage,
        })
    }

    /// The error for a status that is not worth retrying. A 404 from a base URL that ends with an
    /// endpoint's path (`…/v1/chat/completions`), or that has no `/v1` segment, says what the URL
    /// probably has too much of or lacks.
    fn rejected(&self, url: String, status: StatusCode, message: String) -> LlmError {
        let Some(base) = reqwest::Url::parse(&self.config.base_url)
            .ok()
            .filter(|_| status == StatusCode::NOT_FOUND)
        else {
            return LlmError::Rejected { url, status, message };
        };
        let base_url = display_url(&base).trim_end_matches('/').to_owned();
        let path = base.path().trim_end_matches('/');
        if let Some(endpoint) = ENDPOINT_PATHS.iter().find(|endpoint| path.ends_with(*endpoint)) {
            let mut suggested = base.clone();
            suggested.set_path(&path[..path.len() - endpoint.len()]);
            let suggested_base_url = display_url(&suggested).trim_end_matches('/').to_owned();
            return LlmError::NotFoundWithEndpoint {
                url,
                message,
                endpoint,
                suggested_base_url,
                base_url,
            };
        }
        let has_v1 = base
            .path_segments()
            .is_some_and(|mut segments| segments.any(|segment| segment == "v1"));
        if has_v1 {
            return LlmError::Rejected { url, status, message };
        }
        LlmError::NotFoundWithoutV1 {
            url,
            message,
            suggested_base_url: format!("{base_url}/v1"),
            base_url,
        }
    }
}

/// The endpoints' paths, which the client adds to the base URL itself: a base URL that ends with
/// one is asked for `…/chat/completions/chat/completions`. Longest first.
const ENDPOINT_PATHS: [&str; 3] = ["/chat/completions", "/completions", "/messages"];

impl Llm for OpenAiClient {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.complete_request(request))
    }

    fn converse<'a>(&'a self, request: ConverseRequest<'a>) -> BoxFuture<'a, Result<Reply, LlmError>> {
        Box::pin(self.converse_request(request))
    }

    fn sample<'a>(&'a self, request: SampleRequest<'a>) -> BoxFuture<'a, Result<Samples, LlmError>> {
        Box::pin(self.sample_request(request))
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn api(&self) -> Option<Api> {
        Some(self.config.api)
    }

    fn batcher(&self) -> Option<&Arc<Batcher>> {
        self.batcher.as_ref()
    }

    fn generation(&self) -> Option<super::Generation> {
        Some(super::Generation {
            temperature: self.config.temperature,
            max_tokens: self.config.max_tokens,
            options: recordable_options(&self.config.options),
        })
    }
}

/// The `--llm-option`s as results files record them: an option whose name says it holds a
/// secret, and each secret inside an option's JSON value at any depth, is kept as its value's
/// digest ([`crate::base::secret::redact_json`]), so two evaluations still compare and no secret reaches
/// a file. Every other option is recorded as given.
fn recordable_options(options: &Map<String, Value>) -> Map<String, Value> {
    crate::base::secret::redact_fields(options)
}

/// A text choice's completion, reasoning and ending: the text after the reasoning, cut at the stop
/// sequences (a stop sequence met while thinking cuts nothing) and capped like any completion;
/// the reasoning capped at [`super::reasoning::MAX_REASONING_BYTES`].
fn read_choice(choice: wire::Choice, stop: &[String]) -> (String, Option<String>, Ending) {
    let (text, reasoning, ending, _) = read_choice_cut(choice, stop, None);
    (text, reasoning, ending)
}

/// [`read_choice`], and what the cut at the stop sequences took off the text
/// ([`PastStop::estimate`] from `usage`, the reply's).
fn read_choice_cut(
    choice: wire::Choice,
    stop: &[String],
    usage: Option<&TokenUsage>,
) -> (String, Option<String>, Ending, Option<PastStop>) {
    let ending = ending_of(&choice);
    let (mut text, mut reasoning) = choice.into_text();
    let at = stop_index(&text, stop);
    let chars = |text: &str| u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    let past_stop = PastStop::estimate(chars(&text[..at]), chars(&text[at..]), usage);
    text.truncate(at);
    cap_completion(&mut text);
    if let Some(reasoning) = &mut reasoning {
        super::reasoning::cap_reasoning(reasoning);
    }
    (text, reasoning, ending, past_stop)
}

/// How the server says `choice` ended: its `finish_reason`, when it is a string.
fn ending_of(choice: &wire::Choice) -> Ending {
    Ending::of_finish_reason(choice.finish_reason.as_ref().and_then(Value::as_str))
}

/// Cuts a completion (or a reply's text) to [`MAX_COMPLETION_BYTES`], with a warning.
fn cap_completion(text: &mut String) {
    if text.len() > MAX_COMPLETION_BYTES {
        tracing::warn!(
            "the model wrote {} bytes in one completion; keeping the first {MAX_COMPLETION_BYTES}",
            text.len()
        );
        text.truncate(text.floor_char_boundary(MAX_COMPLETION_BYTES));
    }
}

/// Cuts one call's arguments to [`MAX_ARGUMENT_BYTES`] of JSON text. Arguments cut short no longer
/// parse: the call is answered with an error observation saying so.
fn cap_arguments(arguments: &mut Value) {
    let mut text = match &*arguments {
        Value::String(text) if text.len() <= MAX_ARGUMENT_BYTES => return,
        Value::String(text) => text.clone(),
        other => {
            let text = other.to_string();
            if text.len() <= MAX_ARGUMENT_BYTES {
                return;
            }
            text
        }
    };
    {
        tracing::warn!(
            "the model sent {} bytes of arguments in one call; keeping the first {MAX_ARGUMENT_BYTES}",
            text.len()
        );
        text.truncate(text.floor_char_boundary(MAX_ARGUMENT_BYTES));
    }
    *arguments = Value::String(text);
}

/// 408, 429 and 5xx: worth asking again — but 501, which says the server does not implement the
/// endpoint and will say so again.
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
    fn options_that_name_a_secret_are_recorded_as_a_digest() {
        let mut options = Map::new();
        options.insert("top_p".to_owned(), Value::from(0.9));
        options.insert("X-Api-Key".to_owned(), Value::from("sk-secret"));
        options.insert("metadata".to_owned(), json!({"api_key": "sk-nested", "run": "a"}));
        options.insert("vertex_credentials".to_owned(), json!({"private_key": "pem"}));
        options.insert("max_completion_tokens".to_owned(), json!(900));
        let recorded = recordable_options(&options);
        assert_eq!(recorded["top_p"], Value::from(0.9));
        assert_eq!(recorded["max_completion_tokens"], json!(900));
        let key = recorded["X-Api-Key"].as_str().unwrap();
        assert!(key.starts_with("sha256:") && !key.contains("sk-secret"), "{key}");
        assert_eq!(recorded["metadata"]["run"], "a");
        let text = Value::Object(recorded).to_string();
        for secret in ["sk-secret", "sk-nested", "pem"] {
            assert!(!text.contains(secret), "{text}");
        }
    }

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
    fn a_prompt_cache_key_is_derived_from_what_requests_share_on_openais_endpoint_only() {
        let client = |api: Api, base_url: &str, cache: PromptCache| {
            let mut config = OpenAiConfig::new("gpt-5");
            config.api = api;
            config.base_url = base_url.to_owned();
            config.prompt_cache = cache;
            OpenAiClient::new(config).unwrap()
        };
        let openai = "https://api.openai.com/v1";
        let on = PromptCache::Breakpoints;
        let chat = client(Api::Chat, openai, on);
        let key = chat.text_cache_key("EXAMPLES\nQuestion: a", 9).unwrap();
        assert!(key.starts_with("react-docstore-") && key.len() == 47, "{key}");
        assert!(key.len() <= MAX_PROMPT_CACHE_KEY_CHARS);
        // Every question of the run shares the few-shot prompt, and so the key.
        assert_eq!(chat.text_cache_key("EXAMPLES\nQuestion: b", 9), Some(key.clone()));
        assert_ne!(chat.text_cache_key("OTHER EX\nQuestion: a", 9), Some(key.clone()));
        // Another model is another cache; the Responses API keys as chat does.
        let mut other = OpenAiConfig::new("gpt-5-mini");
        other.base_url = openai.to_owned();
        let other = OpenAiClient::new(other).unwrap();
        assert_ne!(
            other.text_cache_key("EXAMPLES\nQuestion: a", 9),
            Some(key.clone())
        );
        let responses = client(Api::Responses, openai, on);
        assert_eq!(responses.text_cache_key("EXAMPLES\nQuestion: a", 9), Some(key));
        // Nothing shared, another server, an API with no such field, `--no-prompt-cache`: none.
        assert_eq!(chat.text_cache_key("Question: a", 0), None);
        for none in [
            client(Api::Chat, "http://localhost:8000/v1", on),
            client(Api::Completions, openai, on),
            client(Api::Anthropic, openai, on),
            client(Api::Chat, openai, PromptCache::Off),
        ] {
            assert_eq!(none.text_cache_key("EXAMPLES\nQuestion: a", 9), None);
        }
        // `--prompt-cache-key` on any server of an API that has the field.
        let mut config = OpenAiConfig::new("m");
        config.base_url = "http://localhost:8000/v1".to_owned();
        config.api = Api::Tools;
        config.prompt_cache_key = Some("mine".to_owned());
        let tools = OpenAiClient::new(config).unwrap();
        assert_eq!(tools.text_cache_key("q", 0).as_deref(), Some("mine"));
    }

    #[test]
    fn a_conversation_keys_its_cache_by_its_system_prompt_and_functions() {
        let mut config = OpenAiConfig::new("gpt-5");
        config.api = Api::ResponsesTools;
        let client = OpenAiClient::new(config).unwrap();
        let functions = [super::super::FunctionSpec {
            name: "search".to_owned(),
            description: "Search".to_owned(),
            parameters: json!({"type": "object"}),
        }];
        let key = |system: &str, question: &str| {
            let messages = [
                super::super::Message::System(system.to_owned()),
                super::super::Message::User(question.to_owned()),
            ];
            client.converse_cache_key(&ConverseRequest {
                messages: &messages,
                functions: &functions,
                step: 1,
                purpose: CallPurpose::Step,
            })
        };
        let first = key("Solve it.", "Question: a").unwrap();
        assert_eq!(key("Solve it.", "Question: b"), Some(first.clone()));
        assert_ne!(key("Solve it otherwise.", "Question: a"), Some(first));
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
