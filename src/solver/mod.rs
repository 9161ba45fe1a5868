//! `Solver`: a question answered by one method of the ReAct paper's Table 1 — a solver per kind
//! (the ReAct or Act loop of [`Agent`], one CoT or Standard completion, CoT-SC's samples and
//! vote), and the two backoffs composed from them.
//!
//! The prompts of a method's phases are built once per evaluation, so their prefix (instruction
//! and examples) is byte-identical across questions and a server's prefix cache reuses it.

mod answer;
pub mod vote;
pub mod sc_stop;
pub mod reflexion;
pub mod setup;

use futures::future::join_all;

use crate::agent::action::ActionGrammar;
use crate::agent::environment::Environment;
use crate::agent::fewshot::{Fewshot, FewshotError, Format};
use crate::agent::prompt::{Prompt, PromptOptions};
use crate::agent::scratchpad::Scratchpad;
use crate::agent::{Agent, Episode, StepEvent};
use crate::base::method::{Method, Reflect, ScStop};
use crate::base::profile::Profile;
use crate::base::task::Task;
use crate::llm::{Llm, LlmError, SampleRequest, Samples};
use crate::record::run::{
    Backoff, BackoffReason, RUN_FORMAT_V2, Run, Sample, ScStopReason, ScStopRecord, Stopped, ToolDescription,
};
use crate::tools::Toolbox;

pub use answer::{AnswerKind, ReadCompletion, fever_label, read_completion};
pub use vote::{is_weak, majority};

/// CoT-SC's samples per question, as in the paper.
pub const DEFAULT_SAMPLES: usize = 21;
/// CoT-SC's sampling temperature, as in the paper.
pub const DEFAULT_SAMPLE_TEMPERATURE: f64 = 0.7;
/// The ReAct paper's step budget for FEVER when backing off ("7 and 5 steps for HotpotQA and
/// FEVER respectively").
pub const FEVER_BACKOFF_MAX_STEPS: usize = 5;

/// One trial of a question under Reflexion's protocol.
#[derive(Debug, Clone, Copy)]
pub struct Trial<'a> {
    /// Counted from 1.
    pub number: u32,
    /// What a failed trial leaves for the next.
    pub strategy: Reflect,
    /// The question's previous trial, which failed; none before the first.
    pub previous: Option<&'a Run>,
}

/// Which method, and how CoT-SC samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MethodConfig {
    pub method: Method,
    /// CoT-SC's N: samples asked per question.
    pub samples: usize,
    /// CoT-SC's sampling temperature.
    pub sample_temperature: f64,
    /// CoT-SC's early stop (`--sc-stop`): `None` asks all N.
    pub sc_stop: Option<ScStop>,
}

impl Default for MethodConfig {
    fn default() -> MethodConfig {
        MethodConfig {
            method: Method::React,
            samples: DEFAULT_SAMPLES,
            sample_temperature: DEFAULT_SAMPLE_TEMPERATURE,
            sc_stop: None,
        }
    }
}

impl MethodConfig {
    /// The step budget: the one given, else the notebook's 7 — and for FEVER with a backoff
    /// method, the paper's 5.
    pub fn max_steps(&self, given: Option<usize>, task: Task) -> usize {
        given.unwrap_or(match (self.method.backs_off(), task) {
            (true, Task::Fever) => FEVER_BACKOFF_MAX_STEPS,
            _ => crate::agent::DEFAULT_MAX_STEPS,
        })
    }
}

/// The few-shot examples of a method's phases: the bundled ones of a task, or the user's files
/// (one per phase, each in its phase's format; ReAct examples serve Act without their thoughts).
#[derive(Debug, Clone)]
pub enum Examples {
    Bundled(Task),
    Files(Vec<Fewshot>),
}

impl Examples {
    /// The task the examples teach: the bundled set's, or FEVER when a file's examples ask a
    /// `Claim` ([`answer::task_of_input`]), else HotpotQA.
    pub fn task(&self) -> Task {
        match self {
            Examples::Bundled(task) => *task,
            Examples::Files(files) => {
                if files
                    .iter()
                    .any(|file| answer::task_of_input(&file.input_label) == Task::Fever)
                {
                    Task::Fever
                } else {
                    Task::HotpotQa
                }
            }
        }
    }
}

