//! `ReplayLlm`: a model that answers with what a run file recorded, step by step — the
//! completions of a text run, the assistant messages of a tools run.

use std::sync::Mutex;

use futures::future::BoxFuture;

use super::{
    Api, Completion, ConverseRequest, Ending, Generation, Llm, LlmError, LlmRequest, PastStop, Reply,
    ReplyMessage, SampleRequest, Samples,
};

/// Serves `completions[step - 1][k]` (or `replies[step - 1][k]`) for the `k`-th call of a step,
/// whatever the prompt says.
#[derive(Debug)]
pub struct ReplayLlm {
    model: String,
    completions: Vec<Vec<String>>,
    replies: Vec<Vec<ReplyMessage>>,
    api: Option<Api>,
    /// How many calls each step has had so far.
    calls: Mutex<Vec<usize>>,
    /// The completions of each sampling request, in the order the requests were made.
    samples: Vec<Vec<String>>,
    /// How many sampling requests have been served.
    sample_requests: Mutex<usize>,
    /// Each step's recorded reasoning, served with the step's first completion.
    reasoning: Vec<Option<String>>,
    /// What each step's calls wrote past the stop sequence, served with its first completion.
    past_stop: Vec<Option<PastStop>>,
    /// The recorded reasoning of each sampling request's completions.
    sample_reasoning: Vec<Vec<Option<String>>>,
    /// The generation settings the recording was made with, when it says.
    generation: Option<Generation>,
    /// How every served reply ended, as the recording tells ([`ReplayLlm::with_ending`]).
    ending: Ending,
}

impl ReplayLlm {
    /// A text run's model: the completions of each step.
    pub fn new(model: impl Into<String>, completions: Vec<Vec<String>>) -> ReplayLlm {
        let calls = Mutex::new(vec![0; completions.len()]);
        ReplayLlm {
            model: model.into(),
            completions,
            replies: Vec::new(),
            api: None,
            calls,
            samples: Vec::new(),
            sample_requests: Mutex::new(0),
            reasoning: Vec::new(),
            past_stop: Vec::new(),
            sample_reasoning: Vec::new(),
            generation: None,
            ending: Ending::Unknown,
        }
    }

    /// A tools run's model: the assistant messages of each step (none on a step that ran a call
    /// of an earlier reply). Its API is [`Api::Tools`], so the agent converses with it.
    pub fn with_replies(model: impl Into<String>, replies: Vec<Vec<ReplyMessage>>) -> ReplayLlm {
        let calls = Mutex::new(vec![0; replies.len()]);
        ReplayLlm {
            model: model.into(),
            completions: Vec::new(),
            replies,
            api: Some(Api::Tools),
            calls,
            samples: Vec::new(),
            sample_requests: Mutex::new(0),
            reasoning: Vec::new(),
            past_stop: Vec::new(),
            sample_reasoning: Vec::new(),
            generation: None,
            ending: Ending::Unknown,
        }
    }

    /// Adds the completions of a run's sampling requests (CoT, Standard, CoT-SC), served one
    /// request's worth per [`Llm::sample`] call, in order, whatever the prompt and `n` say.
    pub fn with_samples(mut self, samples: Vec<Vec<String>>) -> ReplayLlm {
        self.samples = samples;
        self
    }

    /// Adds each step's recorded reasoning (a text run's), served with the step's first
    /// completion: a step whose calls both reasoned recorded them joined, and replays so.
    pub fn with_reasoning(mut self, reasoning: Vec<Option<String>>) -> ReplayLlm {
        self.reasoning = reasoning;
        self
    }

    /// Adds what each step's calls wrote past the stop sequence, as a text run recorded it
    /// (summed over a step's calls), served with the step's first completion: the replay records
    /// it again.
    pub fn with_past_stop(mut self, past_stop: Vec<Option<PastStop>>) -> ReplayLlm {
        self.past_stop = past_stop;
        self
    }

