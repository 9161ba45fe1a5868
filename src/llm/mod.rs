//! `Llm`: the model behind the agent — a prompt and stop sequences in, a completion out.
//!
//! Implementations: [`ReplayLlm`] serves a run file's recorded completions (tests, `replay`);
//! the OpenAI-compatible HTTP client lives in [`openai`].

pub mod reasoning;
mod conversation;
pub mod cache;
pub mod requests;
pub mod batch;
pub mod openai;
mod playback;

pub use conversation::{ConverseRequest, FunctionSpec, Message, Reply, ReplyMessage, SentCall, WireCall};

use openai::Api;
pub use playback::ReplayLlm;
use reasoning::{Ending, ReasoningFields};

use futures::future::BoxFuture;

use crate::base::secret::RedactedMessage;

/// One call to the model.
#[derive(Debug, Clone, Copy)]
pub struct LlmRequest<'a> {
    pub prompt: &'a str,
    /// How many of `prompt`'s first bytes every question of the run shares (the few-shot
    /// prompt): where a prompt-cache breakpoint goes ([`openai::PromptCache`]); 0 when none.
    pub shared_prefix: usize,
    /// Stop sequences. Servers that reject them get the request without; the agent cuts the
    /// completion at them itself either way.
    pub stop: &'a [String],
    /// The step this call belongs to (1-based), so recordings can be served per step; 0 for calls
    /// outside the agent loop (rewriting a chat follow-up).
    pub step: usize,
    pub purpose: CallPurpose,
}

/// Why the agent calls the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallPurpose {
    /// The step's main call, continuing after `Thought n:`.
    Step,
    /// The second call when the first held no action, continuing after `Action n:`.
    Fallback,
    /// `chat`: rewriting a follow-up into a standalone question, before the agent runs.
    RewriteQuestion,
    /// `--api tools`: the second call when a reply held no function call, after a reminder.
    Reminder,
    /// A CoT or Standard completion, one or several ([`Llm::sample`]).
    Sample,
    /// Reflexion: a reflection on a failed trial, before the question's next trial.
    Reflect,
}

/// A request for `n` completions of one prompt (CoT-SC's samples; `n` = 1 for CoT and Standard).
#[derive(Debug, Clone, Copy)]
pub struct SampleRequest<'a> {
    pub prompt: &'a str,
    /// As [`LlmRequest::shared_prefix`].
    pub shared_prefix: usize,
    pub stop: &'a [String],
    /// How many completions to ask for in this request.
    pub n: usize,
    /// The sampling temperature, instead of the model's own setting; `None` keeps it.
    pub temperature: Option<f64>,
}

/// The completions one sampling request brought back (at most the `n` asked; a server may send
/// fewer), and what the request cost when the server says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Samples {
    pub texts: Vec<String>,
    /// The reasoning of each of `texts`, in the same order (none where it had none; missing
    /// entries are none).
    pub reasoning: Vec<Option<String>>,
    /// How each of `texts` ended, in the same order (missing entries are
    /// [`Ending::Unknown`]).
    pub endings: Vec<Ending>,
    pub usage: Option<TokenUsage>,
}

/// What the model wrote, and what it cost when the server says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    /// The text after any reasoning, which the agent reads.
    pub text: String,
    /// The model's thinking before it ([`reasoning`]), when it sent any.
    pub reasoning: Option<String>,
    /// How the server says the reply ended (`finish_reason`): what tells a reply the token cap
    /// cut inside its thinking from one that ended after its thinking.
    pub ending: Ending,
    pub usage: Option<TokenUsage>,
    /// What the model wrote past the stop sequence the client cut `text` at, when it wrote any.
    pub past_stop: Option<PastStop>,
}

/// What a model wrote past the stop sequence its text was cut at: a server that sends no `stop`
/// (the Responses API has none; a reasoning model that refused it over Chat Completions) writes
/// on past the step's `Observation n:` marker, and bills it. The client cuts there itself, and a
/// run's step records what was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PastStop {
    /// The characters cut, the stop sequence's among them.
    pub chars: u64,
    /// The output tokens those characters cost, **estimated**: the reply's output tokens (less
    /// those it spent thinking) times the share of its text's characters that were cut, rounded
    /// (0 when the server reported no usage). No server says which tokens fell past the cut.
    pub tokens_estimated: u64,
}

impl PastStop {
    /// What was cut of a reply text of `kept` characters and `cut` more, whose server reported
    /// `usage`; none when nothing was cut.
    pub fn estimate(kept: u64, cut: u64, usage: Option<&TokenUsage>) -> Option<PastStop> {
        if cut == 0 {
            return None;
        }
        let text_tokens = usage.map_or(0, |usage| {
            usage.completion_tokens.saturating_sub(usage.reasoning_tokens)
        });
        let total = u128::from(kept) + u128::from(cut);
        // Rounded to the nearest token: (tokens × cut + total / 2) / total.
        let estimated = (u128::from(text_tokens) * u128::from(cut) + total / 2) / total;
        Some(PastStop {
            chars: cut,
            tokens_estimated: u64::try_from(estimated).unwrap_or(u64::MAX),
        })
    }