/// Why a method cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum SolverError {
    #[error(transparent)]
    Fewshot(#[from] FewshotError),
    #[error(
        "`--method {method}` runs {phases}: give one `--fewshot` file for each ({formats}), or none for the bundled examples"
    )]
    FewshotPerPhase {
        method: Method,
        phases: String,
        formats: String,
    },
    #[error("`--samples` must be at least 1")]
    NoSamples,
    #[error(
        "`--samples` is {samples}, more than the {} samples a question can ask for",
        crate::base::limits::MAX_SAMPLES
    )]
    TooManySamples { samples: usize },
    #[error(
        "`--max-steps` is {max_steps}, more than the {} steps a question can take",
        crate::base::limits::MAX_STEPS
    )]
    TooManySteps { max_steps: usize },
    #[error(
        "`--sc-stop` stops CoT-SC's sampling early: `--method {method}` samples nothing to vote on (use `cot-sc`, `react-then-cot-sc` or `cot-sc-then-react`)"
    )]
    ScStopMethod { method: Method },
    #[error("`--sc-batch` must be at least 1")]
    NoScBatch,
    #[error("`--sc-confidence` must be above 0.5 and below 1, not `{confidence}`")]
    ScConfidence { confidence: f64 },
    #[error(
        "`--reflect {strategy}` needs `--method react` or `cot`: Reflexion's prompts are theirs (`--method {method}` runs trials with `--reflect none`)"
    )]
    ReflectMethod { method: Method, strategy: Reflect },
}

/// One method, set up for every question of a run or an evaluation: its phases' prompts, the
/// action grammar, the step budget and the sampling. Cheap to share; the model is passed to
/// each [`Solver::solve`], so an evaluation can watch it per question.
#[derive(Debug, Clone)]
pub struct Solver {
    method: Method,
    task: Task,
    profile: Profile,
    /// The ReAct or Act prompt (methods that act).
    loop_prompt: Option<Prompt>,
    /// Its examples, for Reflexion's trial prompts, which show them in a frame of their own.
    loop_fewshot: Option<Fewshot>,
    /// The CoT prompt's examples, likewise.
    answer_fewshot: Option<Fewshot>,
    /// The CoT or Standard prompt (methods that sample).
    answer_prompt: Option<Prompt>,
    grammar: ActionGrammar,
    /// What each run records of the tools beyond their names.
    tool_descriptions: Vec<ToolDescription>,
    max_steps: usize,
    samples: usize,
    sample_temperature: f64,
    sc_stop: Option<ScStop>,
}

impl Solver {
    pub fn new(
        config: &MethodConfig,
        profile: Profile,
        examples: &Examples,
        toolbox: &Toolbox,
        options: &PromptOptions,
        max_steps: usize,
    ) -> Result<Solver, SolverError> {
        if config.samples == 0 {
            return Err(SolverError::NoSamples);
        }
        // Bounded before anything is sized or asked by them (a run file's are checked as it is
        // read; these come from a flag or a library caller).
        if config.samples > crate::base::limits::MAX_SAMPLES {
            return Err(SolverError::TooManySamples {
                samples: config.samples,
            });
        }
        if max_steps > crate::base::limits::MAX_STEPS {
            return Err(SolverError::TooManySteps { max_steps });
        }
        let method = config.method;
        if let Some(stop) = config.sc_stop {
            check_sc_stop(method, &stop)?;
        }
        let (loop_format, answer_format) = phase_formats(method);
        let mut fewshots = pick_examples(method, examples, profile, [loop_format, answer_format])?;
        let answer_fewshot = fewshots.pop().flatten();
        let loop_fewshot = fewshots.pop().flatten();
        let prompt = |fewshot: Fewshot| Prompt::new(profile, &fewshot, toolbox, options);
        Ok(Solver {
            method,
            task: examples.task(),
            profile,
            loop_prompt: loop_fewshot.clone().map(prompt),
            loop_fewshot,
            answer_prompt: answer_fewshot.clone().map(prompt),
            answer_fewshot,
            grammar: ActionGrammar::new(profile, toolbox.names()),
            tool_descriptions: crate::tools::descriptions_to_record(toolbox),
            max_steps,
            samples: config.samples,
            sample_temperature: config.sample_temperature,
            sc_stop: config.sc_stop,
        })
    }

