//! `ReplayLlm`: a model that answers with the completions a run file recorded, step by step.

use std::sync::Mutex;

use futures::future::BoxFuture;

use super::{Completion, Llm, LlmError, LlmRequest};

/// Serves `completions[step - 1][k]` for the `k`-th call of a step, whatever the prompt says.
#[derive(Debug)]
pub struct ReplayLlm {
    model: String,
    completions: Vec<Vec<String>>,
    /// How many calls each step has had so far.
    calls: Mutex<Vec<usize>>,
}

impl ReplayLlm {
    pub fn new(model: impl Into<String>, completions: Vec<Vec<String>>) -> ReplayLlm {
        let calls = Mutex::new(vec![0; completions.len()]);
        ReplayLlm {
            model: model.into(),
            completions,
            calls,
        }
    }
}

impl Llm for ReplayLlm {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        let step_idx = request.step.saturating_sub(1);
        let result = {
            let mut calls = self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match (self.completions.get(step_idx), calls.get_mut(step_idx)) {
                (Some(step), Some(n_calls)) => {
                    let call = *n_calls;
                    *n_calls += 1;
                    step.get(call)
                        .map(|text| Completion {
                            text: text.clone(),
                            usage: None,
                        })
                        .ok_or(LlmError::ReplayExhausted {
                            step: request.step,
                            call: call + 1,
                        })
                }
                _ => Err(LlmError::ReplayExhausted {
                    step: request.step,
                    call: 1,
                }),
            }
        };
        Box::pin(async move { result })
    }

    fn model(&self) -> &str {
        &self.model
    }
}