    /// Two cuts of one step (its call and its fallback call) together; either may be none.
    pub fn sum(first: Option<PastStop>, second: Option<PastStop>) -> Option<PastStop> {
        match (first, second) {
            (Some(a), Some(b)) => Some(PastStop {
                chars: a.chars.saturating_add(b.chars),
                tokens_estimated: a.tokens_estimated.saturating_add(b.tokens_estimated),
            }),
            (one, other) => one.or(other),
        }
    }
}

/// What one call cost, in one shape whatever the API reported it in
/// ([`openai::wire::WireUsage::tokens`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    /// Every input token, those read from and written to a prompt cache included.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of `completion_tokens`, those spent thinking (`usage.completion_tokens_details`).
    pub reasoning_tokens: u64,
    /// Of `prompt_tokens`, those read from the server's prompt cache.
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, those written to the prompt cache (Anthropic bills them apart).
    pub cache_write_tokens: u64,
}

/// A language model. Shared by every question of an evaluation, so it takes `&self`.
pub trait Llm: Send + Sync {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>>;

    /// One turn of a tool-calling conversation (`--api tools`). A model that cannot call
    /// functions says so.
    fn converse<'a>(&'a self, request: ConverseRequest<'a>) -> BoxFuture<'a, Result<Reply, LlmError>> {
        let _ = request;
        let model = self.model().to_owned();
        Box::pin(async move { Err(LlmError::NoToolCalling { model }) })
    }

    /// Up to `n` completions of one prompt in one request. By default a model gives one: one
    /// `complete` call, at its own temperature; the caller asks again for the rest.
    fn sample<'a>(&'a self, request: SampleRequest<'a>) -> BoxFuture<'a, Result<Samples, LlmError>> {
        Box::pin(async move {
            let completion = self
                .complete(LlmRequest {
                    prompt: request.prompt,
                    shared_prefix: request.shared_prefix,
                    stop: request.stop,
                    step: 0,
                    purpose: CallPurpose::Sample,
                })
                .await?;
            Ok(Samples {
                texts: vec![completion.text],
                reasoning: vec![completion.reasoning],
                endings: vec![completion.ending],
                usage: completion.usage,
            })
        })
    }

    /// The model's name, as recorded in run files.
    fn model(&self) -> &str;

    /// The API the model is reached through, when it is an OpenAI-compatible server's (recorded
    /// in run files). [`Api::Tools`] makes the agent converse with function calls.
    fn api(&self) -> Option<Api> {
        None
    }

    /// The request fields besides the prompt that a server's answers depend on, as evaluations
    /// record them; `None` for a model that is not a server's (a recording, a test's).
    fn generation(&self) -> Option<Generation> {
        None
    }

    /// The batch transport this model sends its requests through (`eval --batch`), if any: the
    /// evaluation tells it which questions are open and drives its rounds.
    fn batcher(&self) -> Option<&std::sync::Arc<batch::Batcher>> {
        None
    }
}

/// The request fields a model's answers depend on: the temperature, `max_tokens` and every
/// `--llm-option` (sorted by key, as JSON).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Generation {
    pub temperature: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub options: serde_json::Map<String, serde_json::Value>,
}