    pub fn method(&self) -> Method {
        self.method
    }

    /// The task its examples teach, which its runs record.
    pub fn task(&self) -> Task {
        self.task
    }

    /// The same method reading actions with `grammar` (a replay's: the tools a run recorded,
    /// which the replay does not run).
    pub fn with_grammar(self, grammar: ActionGrammar) -> Solver {
        Solver { grammar, ..self }
    }

    pub fn grammar(&self) -> &ActionGrammar {
        &self.grammar
    }

    /// The ReAct or Act prompt, for the methods that act.
    pub fn loop_prompt(&self) -> Option<&Prompt> {
        self.loop_prompt.as_ref()
    }

    /// The CoT or Standard prompt, for the methods that sample.
    pub fn answer_prompt(&self) -> Option<&Prompt> {
        self.answer_prompt.as_ref()
    }

    /// The digest of each phase's prompt before the question (instruction, examples, tools'
    /// lines), as an evaluation records its few-shot examples.
    pub fn prompt_digests(&self) -> Vec<String> {
        [self.loop_prompt(), self.answer_prompt()]
            .into_iter()
            .flatten()
            .map(|prompt| crate::base::digest::digest(prompt.text().as_bytes()))
            .collect()
    }

    /// Answers one question. The run names its method, except a `react` run, whose file stays
    /// what it always was (v1, no `method`); the other methods' runs are `run.v2`. Failures end
    /// the run with `stopped: error`, keeping what was done.
    pub async fn solve(
        &self,
        llm: &dyn Llm,
        question: &str,
        environment: &mut dyn Environment,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        let mut episode = match self.method {
            Method::React | Method::Act => self.act(llm, question, environment, on_event).await,
            Method::Cot | Method::Standard => self.answer_once(llm, question, on_event).await,
            Method::CotSc => self.self_consistency(llm, question, on_event).await,
            Method::ReactThenCotSc => {
                let first = self.act(llm, question, environment, on_event).await;
                let reason = match first.run.stopped {
                    Some(Stopped::MaxSteps) => Some(BackoffReason::MaxSteps),
                    Some(Stopped::RepeatedAction) => Some(BackoffReason::RepeatedAction),
                    Some(Stopped::Finish) if first.run.answer.is_none() => Some(BackoffReason::NoAnswer),
                    _ => None,
                };
                self.back_off(
                    first,
                    reason,
                    Method::React,
                    Method::CotSc,
                    llm,
                    question,
                    environment,
                    on_event,
                )
                .await
            }
            Method::CotScThenReact => {
                let first = self.self_consistency(llm, question, on_event).await;
                let reason = match (&first.run.vote, first.run.stopped) {
                    (_, Some(Stopped::Error)) => None,
                    (Some(vote), _)
                        if is_weak(vote, sc_stop::verdict_over(vote, first.run.sc_stop.as_ref())) =>
                    {
                        Some(BackoffReason::WeakMajority)
                    }
                    _ => None,
                };
                self.back_off(
                    first,
                    reason,
                    Method::CotSc,
                    Method::React,
                    llm,
                    question,
                    environment,
                    on_event,
                )
                .await
            }
        };
        let run = &mut episode.run;
        run.task = Some(self.task);
        if self.method != Method::React || run.has_reasoning() {
            run.format = RUN_FORMAT_V2.to_owned();
            run.method = Some(self.method);
        }
        if self.method.backs_off() {
            run.fewshot = self
                .loop_prompt
                .as_ref()
                .map(|prompt| prompt.fewshot().to_owned());
            run.cot_fewshot = self
                .answer_prompt
                .as_ref()
                .map(|prompt| prompt.fewshot().to_owned());
            run.max_steps = Some(self.max_steps);
            run.tools = self.grammar.tool_names().to_vec();
        }
        self.record_tools(run);
        episode
    }