    /// Adds the recorded reasoning of each sampling request's completions, in the order of
    /// [`ReplayLlm::with_samples`].
    pub fn with_sample_reasoning(mut self, reasoning: Vec<Vec<Option<String>>>) -> ReplayLlm {
        self.sample_reasoning = reasoning;
        self
    }

    /// Says which generation settings the recording was made with (an evaluation's), so that
    /// a reply cut inside its thinking names its `--max-tokens`.
    pub fn with_generation(mut self, generation: Option<Generation>) -> ReplayLlm {
        self.generation = generation;
        self
    }

    /// Says how the recording's replies ended: what a reply of only reasoning replays as (a run
    /// records how it stopped, and only its last reply can have been one). A run that stopped
    /// with `max_tokens` replays [`Ending::Cut`], any other [`Ending::Ended`].
    pub fn with_ending(mut self, ending: Ending) -> ReplayLlm {
        self.ending = ending;
        self
    }

    /// Says which API made the recording (a text run's `chat` or `completions`).
    pub fn recorded_api(mut self, api: Option<Api>) -> ReplayLlm {
        // A tools run's model converses, whichever function-calling API recorded it.
        if !self.api.is_some_and(Api::calls_functions) || api.is_some_and(Api::calls_functions) {
            self.api = api;
        }
        self
    }

    /// The `k`-th recorded answer of `step`, counting this call, and `k` (from 0).
    fn next<'r, T>(&self, recorded: &'r [Vec<T>], step: usize) -> Result<(usize, &'r T), LlmError> {
        let step_idx = step.saturating_sub(1);
        let mut calls = self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match (recorded.get(step_idx), calls.get_mut(step_idx)) {
            (Some(answers), Some(n_calls)) => {
                let call = *n_calls;
                *n_calls += 1;
                answers
                    .get(call)
                    .map(|answer| (call, answer))
                    .ok_or(LlmError::ReplayExhausted { step, call: call + 1 })
            }
            _ => Err(LlmError::ReplayExhausted { step, call: 1 }),
        }
    }
}

impl Llm for ReplayLlm {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        let result = self
            .next(&self.completions, request.step)
            .map(|(call, text)| Completion {
                text: text.clone(),
                reasoning: match call {
                    0 => self
                        .reasoning
                        .get(request.step.saturating_sub(1))
                        .cloned()
                        .flatten(),
                    _ => None,
                },
                ending: self.ending,
                usage: None,
                past_stop: match call {
                    0 => self
                        .past_stop
                        .get(request.step.saturating_sub(1))
                        .copied()
                        .flatten(),
                    _ => None,
                },
            });
        Box::pin(async move { result })
    }

    fn sample<'a>(&'a self, request: SampleRequest<'a>) -> BoxFuture<'a, Result<Samples, LlmError>> {
        let mut served = self
            .sample_requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *served += 1;
        let result = match self.samples.get(*served - 1) {
            Some(texts) => Ok(Samples {
                texts: texts.iter().take(request.n).cloned().collect(),
                reasoning: self
                    .sample_reasoning
                    .get(*served - 1)
                    .map(|reasoning| reasoning.iter().take(request.n).cloned().collect())
                    .unwrap_or_default(),
                endings: vec![self.ending; texts.len().min(request.n)],
                usage: None,
            }),
            None => Err(LlmError::ReplaySamplesExhausted { request: *served }),
        };
        Box::pin(async move { result })
    }

    fn converse<'a>(&'a self, request: ConverseRequest<'a>) -> BoxFuture<'a, Result<Reply, LlmError>> {
        let result = self.next(&self.replies, request.step).map(|(_, message)| Reply {
            message: message.clone(),
            ending: self.ending,
            usage: None,
        });
        Box::pin(async move { result })
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn api(&self) -> Option<Api> {
        self.api
    }

    fn generation(&self) -> Option<Generation> {
        self.generation.clone()
    }
}
