//! `Agent`: the ReAct loop — ask the model, read its action, observe, repeat until `Finish`.
//!
//! One loop ([`Agent::step_loop`]) runs every question; a [`StepProtocol`] says how a step asks
//! the model and answers it. The text formats (`--api completions`, `chat`) grow one scratchpad
//! the model continues; with `--api tools` the same loop converses in function calls
//! ([`tool_calls`]).

mod tool_calls;

use crate::agent::action::{Action, ActionError, ActionGrammar};
use crate::agent::environment::{Environment, EnvironmentError};
use crate::agent::fewshot::Format;
use crate::agent::prompt::Prompt;
use crate::agent::scratchpad::Scratchpad;
use crate::base::profile::Profile;
use crate::llm::openai::Api;
use crate::llm::{CallPurpose, Llm, LlmError, LlmRequest, PastStop, reasoning};
use crate::record::run::{Run, RunStep, Stopped};

/// The ReAct notebook's step budget: `for i in range(1, 8)`.
pub const DEFAULT_MAX_STEPS: usize = 7;

/// How many identical steps in a row (same action, same observation) end a `default`-profile run
/// with `stopped: repeated_action`. A recorded agent recovered after three, so four.
pub const MAX_IDENTICAL_STEPS: usize = 4;

/// What the agent does when the model repeats itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeats {
    /// End the run after this many identical steps in a row (the `default` profile).
    StopAfter(usize),
    /// Let the step budget end it (the `paper` profile, and replays of runs that were not
    /// stopped for repeating themselves).
    Allow,
}

impl Repeats {
    /// The profile's own policy.
    pub fn of(profile: Profile) -> Repeats {
        match profile {
            Profile::Paper => Repeats::Allow,
            Profile::Default => Repeats::StopAfter(MAX_IDENTICAL_STEPS),
        }
    }

    /// The policy a recorded run replays under. A run file does not say which policy recorded it
    /// (Reflexion's agent had none), only how the run stopped, so that stop decides: a recording
    /// that did not stop for repeating itself replays to its own end (it was recorded without the
    /// stop, or never met it); any other, and one that records no stop, replays under `profile`'s.
    /// The steps alone cannot decide: four identical steps that end a run at its budget are
    /// `max_steps` without the stop and `repeated_action` with it.
    pub fn replaying(recorded: &Run, profile: Profile) -> Repeats {
        match recorded.stopped {
            Some(stopped) if stopped != Stopped::RepeatedAction => Repeats::Allow,
            _ => Repeats::of(profile),
        }
    }
}

/// Something that happened during a run, for live traces.
#[derive(Debug, Clone, Copy)]
pub enum StepEvent<'a> {
    /// The model decided: its thought and the action as written into the scratchpad.
    Decided {
        step: usize,
        thought: &'a str,
        action: &'a str,
    },
    Observed {
        step: usize,
        observation: &'a str,
    },
    /// An Act step's action (Act steps have no thought).
    Acted {
        step: usize,
        action: &'a str,
    },
    /// A sampled completion of a CoT, Standard or CoT-SC phase: its reasoning (CoT) and the
    /// answer read from it. `index` is 1-based among a CoT-SC phase's samples, `None` for a
    /// method's single completion.
    Sampled {
        index: Option<usize>,
        thought: Option<&'a str>,
        answer: Option<&'a str>,
    },
    /// The thinking the model sent before a step's text (`number` is the step's) or a sample's
    /// (`number` is its index among CoT-SC's samples, `None` for a method's single completion).
    Reasoned {
        number: Option<usize>,
        reasoning: &'a str,
    },
    /// CoT-SC's majority: the answer (none when no sample answered), its votes, the samples.
    Voted {
        answer: Option<&'a str>,
        votes: usize,
        samples: usize,
    },
    /// A backoff method gave up on its first phase and asks the second.
    BackedOff {
        from: &'a str,
        to: &'a str,
        reason: &'a str,
    },
}

/// A step's thought, its action as written, and what was observed.
struct Observed {
    thought: String,
    written: String,
    observation: String,
}

/// One question's finished episode: the run record and the whole scratchpad.
#[derive(Debug, Clone)]
pub struct Episode {
    pub run: Run,
    pub scratchpad: Scratchpad,
    prompt_len: usize,
}