    /// Stamps a run that had tools with what rebuilding its prompt needs beyond their names.
    fn record_tools(&self, run: &mut Run) {
        if !run.tools.is_empty() {
            run.tool_descriptions = self.tool_descriptions.clone();
        }
    }

    /// Trial `trial` of a question under Reflexion's protocol (`eval --trials`), after its failed
    /// trial `previous` (none before the first). Under a strategy other than `none`, the failed
    /// trial is reflected on first when the strategy asks (the reflection call is recorded in
    /// this trial's run), and the ReAct prompt is Reflexion's, showing what the failed trials
    /// left ([`reflexion::Memory`]). The run records the trial, the strategy and what its
    /// prompt showed, so a replay rebuilds that prompt without a model.
    pub async fn solve_trial(
        &self,
        llm: &dyn Llm,
        question: &str,
        trial: Trial<'_>,
        environment: &mut dyn Environment,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        let Trial {
            number,
            strategy,
            previous,
        } = trial;
        let mut episode = match strategy {
            Reflect::None => self.solve(llm, question, environment, on_event).await,
            _ => {
                self.reflect_then_act(llm, question, strategy, previous, environment, on_event)
                    .await
            }
        };
        let run = &mut episode.run;
        run.format = RUN_FORMAT_V2.to_owned();
        run.method = Some(self.method);
        run.trial = Some(number);
        self.record_tools(run);
        episode
    }

    /// A trial in Reflexion's prompt (its ReAct agent's, or its CoT agent's for `cot`), after
    /// the reflection its strategy asks for.
    async fn reflect_then_act(
        &self,
        llm: &dyn Llm,
        question: &str,
        strategy: Reflect,
        previous: Option<&Run>,
        environment: &mut dyn Environment,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        // Only `react` and `cot` reflect (`Solver::check_reflect` refuses the others before any call).
        let (fewshot, frame) = match self.method {
            Method::Cot => (self.answer_fewshot.as_ref(), reflexion::Frame::Cot),
            _ => (self.loop_fewshot.as_ref(), reflexion::Frame::React),
        };
        // invariant: react has loop examples and cot answer examples (`phase_formats`), and only they reflect
        let fewshot = fewshot.expect("a method that reflects has its examples");
        let mut reply = None;
        let mut reflection_reasoning = None;
        let mut usage = crate::record::run::Usage::default();
        if let Some(previous) =
            previous.filter(|previous| strategy.asks_reflection() && previous.stopped != Some(Stopped::Error))
        {
            match reflexion::ask_reflection(llm, previous, frame).await {
                Ok(completion) => {
                    usage.count(&completion);
                    reply = Some(completion.text);
                    reflection_reasoning = completion.reasoning;
                }
                Err(error) => {
                    // The trial ends in an error and carries the memory it was given forward
                    // unchanged: the reflections gathered so far stay for the trials after it.
                    let memory = reflexion::memory_after(Some(previous), strategy, None, self.profile);
                    let prompt =
                        reflexion::trial_prompt(fewshot, frame, &memory.block(question, strategy, frame));
                    let mut run = Run::new(question, self.profile);
                    run.model = Some(llm.model().to_owned());
                    run.api = llm.api();
                    run.fewshot = Some(prompt.fewshot().to_owned());
                    run.today = prompt.today().map(str::to_owned);
                    run.reflect = Some(strategy);
                    run.reflections = memory.reflections;
                    run.last_trial = memory.last_trial;
                    run.stopped = Some(Stopped::on_error(&error));
                    run.error = Some(format!(
                        "the reflection call failed: {}",
                        crate::agent::error_chain(&error)
                    ));
                    let scratchpad = prompt.scratchpad(question);
                    return Episode::new(run, scratchpad, prompt.text().len());
                }
            }
        }
        let memory = reflexion::memory_after(previous, strategy, reply.as_deref(), self.profile);
        let prompt = reflexion::trial_prompt(fewshot, frame, &memory.block(question, strategy, frame));
        let mut episode = match frame {
            reflexion::Frame::React => {
                Agent::new(llm, &prompt, &self.grammar, self.max_steps)
                    .run(question, environment, on_event)
                    .await
            }
            reflexion::Frame::Cot => {
                self.sample_phase(llm, question, &prompt, Sampling::Once, on_event)
                    .await
            }
        };
        let run = &mut episode.run;
        run.usage.add(&usage);
        run.reflect = Some(strategy);
        run.reflections = memory.reflections;
        run.last_trial = memory.last_trial;
        run.reflection = reply;
        run.reflection_reasoning = reflection_reasoning;
        episode
    }

