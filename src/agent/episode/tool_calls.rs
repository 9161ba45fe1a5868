//! The agent's loop with `--api tools`: the actions offered as functions, each call a step.
//!
//! The conversation: the system message (the task, the functions, the few-shot examples as
//! tool-call transcripts), the question as the user message, then each reply echoed as the server
//! sent it (its text, and its `tool_calls` under their unique ids: calls read from the text are
//! echoed only as that text) and, for each of its calls, a `tool` message with the call's id and
//! the observation. The reply's text is the thought
//! of its first call's step; several calls in one reply run in order, each its own step. A reply
//! that calls nothing gets one reminder (a user message; the second call counts as the text
//! format's fallback call), and a second reply that calls nothing is an invalid action, answered
//! by a user message. The loop, the step budget, the repeated-action stop and usage accounting
//! are the text format's ([`Agent::step_loop`]): this protocol only asks and answers.

use std::collections::{HashSet, VecDeque};

use crate::agent::calls::{Call, CallError, FunctionSet};
use crate::agent::environment::{Environment, EnvironmentError};
use crate::agent::scratchpad::Scratchpad;
use crate::llm::{CallPurpose, ConverseRequest, FunctionSpec, LlmError, Message};
use crate::record::run::{Run, RunStep};

use crate::agent::episode::{Agent, Decision, Episode, StepEvent, StepProtocol, fail};

/// The `default` profile's prompt offers the functions; the `paper` profile has none.
#[derive(Debug, thiserror::Error)]
#[error("the `paper` profile knows no tool calls: a `--api tools` run needs the `default` profile")]
struct PaperHasNoTools;

/// What one step asked of the model.
struct Asked {
    thought: String,
    calls: Vec<Call>,
    /// The reply text of a step that called nothing, even after the reminder.
    no_call: Option<String>,
}

/// The conversation of one question.
struct Conversation<'f> {
    messages: Vec<Message>,
    functions: &'f FunctionSet,
    specs: Vec<FunctionSpec>,
    used_ids: HashSet<String>,
    /// The calls of the last reply not yet run, each its own step.
    pending: VecDeque<Call>,
    /// The last reply's text: the thought of its first call's step.
    thought: String,
    /// The id of the call the step's observation answers; none when the reply called nothing.
    answering: Option<String>,
}

impl StepProtocol for Conversation<'_> {
    type Invalid = CallError;

    /// The next call of the last reply; with none left, the calls of a new reply.
    async fn decide(
        &mut self,
        agent: &Agent<'_>,
        step: usize,
        _scratchpad: &mut Scratchpad,
        run: &mut Run,
        record: &mut RunStep,
    ) -> Result<Decision<CallError>, LlmError> {
        if self.pending.is_empty() {
            let asked = agent.ask(step, self, run, record).await?;
            if let Some(written) = asked.no_call {
                // The text format's fallback that still wrote no action: an invalid one.
                self.answering = None;
                return Ok(Decision {
                    thought: asked.thought,
                    written,
                    action: Err(CallError::NoCall),
                });
            }
            self.thought = asked.thought;
            self.pending.extend(asked.calls);
        }
        let Some(call) = self.pending.pop_front() else {
            // invariant: `ask` returns at least one call unless it returned `no_call`
            unreachable!("a reply with no call is an invalid step")
        };
        let written = call.written();
        self.answering = Some(call.id);
        Ok(Decision {
            thought: std::mem::take(&mut self.thought),
            written,
            action: call.action,
        })
    }

    /// A valid call's observation, or the invalid call's; sent back as the call's `tool` message,
    /// or as a user message when the reply called nothing.
    async fn observe(
        &mut self,
        _agent: &Agent<'_>,
        step: usize,
        decision: &Decision<CallError>,
        environment: &mut dyn Environment,
    ) -> Result<String, EnvironmentError> {
        let observation = match &decision.action {
            Ok(action) => {
                let parsed = Ok(action.clone());
                environment.observe(step, &parsed, &decision.written).await?
            }
            Err(error) => self.functions.invalid_call_observation(error),
        };
        let content = observation.clone();
        self.messages.push(match self.answering.take() {
            Some(call_id) => Message::Tool { call_id, content },
            None => Message::User(content),
        });
        Ok(observation)
    }
}