impl Episode {
    /// An episode of a run whose scratchpad starts with a few-shot prompt `prompt_len` bytes long.
    pub(crate) fn new(run: Run, scratchpad: Scratchpad, prompt_len: usize) -> Episode {
        Episode {
            run,
            scratchpad,
            prompt_len,
        }
    }

    /// This episode's scratchpad with another run record (a backoff's merged record).
    pub(crate) fn with_run(self, run: Run) -> Episode {
        Episode { run, ..self }
    }

    /// The scratchpad without the few-shot prompt: `Question: ...` and the numbered steps.
    pub fn trajectory(&self) -> &str {
        &self.scratchpad.text()[self.prompt_len..]
    }
}

/// Runs questions with one model, prompt and grammar. Cheap to share across concurrent questions:
/// everything that changes during a question lives in the scratchpad and the environment.
pub struct Agent<'a> {
    pub llm: &'a dyn Llm,
    pub prompt: &'a Prompt,
    pub grammar: &'a ActionGrammar,
    pub max_steps: usize,
    pub repeats: Repeats,
}

impl<'a> Agent<'a> {
    /// An agent with the profile's own repeated-action policy.
    pub fn new(
        llm: &'a dyn Llm,
        prompt: &'a Prompt,
        grammar: &'a ActionGrammar,
        max_steps: usize,
    ) -> Agent<'a> {
        Agent {
            llm,
            prompt,
            grammar,
            max_steps,
            repeats: Repeats::of(grammar.profile()),
        }
    }

    /// Runs one question to its end. Infrastructure failures end the run with `stopped: error`
    /// and the message in `error`; what was done before stays in the run.
    pub async fn run(
        &self,
        question: &str,
        environment: &mut dyn Environment,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        if self.llm.api().is_some_and(Api::calls_functions) {
            return self.converse(question, environment, on_event).await;
        }
        let mut scratchpad = self.prompt.scratchpad(question);
        let mut run = self.start_run(question);
        self.step_loop(
            &mut TextProtocol,
            &mut scratchpad,
            &mut run,
            environment,
            on_event,
        )
        .await;
        Episode {
            run,
            scratchpad,
            prompt_len: self.prompt.text().len(),
        }
    }

    /// The steps of one question, asked and answered as `protocol` does: each step's decision,
    /// its events, its record in the run and the scratchpad, until a `Finish`, an error, a
    /// repeated action's stop or the step budget.
    async fn step_loop<P: StepProtocol>(
        &self,
        protocol: &mut P,
        scratchpad: &mut Scratchpad,
        run: &mut Run,
        environment: &mut dyn Environment,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) {
        let acts_only = self.prompt.format() == Format::Act;
        let mut identical_steps = 0;
        for step in 1..=self.max_steps {
            let mut record = RunStep {
                n: step,
                completions: Vec::new(),
                replies: Vec::new(),
                thought: None,
                action: None,
                observation: None,
                reasoning: None,
                past_stop: None,
            };
            let decided = protocol.decide(self, step, scratchpad, run, &mut record).await;
            if let Some(reasoning) = &record.reasoning {
                on_event(StepEvent::Reasoned {
                    number: Some(step),
                    reasoning,
                });
            }
            let decision = match decided {
                Ok(decision) => decision,
                Err(error) => {
                    run.steps.push(record);
                    fail(run, &error);
                    break;
                }
            };
            let Decision {
                thought,
                written,
                action,
            } = &decision;
            on_event(match acts_only {
                true => StepEvent::Acted {
                    step,
                    action: written,
                },
                false => StepEvent::Decided {
                    step,
                    thought,
                    action: written,
                },
            });
            if action.is_err() {
                run.usage.invalid_actions += 1;
            }
            if let Ok(Action::Finish(answer)) = action {
                run.answer = crate::record::run::finish_answer(answer);
                run.stopped = Some(Stopped::Finish);
                match acts_only {
                    true => scratchpad.push_act_step(step, written, None),
                    false => scratchpad.push_last_step(step, thought, written),
                }
                record.thought = (!acts_only).then_some(decision.thought);
                record.action = Some(decision.written);
                run.steps.push(record);
                break;
            }
            let observation = match protocol.observe(self, step, &decision, environment).await {
                Ok(observation) => observation,
                Err(error) => {
                    record.thought = (!acts_only).then_some(decision.thought);
                    record.action = Some(decision.written);
                    run.steps.push(record);
                    fail(run, &error);
                    break;
                }
            };
            on_event(StepEvent::Observed {
                step,
                observation: &observation,
            });
            let observed = Observed {
                thought: decision.thought,
                written: decision.written,
                observation,
            };
            if self.record_observed(run, scratchpad, &mut identical_steps, record, observed) {
                break;
            }
        }
        self.end_run(run);
    }

    /// The run record of a question about to start.
    fn start_run(&self, question: &str) -> Run {
        let mut run = Run::new(question, self.grammar.profile());
        run.model = Some(self.llm.model().to_owned());
        run.api = self.llm.api();
        run.max_steps = Some(self.max_steps);
        run.fewshot = Some(self.prompt.fewshot().to_owned());
        run.today = self.prompt.today().map(str::to_owned);
        run.tools = self.grammar.tool_names().to_vec();
        run
    }

    /// A run the loop left without a stop reason ran out of steps.
    fn end_run(&self, run: &mut Run) {
        if run.stopped.is_none() {
            run.stopped = Some(Stopped::MaxSteps);
            if self.grammar.profile() == Profile::Paper {
                // `step(env, "finish[]")`: the paper's forced empty answer.
                run.answer = Some(String::new());
            }
        }
    }

    /// Records a step that observed something, in the scratchpad and the run (`record` holds its
    /// number and what the model sent). Says whether the step repeats the ones before it once too
    /// often (`identical` counts the identical steps in a row): the run then stopped.
    fn record_observed(
        &self,
        run: &mut Run,
        scratchpad: &mut Scratchpad,
        identical: &mut usize,
        mut record: RunStep,
        observed: Observed,
    ) -> bool {
        let Observed {
            thought,
            written,
            observation,
        } = observed;
        match self.prompt.format() {
            Format::Act => scratchpad.push_act_step(record.n, &written, Some(&observation)),
            _ => scratchpad.push_step(record.n, &thought, &written, &observation),
        }
        let repeats_last = run.steps.last().is_some_and(|last| {
            last.action.as_deref() == Some(written.as_str())
                && last.observation.as_deref() == Some(observation.as_str())
        });
        *identical = if repeats_last { *identical + 1 } else { 1 };
        record.thought = (self.prompt.format() != Format::Act).then_some(thought);
        record.action = Some(written);
        record.observation = Some(observation);
        run.steps.push(record);
        let repeated = matches!(self.repeats, Repeats::StopAfter(limit) if *identical >= limit);
        if repeated {
            run.stopped = Some(Stopped::RepeatedAction);
        }
        repeated
    }

    /// Asks the model for step `step` (and once more when it wrote no action): the thought, the
    /// action as written into the scratchpad, and the parsed action. Each call's text goes into
    /// `completions` and its reasoning into `reasonings`, which never reach the scratchpad; a
    /// reply that is only reasoning ends the step with [`crate::llm::LlmError::CutInThinking`].
    async fn continue_scratchpad(
        &self,
        step: usize,
        scratchpad: &mut Scratchpad,
        run: &mut Run,
        completions: &mut Vec<String>,
        reasonings: &mut Vec<String>,
        past_stop: &mut Option<PastStop>,
    ) -> Result<Decision<ActionError>, LlmError> {
        let acts_only = self.prompt.format() == Format::Act;
        let stop = [format!("\nObservation {step}:")];
        let request = LlmRequest {
            shared_prefix: self.prompt.text().len(),
            // An Act step has no thought: the model continues after `Action {step}:`.
            prompt: if acts_only {
                scratchpad.act_prompt(step)
            } else {
                scratchpad.thought_prompt(step)
            },
            stop: &stop,
            step,
            purpose: CallPurpose::Step,
        };
        let completion = self.llm.complete(request).await?;
        run.usage.count(&completion);
        *past_stop = PastStop::sum(*past_stop, completion.past_stop);
        // Recorded before it is judged, so that a replay meets the same reply.
        let judged = reasoning::check_cut(
            self.llm,
            &completion.text,
            completion.reasoning.as_deref(),
            completion.ending,
        );
        reasonings.extend(completion.reasoning);
        completions.push(completion.text);
        judged?;
        let cut = self.grammar.cut_completion(&completions[0], step);
        if acts_only {
            // Its first line is the action. With no thought to continue from there is no
            // fallback call: a line that is no action is an invalid action the model reads about.
            let line = cut.trim_start().split('\n').next().unwrap_or("");
            let action_text = self.grammar.fallback_action(line);
            let action = self.grammar.parse(&action_text);
            let written = self.grammar.display(&action_text, &action);
            return Ok(Decision {
                thought: String::new(),
                written,
                action,
            });
        }
        let split = self.grammar.split_completion(cut, step);
        let (thought, action_text) = match split.action {
            Some(action_text) => (split.thought, action_text),
            None => {
                let thought = self.grammar.fallback_thought(cut);
                let stop = ["\n".to_owned()];
                let request = LlmRequest {
                    shared_prefix: self.prompt.text().len(),
                    prompt: scratchpad.action_prompt(step, &thought),
                    stop: &stop,
                    step,
                    purpose: CallPurpose::Fallback,
                };
                let completion = self.llm.complete(request).await?;
                run.usage.count(&completion);
                run.usage.fallback_calls += 1;
                *past_stop = PastStop::sum(*past_stop, completion.past_stop);
                let judged = reasoning::check_cut(
                    self.llm,
                    &completion.text,
                    completion.reasoning.as_deref(),
                    completion.ending,
                );
                reasonings.extend(completion.reasoning);
                // The stop sequence is `\n`: whatever follows the first newline was never asked for.
                let line = completion.text.split('\n').next().unwrap_or("").to_owned();
                completions.push(completion.text);
                judged?;
                (thought, self.grammar.fallback_action(&line))
            }
        };
        let action = self.grammar.parse(&action_text);
        let written = self.grammar.display(&action_text, &action);
        Ok(Decision {
            thought,
            written,
            action,
        })
    }
}