    /// The same method with the prompt a recorded trial showed (`reflect`, and the reflections
    /// and last trial its run recorded): what `export` rebuilds a trial from. A method without a
    /// Reflexion frame (Act, Standard, CoT-SC, a backoff) keeps its prompts.
    pub fn in_trial_prompt(self, question: &str, strategy: Reflect, memory: &reflexion::Memory) -> Solver {
        let frame_of = |fewshot: &Option<Fewshot>| {
            let fewshot = fewshot.as_ref()?;
            let frame = reflexion::Frame::of(fewshot.format)?;
            Some(reflexion::trial_prompt(
                fewshot,
                frame,
                &memory.block(question, strategy, frame),
            ))
        };
        match self.method {
            Method::React => Solver {
                loop_prompt: frame_of(&self.loop_fewshot).or(self.loop_prompt.clone()),
                ..self
            },
            Method::Cot => Solver {
                answer_prompt: frame_of(&self.answer_fewshot).or(self.answer_prompt.clone()),
                ..self
            },
            _ => self,
        }
    }

    /// Whether `strategy` can run with this method: Reflexion has prompts for ReAct and for CoT
    /// (HotpotQA's examples, or the user's file); `none` goes with every method.
    pub fn check_reflect(&self, strategy: Reflect) -> Result<(), SolverError> {
        if strategy == Reflect::None || matches!(self.method, Method::React | Method::Cot) {
            return Ok(());
        }
        Err(SolverError::ReflectMethod {
            method: self.method,
            strategy,
        })
    }

    /// The ReAct or Act loop.
    async fn act(
        &self,
        llm: &dyn Llm,
        question: &str,
        environment: &mut dyn Environment,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        let prompt = self.loop_prompt.as_ref();
        // invariant: every method that acts has a loop prompt (`phase_formats`)
        let prompt = prompt.expect("a method that acts has a loop prompt");
        Agent::new(llm, prompt, &self.grammar, self.max_steps)
            .run(question, environment, on_event)
            .await
    }

    /// CoT or Standard: one completion at the model's temperature.
    async fn answer_once(
        &self,
        llm: &dyn Llm,
        question: &str,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        self.sample_phase(llm, question, self.sampled_prompt(), Sampling::Once, on_event)
            .await
    }

    /// CoT-SC: N CoT samples at the sampling temperature; the answer is the majority.
    async fn self_consistency(
        &self,
        llm: &dyn Llm,
        question: &str,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        self.sample_phase(
            llm,
            question,
            self.sampled_prompt(),
            Sampling::SelfConsistent,
            on_event,
        )
        .await
    }