/// Why a call to the model failed. Messages quote the server's own words, redacted of the API
/// key and shortened; [`LlmError::is_permanent`] tells the failures that asking again cannot fix.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("the recording has no completion for step {step} (call {call} of that step)")]
    ReplayExhausted { step: usize, call: usize },
    #[error("the recording has no samples for sampling request {request}")]
    ReplaySamplesExhausted { request: usize },
    /// A status the server will answer again the same way (bad key, unknown model, bad parameter,
    /// an endpoint it does not implement): not retried.
    #[error("the model server at `{url}` rejected the request ({status}): {message}")]
    Rejected {
        url: String,
        status: reqwest::StatusCode,
        message: String,
    },
    /// A 404 from a base URL with no `/v1` segment: OpenAI-compatible servers serve the API
    /// under `/v1`.
    #[error(
        "the model server at `{url}` answered 404 Not Found ({message}): the base URL `{base_url}` has no /v1: did you mean `{suggested_base_url}`?"
    )]
    NotFoundWithoutV1 {
        url: String,
        base_url: String,
        suggested_base_url: String,
        message: String,
    },
    /// A 404 from a base URL that ends with an endpoint's path, which the client adds itself.
    #[error(
        "the model server at `{url}` answered 404 Not Found ({message}): the base URL `{base_url}` ends with the endpoint path `{endpoint}`, which the client adds itself: drop it, did you mean `{suggested_base_url}`?"
    )]
    NotFoundWithEndpoint {
        url: String,
        base_url: String,
        /// `/chat/completions`, `/completions` or `/messages`.
        endpoint: &'static str,
        suggested_base_url: String,
        message: String,
    },
    /// 408, 429 or 5xx after the retry budget.
    #[error("the model server at `{url}` answered {status} after {attempts} attempts: {message}")]
    GaveUp {
        url: String,
        status: String,
        attempts: usize,
        message: String,
    },
    /// 429 or 5xx with a `Retry-After` longer than the client waits; `asked` is the server's
    /// value (`20663 s`, `1e30 ms`).
    #[error(
        "the model server at `{url}` answered {status} and asked to wait {asked}, longer than the {max_wait_secs} s this client waits: {message}"
    )]
    WaitTooLong {
        url: String,
        status: String,
        asked: String,
        max_wait_secs: u64,
        message: String,
    },
    /// The HTTP client could not be built (it is built by the first request).
    #[error("cannot set up the HTTP client for the model server at `{url}`")]
    Client {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// A server on this machine or its private network refused the connection: nothing listens
    /// at that address and port. Not retried.
    #[error(
        "cannot reach the model server at `{url}`: connection refused, nothing listens at {server} (is the server running, on that port?)"
    )]
    Refused {
        url: String,
        /// `host:port`.
        server: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("cannot reach the model server at `{url}` (after {attempts} attempts)")]
    Transport {
        url: String,
        attempts: usize,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "the model server at `{url}` sent a response larger than {limit} bytes, the limit of this client"
    )]
    TooLarge { url: String, limit: usize },
    /// `eval --batch`: the batches the request went in gave it no reply (not submitted, failed,
    /// expired, cancelled), round after round, up to the retries. It may fix itself.
    #[error(
        "no batch answered the request for the model server at `{url}` after {attempts} rounds: {message}"
    )]
    NoBatchReply {
        url: String,
        attempts: usize,
        message: String,
    },
    #[error("the model server at `{url}` sent a response that is not an OpenAI completion")]
    InvalidResponse {
        url: String,
        /// serde's complaint, redacted of the key and shortened.
        #[source]
        source: RedactedMessage,
    },
    #[error("the model server at `{url}` answered with no choices")]
    NoChoices { url: String },
    /// `--api tools` against a server that refuses the `tools` field (vLLM without
    /// `--enable-auto-tool-choice`, llama.cpp without `--jinja`, a model with no tool template).
    #[error(
        "the model server at `{url}` does not accept tool calls ({status}: {message}); `--api tools` needs a server with tool calling on (vLLM: `--enable-auto-tool-choice --tool-call-parser ...`, llama.cpp: `--jinja`), else use `--api chat` or `--api completions`"
    )]
    ToolsRejected {
        url: String,
        status: reqwest::StatusCode,
        message: String,
    },
    /// The reply was only reasoning and the token cap cut it inside its thinking
    /// ([`reasoning::check_cut`]). The run stops with `max_tokens`.
    #[error("the model's reply holds only its reasoning and no answer: {}", cap.advice())]
    CutInThinking { cap: reasoning::TokenCap },
    /// The reply was only reasoning and the server ended it there, not the token cap (its
    /// `finish_reason` is not `length`). The run stops with an error.
    #[error(
        "the model's reply holds only its reasoning and no answer, and the token cap did not cut it: the server ended the reply after the reasoning (its `finish_reason` is not `length`); the model stopped without answering, or the server's reasoning parser took the answer for reasoning (see the reasoning parser's options, or turn thinking off: `--llm-option chat_template_kwargs='{{\"enable_thinking\":false}}'`)"
    )]
    ThinkingOnly,
    /// The model has no tool-calling turn (a recording of a text run, a user's own `Llm`).
    #[error("the model `{model}` cannot call functions: `--api tools` needs an OpenAI-compatible server")]
    NoToolCalling { model: String },
}

impl LlmError {
    /// Whether the same request will fail the same way however often it is sent, whatever the
    /// question: the key is refused (401) or not allowed (403), the model or endpoint does not
    /// exist (404, including [`LlmError::NotFoundWithoutV1`] and [`LlmError::NotFoundWithEndpoint`]), the method is not allowed (405) or
    /// the server does not implement the endpoint (501), the server refuses tool calls, nothing
    /// listens at a local or private address ([`LlmError::Refused`]), or no HTTP client can be
    /// built. An evaluation stops at the first such
    /// error instead of sending every question to a server that cannot answer. Other failures
    /// (a 400 about one prompt, retries exhausted, a bad body) may not repeat: not permanent.
    pub fn is_permanent(&self) -> bool {
        match self {
            LlmError::Rejected { status, .. } => matches!(status.as_u16(), 401 | 403 | 404 | 405 | 501),
            LlmError::NotFoundWithoutV1 { .. }
            | LlmError::NotFoundWithEndpoint { .. }
            | LlmError::Refused { .. }
            | LlmError::Client { .. }
            | LlmError::ToolsRejected { .. }
            | LlmError::NoToolCalling { .. } => true,
            _ => false,
        }
    }
}