/// How a step asks the model and answers it. The loop ([`Agent::step_loop`]) is one; the text
/// formats continue one scratchpad ([`TextProtocol`]), `--api tools` converses in function calls
/// ([`tool_calls`]).
trait StepProtocol {
    /// What a reply that is no action was read as.
    type Invalid;

    /// Asks the model for step `step`'s decision; what it sent goes into `record` (its texts, its
    /// replies, its reasoning), its usage into `run`.
    async fn decide(
        &mut self,
        agent: &Agent<'_>,
        step: usize,
        scratchpad: &mut Scratchpad,
        run: &mut Run,
        record: &mut RunStep,
    ) -> Result<Decision<Self::Invalid>, LlmError>;

    /// What step `step` observes after `decision` (no `Finish`), passed on to the model as the
    /// protocol does.
    async fn observe(
        &mut self,
        agent: &Agent<'_>,
        step: usize,
        decision: &Decision<Self::Invalid>,
        environment: &mut dyn Environment,
    ) -> Result<String, EnvironmentError>;
}

/// What the model decided at a step: its thought, its action as written into the scratchpad, and
/// the action read from it.
struct Decision<Invalid> {
    thought: String,
    written: String,
    action: Result<Action, Invalid>,
}

/// The text formats (`--api completions`, `chat`): the model continues the scratchpad, and reads
/// the observation there at the next step.
struct TextProtocol;