impl Agent<'_> {
    /// [`Agent::run`] with a model that calls functions.
    pub(super) async fn converse(
        &self,
        question: &str,
        environment: &mut dyn Environment,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        let mut run = self.start_run(question);
        let label = self.prompt.input_label();
        let opening = format!("{label}: {question}");
        let mut scratchpad = Scratchpad::new(format!("{opening}\n"));
        let Some(tools) = self.prompt.tools() else {
            fail(&mut run, &PaperHasNoTools);
            return Episode {
                run,
                scratchpad,
                prompt_len: 0,
            };
        };
        // A replay's prompt has no toolbox: the recorded tool names still name their functions.
        let functions = tools.functions.including(self.grammar.tool_names());
        let mut conversation = Conversation {
            messages: vec![Message::System(tools.system.clone()), Message::User(opening)],
            specs: functions.specs(),
            functions: &functions,
            used_ids: HashSet::new(),
            pending: VecDeque::new(),
            thought: String::new(),
            answering: None,
        };
        self.step_loop(
            &mut conversation,
            &mut scratchpad,
            &mut run,
            environment,
            on_event,
        )
        .await;
        Episode {
            run,
            scratchpad,
            prompt_len: 0,
        }
    }

    /// Asks for step `step`'s calls: once, and once more after a reminder when the reply called
    /// nothing. The replies go into the conversation and the step's record.
    async fn ask(
        &self,
        step: usize,
        conversation: &mut Conversation<'_>,
        run: &mut Run,
        record: &mut RunStep,
    ) -> Result<Asked, LlmError> {
        let first = self
            .reply(step, CallPurpose::Step, conversation, run, record)
            .await?;
        if !first.calls.is_empty() {
            return Ok(Asked {
                thought: first.thought,
                calls: first.calls,
                no_call: None,
            });
        }
        let reminder = format!(
            "Call one of the functions to go on: {}.",
            conversation.functions.valid_calls()
        );
        conversation.messages.push(Message::User(reminder));
        run.usage.fallback_calls += 1;
        let second = self
            .reply(step, CallPurpose::Reminder, conversation, run, record)
            .await?;
        let thought = [first.thought.as_str(), second.thought.as_str()]
            .into_iter()
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if second.calls.is_empty() {
            // As the text format's fallback keeps the first line of what it got.
            let written = second.thought.lines().next().unwrap_or("").trim().to_owned();
            return Ok(Asked {
                thought: first.thought,
                calls: Vec::new(),
                no_call: Some(written),
            });
        }
        Ok(Asked {
            thought,
            calls: second.calls,
            no_call: None,
        })
    }

    /// One call to the model: its reply recorded, counted, echoed into the conversation and read.
    async fn reply(
        &self,
        step: usize,
        purpose: CallPurpose,
        conversation: &mut Conversation<'_>,
        run: &mut Run,
        record: &mut RunStep,
    ) -> Result<crate::agent::calls::ReadReply, LlmError> {
        let request = ConverseRequest {
            messages: &conversation.messages,
            functions: &conversation.specs,
            step,
            purpose,
        };
        let reply = self.llm.converse(request).await?;
        run.usage.count_call(reply.usage);
        let read = conversation
            .functions
            .read_reply(&reply.message, step, &mut conversation.used_ids);
        conversation.messages.push(read.echo(&reply.message));
        let reasoning = reply.message.reasoning_text();
        record.reasoning =
            crate::llm::reasoning::join(record.reasoning.iter().chain(&reasoning).map(String::as_str));
        record.completions.push(reply.message.text().to_owned());
        let cut = reply.message.is_cut();
        record.replies.push(reply.message);
        if cut {
            return Err(crate::llm::reasoning::only_reasoning(self.llm, reply.ending));
        }
        Ok(read)
    }
}