    /// A sampling phase: its completions asked in one request (`n`); where the server sends fewer
    /// choices than asked, the rest are asked again concurrently, in requests of the size it did
    /// send, never more than asked in all. With a stopping rule (`--sc-stop`), CoT-SC asks them
    /// that way a batch at a time, and stops once the rule finds the vote decided. `Once` reads
    /// the one completion's answer; CoT-SC votes.
    async fn sample_phase(
        &self,
        llm: &dyn Llm,
        question: &str,
        prompt: &Prompt,
        sampling: Sampling,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        let mut episode = self.start_sampling(llm, question, prompt);
        let stop = [format!("\n{}:", prompt.input_label())];
        let kind = AnswerKind::of_task(answer::task_of_input(prompt.input_label()));
        let (wanted, temperature) = match sampling {
            Sampling::Once => (1, None),
            Sampling::SelfConsistent => (self.samples, Some(self.sample_temperature)),
        };
        let sc_stop = self.sc_stop.filter(|_| sampling == Sampling::SelfConsistent);
        // `cot-sc-then-react`'s vote decides whether it backs off: `exact` settles that too.
        let settle = if self.method == Method::CotScThenReact {
            sc_stop::Settle::MajorityAndBackoff
        } else {
            sc_stop::Settle::Majority
        };
        let batch = sc_stop.map_or(wanted, |sc_stop| sc_stop.batch);
        let mut asking = Asking {
            prompt: episode.scratchpad.text(),
            shared_prefix: prompt.text().len(),
            stop: &stop,
            temperature,
            n_requests: 0,
            usage: crate::record::run::Usage::default(),
        };
        let run = &mut episode.run;
        let mut failure: Option<LlmError> = None;
        let mut reason = None;
        loop {
            let count = batch.min(wanted - run.samples.len());
            let (completions, mut error) = asking.ask(llm, count).await;
            let came = completions.len();
            for (completion, request, reasoning, ending) in completions {
                if error.is_none() {
                    // A sample of only reasoning ends the run: cut by a cap too low for the model,
                    // or ended before any answer.
                    error = crate::llm::reasoning::check_cut(llm, &completion, reasoning.as_deref(), ending)
                        .err();
                }
                let read = read_completion(&completion, prompt.format(), kind);
                let index = (sampling == Sampling::SelfConsistent).then_some(run.samples.len() + 1);
                if let Some(reasoning) = &reasoning {
                    on_event(StepEvent::Reasoned {
                        number: index,
                        reasoning,
                    });
                }
                on_event(StepEvent::Sampled {
                    index,
                    thought: read.thought.as_deref(),
                    answer: read.answer.as_deref(),
                });
                run.samples.push(Sample {
                    completion,
                    answer: read.answer,
                    request,
                    reasoning,
                });
            }
            if error.is_some() {
                failure = error;
                break;
            }
            let Some(sc_stop) = sc_stop else { break };
            if came < count {
                // The server sent no more.
                reason = Some(ScStopReason::AllAsked);
                break;
            }
            if let Some(decided) = sc_stop::decide(&sc_stop, &run.samples, wanted, settle) {
                reason = Some(decided);
                break;
            }
        }
        run.usage.add(&asking.usage);
        if let Some(stop) = sc_stop {
            run.sc_stop = Some(ScStopRecord {
                stop,
                samples: wanted,
                asked: run.samples.len(),
                reason,
            });
        }
        if let Some(error) = failure {
            fail(run, &error);
            return episode;
        }
        // The vote is over the samples asked when a rule stopped them early, else over N.
        let n_voted = match reason {
            Some(ScStopReason::Decided | ScStopReason::Confident) => run.samples.len(),
            _ => self.samples,
        };
        let answer = match sampling {
            Sampling::Once => run.samples.first().and_then(|sample| sample.answer.clone()),
            Sampling::SelfConsistent => {
                let vote = majority(&run.samples, n_voted, self.sample_temperature);
                on_event(StepEvent::Voted {
                    answer: vote.answer.as_deref(),
                    votes: vote.votes,
                    samples: vote.samples,
                });
                let answer = vote.answer.clone();
                run.vote = Some(vote);
                answer
            }
        };
        run.stopped = Some(if answer.is_some() {
            Stopped::Finish
        } else {
            Stopped::NoAnswer
        });
        run.answer = answer;
        if let Some(first) = run.samples.first() {
            let first = first.completion.clone();
            episode.scratchpad.push_text(&first);
        }
        episode
    }

    /// The CoT or Standard prompt of a method that samples.
    fn sampled_prompt(&self) -> &Prompt {
        let prompt = self.answer_prompt.as_ref();
        // invariant: every method that samples has an answer prompt (`phase_formats`)
        prompt.expect("a method that samples has an answer prompt")
    }