impl StepProtocol for TextProtocol {
    type Invalid = ActionError;

    async fn decide(
        &mut self,
        agent: &Agent<'_>,
        step: usize,
        scratchpad: &mut Scratchpad,
        run: &mut Run,
        record: &mut RunStep,
    ) -> Result<Decision<ActionError>, LlmError> {
        let mut reasonings = Vec::new();
        let decided = agent
            .continue_scratchpad(
                step,
                scratchpad,
                run,
                &mut record.completions,
                &mut reasonings,
                &mut record.past_stop,
            )
            .await;
        record.reasoning = reasoning::join(reasonings.iter().map(String::as_str));
        decided
    }

    async fn observe(
        &mut self,
        agent: &Agent<'_>,
        step: usize,
        decision: &Decision<ActionError>,
        environment: &mut dyn Environment,
    ) -> Result<String, EnvironmentError> {
        let observation = environment
            .observe(step, &decision.action, &decision.written)
            .await?;
        Ok(match agent.grammar.profile() {
            // `obs = obs.replace('\\n', '')`
            Profile::Paper => observation.replace("\\n", ""),
            Profile::Default => observation,
        })
    }
}

fn fail(run: &mut Run, error: &(dyn std::error::Error + 'static)) {
    run.stopped = Some(Stopped::on_error(error));
    run.error = Some(error_chain(error));
}

/// An error and its causes on one line, `: `-separated (what `{:#}` prints for `anyhow`).
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
