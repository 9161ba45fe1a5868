//! `Llm`: the model behind the agent — a prompt and stop sequences in, a completion out.
//!
//! Implementations: [`ReplayLlm`] serves a run file's recorded completions (tests, `replay`);
//! the OpenAI-compatible HTTP client lives in [`openai`].

mod replay;

pub use replay::ReplayLlm;

use futures::future::BoxFuture;

/// One call to the model.
#[derive(Debug, Clone, Copy)]
pub struct LlmRequest<'a> {
    pub prompt: &'a str,
    /// Stop sequences. Servers that reject them get the request without; the agent cuts the
    /// completion at them itself either way.
    pub stop: &'a [String],
    /// The step this call belongs to (1-based), so recordings can be served per step.
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
}

/// What the model wrote, and what it cost when the server says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Completion {
    pub text: String,
    pub usage: Option<TokenUsage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// A language model. Shared by every question of an evaluation, so it takes `&self`.
pub trait Llm: Send + Sync {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>>;

    /// The model's name, as recorded in run files.
    fn model(&self) -> &str;
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("the recording has no completion for step {step} (call {call} of that step)")]
    ReplayExhausted { step: usize, call: usize },
}