    fn start_sampling(&self, llm: &dyn Llm, question: &str, prompt: &Prompt) -> Episode {
        let mut run = Run::new(question, self.profile);
        run.model = Some(llm.model().to_owned());
        run.api = llm.api();
        run.fewshot = Some(prompt.fewshot().to_owned());
        run.today = prompt.today().map(str::to_owned);
        let scratchpad = Scratchpad::new(prompt.answer_request(question));
        Episode::new(run, scratchpad, prompt.text().len())
    }

    /// A backoff: the first phase's episode kept when `reason` is `None`, else the second phase
    /// run and both recorded in one run (the steps of one, the samples and vote of the other;
    /// usage summed; the answer and stop the second's).
    #[allow(clippy::too_many_arguments)]
    async fn back_off(
        &self,
        first: Episode,
        reason: Option<BackoffReason>,
        from: Method,
        to: Method,
        llm: &dyn Llm,
        question: &str,
        environment: &mut dyn Environment,
        on_event: &mut (dyn FnMut(StepEvent<'_>) + Send),
    ) -> Episode {
        let Some(reason) = reason else {
            let mut first = first;
            if first.run.stopped != Some(Stopped::Error) {
                first.run.answered_by = Some(from);
            }
            return first;
        };
        on_event(StepEvent::BackedOff {
            from: from.as_str(),
            to: to.as_str(),
            reason: reason.describe(),
        });
        let second = match to {
            Method::CotSc => self.self_consistency(llm, question, on_event).await,
            _ => self.act(llm, question, environment, on_event).await,
        };
        let mut run = first.run;
        let then = second.run.clone();
        run.steps.extend(then.steps);
        run.samples.extend(then.samples);
        run.vote = run.vote.or(then.vote);
        run.sc_stop = run.sc_stop.or(then.sc_stop);
        run.usage.add(&then.usage);
        run.answer = then.answer;
        run.stopped = then.stopped;
        run.error = then.error;
        run.backoff = Some(Backoff { from, to, reason });
        if run.stopped != Some(Stopped::Error) {
            run.answered_by = Some(to);
        }
        second.with_run(run)
    }
}

/// How a sampling phase samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sampling {
    /// One completion at the model's own temperature, its answer the run's (CoT, Standard).
    Once,
    /// N completions at the sampling temperature, the majority the run's (CoT-SC).
    SelfConsistent,
}

/// A sampled completion, the 1-based request it came from, its reasoning and how it ended.
type Sampled = (String, usize, Option<String>, crate::llm::reasoning::Ending);

/// The requests of one sampling phase: what each asks besides `n`, and what they cost.
struct Asking<'a> {
    prompt: &'a str,
    /// The few-shot prompt's length ([`crate::llm::LlmRequest::shared_prefix`]).
    shared_prefix: usize,
    stop: &'a [String],
    temperature: Option<f64>,
    /// Requests made so far: the samples of the next one record its number.
    n_requests: usize,
    usage: crate::record::run::Usage,
}

impl Asking<'_> {
    /// `count` completions, each with the 1-based request it came from: one request for all,
    /// then, where the server sent fewer, the rest concurrently in requests of the size it did
    /// send, until they are all there or a round brings none; and the first failure.
    async fn ask(&mut self, llm: &dyn Llm, count: usize) -> (Vec<Sampled>, Option<LlmError>) {
        let mut completions: Vec<Sampled> = Vec::new();
        let mut failure: Option<LlmError> = None;
        let first = llm.sample(self.request(count)).await;
        self.take(first, count, &mut completions, &mut failure);
        // The size of request the server honours: what it sent for all of them.
        let per_request = completions.len().max(1);
        while failure.is_none() && completions.len() < count {
            let missing = count - completions.len();
            let sizes: Vec<usize> = (0..missing.div_ceil(per_request))
                .map(|idx| per_request.min(missing - idx * per_request))
                .collect();
            let before = completions.len();
            let replies = join_all(sizes.into_iter().map(|n| llm.sample(self.request(n)))).await;
            for reply in replies {
                self.take(reply, count, &mut completions, &mut failure);
            }
            if completions.len() == before {
                break;
            }
        }
        (completions, failure)
    }

    fn request(&self, n: usize) -> SampleRequest<'_> {
        SampleRequest {
            prompt: self.prompt,
            shared_prefix: self.shared_prefix,
            stop: self.stop,
            n,
            temperature: self.temperature,
        }
    }

    /// Counts one reply: its completions kept up to `count` in all, or its failure (the first
    /// one kept).
    fn take(
        &mut self,
        reply: Result<Samples, LlmError>,
        count: usize,
        completions: &mut Vec<Sampled>,
        failure: &mut Option<LlmError>,
    ) {
        self.n_requests += 1;
        match reply {
            Ok(samples) => {
                self.usage.count_call(samples.usage);
                let room = count.saturating_sub(completions.len());
                let request = self.n_requests;
                let mut reasoning = samples.reasoning.into_iter();
                let mut endings = samples.endings.into_iter();
                completions.extend(samples.texts.into_iter().take(room).map(|text| {
                    (
                        text,
                        request,
                        reasoning.next().flatten(),
                        endings.next().unwrap_or_default(),
                    )
                }));
            }
            Err(error) => {
                failure.get_or_insert(error);
            }
        }
    }
}

/// The formats of a method's loop phase and answer phase, when it has them.
fn phase_formats(method: Method) -> (Option<Format>, Option<Format>) {
    match method {
        Method::React => (Some(Format::React), None),
        Method::Act => (Some(Format::Act), None),
        Method::Cot | Method::CotSc => (None, Some(Format::Cot)),
        Method::Standard => (None, Some(Format::Standard)),
        Method::ReactThenCotSc | Method::CotScThenReact => (Some(Format::React), Some(Format::Cot)),
    }
}

/// The examples of each phase whose format is given: bundled, or the user's file in that format.
fn pick_examples(
    method: Method,
    examples: &Examples,
    profile: Profile,
    formats: [Option<Format>; 2],
) -> Result<Vec<Option<Fewshot>>, SolverError> {
    let needed_by = format!("`--method {method}`");
    match examples {
        Examples::Bundled(task) => Ok(formats
            .iter()
            .map(|format| format.map(|format| Fewshot::bundled(*task, format, profile)))
            .collect()),
        Examples::Files(files) if files.len() == 1 && formats.iter().flatten().count() == 1 => {
            let format = formats.iter().flatten().next().copied();
            let fewshot = files[0].clone();
            formats
                .iter()
                .map(|phase| match (phase, format) {
                    (Some(_), Some(format)) => Ok(Some(fewshot.clone().in_format(format, &needed_by)?)),
                    _ => Ok(None),
                })
                .collect()
        }
        Examples::Files(files) => {
            let wanted: Vec<Format> = formats.iter().flatten().copied().collect();
            let per_phase = || SolverError::FewshotPerPhase {
                method,
                phases: format!("{} phases", wanted.len()),
                formats: wanted
                    .iter()
                    .map(|format| format.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            };
            if files.len() != wanted.len() {
                return Err(per_phase());
            }
            formats
                .iter()
                .map(|phase| {
                    let Some(format) = phase else { return Ok(None) };
                    files
                        .iter()
                        .find(|file| file.format == *format)
                        .cloned()
                        .map(Some)
                        .ok_or_else(per_phase)
                })
                .collect()
        }
    }
}

/// Whether `stop` can stop `method`'s sampling: a method that votes, a batch of at least one, and
/// for `beta` a confidence strictly between 1/2 (where a tie would stop) and 1 (never reached).
fn check_sc_stop(method: Method, stop: &ScStop) -> Result<(), SolverError> {
    if !method.samples() {
        return Err(SolverError::ScStopMethod { method });
    }
    if stop.batch == 0 {
        return Err(SolverError::NoScBatch);
    }
    if stop.rule == crate::base::method::StopRule::Beta && !(stop.confidence > 0.5 && stop.confidence < 1.0) {
        return Err(SolverError::ScConfidence {
            confidence: stop.confidence,
        });
    }
    Ok(())
}

fn fail(run: &mut Run, error: &(dyn std::error::Error + 'static)) {
    run.stopped = Some(Stopped::on_error(error));
    run.error = Some(crate::agent::error_chain(error));
}
