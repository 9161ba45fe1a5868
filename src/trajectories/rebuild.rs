//! A recorded run rebuilt as its model saw it: the method set up again from what the run recorded
//! ([`run_solver`]), the run replayed through it with its recorded completions and observations,
//! and the scratchpad (or, for `--api tools`, the conversation) cut into the turns the model read
//! and wrote — byte for byte, never written out again by hand.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use crate::agent::environment::Recording;
use crate::agent::fewshot::{Fewshot, FewshotError, Format};
use crate::agent::prompt::{Prompt, PromptOptions};
use crate::agent::scratchpad::Scratchpad;
use crate::agent::{Agent, DEFAULT_MAX_STEPS, Episode, Repeats};
use crate::base::digest::digest;
use crate::base::method::Method;
use crate::base::method::Reflect;
use crate::base::metrics::AnswerScore;
use crate::base::task::Task;
use crate::llm::{
    Completion, ConverseRequest, FunctionSpec, Llm, LlmError, LlmRequest, Message, ReplayLlm, Reply,
    SampleRequest, Samples, openai::Api,
};
use crate::record::run::{Run, RunStep, Stopped, ToolDescription};
use crate::solver::reflexion::Memory;
use crate::solver::{DEFAULT_SAMPLE_TEMPERATURE, Examples, MethodConfig, Solver, SolverError};
use crate::tools::{Tool, ToolError, Toolbox};

/// Why a run cannot be rebuilt as its model saw it.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    #[error("its few-shot examples cannot be read again")]
    Fewshot(#[from] FewshotError),
    #[error("its few-shot file `{path}` changed since the run (digest {found}, the run recorded {recorded})")]
    FewshotChanged {
        path: String,
        recorded: String,
        found: String,
    },
    #[error(
        "it used the tool `{name}`, whose prompt line the run does not record (a run made before runs recorded their tools' descriptions: only `Calculate` and `WebSearch` are rebuilt from their name)"
    )]
    UnknownTool { name: String },
    #[error("its method cannot be set up again")]
    Method(#[from] SolverError),
    #[error("it does not replay as recorded: {difference}")]
    Differs { difference: String },
}

/// Who wrote a turn: the model, or the task and the environment (the question, an observation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The question line and each observation.
    Input,
    /// A step the model wrote (`Thought n: …\nAction n: …`), or a CoT or Standard completion
    /// with the label it continued (`Thought: …\nAnswer: …`).
    Model,
}

/// One turn of a trajectory: its text as the scratchpad holds it, without the newline that ends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub speaker: Speaker,
    pub text: String,
    /// The model's thinking before a model turn, when it sent any (`export --reasoning keep`).
    pub reasoning: Option<String>,
}

/// A `tools` run's conversation as the model saw it: every message of its last request and its
/// last reply, and the functions offered.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsConversation {
    pub messages: Vec<Message>,
    pub functions: Vec<FunctionSpec>,
}

/// One trajectory of a run, ready to be written as training data.
#[derive(Debug, Clone)]
pub struct Example {
    /// How the trajectory lays out a solution (ReAct, Act, CoT, Standard).
    pub format: Format,
    /// The prompt before the question: instruction and few-shot examples, as sent.
    pub prompt: String,
    /// The instruction alone: the prompt up to its `Here are some examples.` line; empty when
    /// the examples carry their own (FEVER) or there is none (the `paper` profile's CoT).
    pub instruction: String,
    /// The question line, then the model's turns and the observations, alternating.
    pub turns: Vec<Turn>,
    /// A `tools` run's conversation (its system message holds the examples).
    pub conversation: Option<ToolsConversation>,
    /// Whether the trajectory ended with an answer (`Finish`, an answer line).
    pub finished: bool,
    /// Its answer against the run's gold, when there is one.
    pub score: Option<AnswerScore>,
}

impl Example {
    /// The trajectory as the scratchpad holds it: the question line and every turn, each ending
    /// with its newline (the few-shot format of its method).
    pub fn trajectory(&self) -> String {
        let mut text = String::new();
        for turn in &self.turns {
            text.push_str(&turn.text);
            text.push('\n');
        }
        text
    }
}

/// Where the instruction of a prompt ends: its `Here are some examples.` line (Reflexion's
/// prompts: `Here are some examples:`).
const EXAMPLES_LINES: [&str; 2] = ["Here are some examples.", "Here are some examples:"];
/// Where the examples of Reflexion's trial prompt end; what it shows of the failed trials follows.
const END_OF_EXAMPLES: &str = "(END OF EXAMPLES)\n";

/// The instruction of a prompt or a tools system message: what comes before its examples, and in
/// a Reflexion trial's prompt the failed trial and the reflections it shows after them.
fn instruction_of(prompt: &str) -> String {
    let Some(at) = EXAMPLES_LINES.iter().find_map(|line| prompt.find(line)) else {
        return String::new();
    };
    let mut instruction = prompt[..at].to_owned();
    if let Some(end) = prompt.find(END_OF_EXAMPLES) {
        let shown = prompt[end + END_OF_EXAMPLES.len()..].trim_matches('\n');
        if !shown.is_empty() {
            instruction.push_str(shown);
            instruction.push('\n');
        }
    }
    instruction
}

/// The method a run recorded, set up again as it ran: its profile, its examples (bundled, or
/// its files, whose digest is checked when the run recorded one), its tools (their prompt lines),
/// its step budget, CoT-SC's N and temperature. The prompts of its phases are the bytes its model
/// saw. This is the one place a run's prompt is built from its record; what else a prompt will
/// show (a trial's reflections) belongs here.
/// `overrides` are what `replay --profile` and `--max-steps` change; `export` passes none.
pub fn run_solver(run: &Run, overrides: &RunOverrides) -> Result<(Solver, usize), RebuildError> {
    let profile = overrides.profile.unwrap_or(run.profile);
    let (names, task) = recorded_examples(run);
    let files: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| Task::named(name).is_none())
        .collect();
    let examples = if files.is_empty() {
        Examples::Bundled(task)
    } else {
        let mut fewshots = Vec::new();
        for path in files {
            if let (Some(source), ChangedExamples::Refuse) = (&run.fewshot_from, overrides.changed_examples) {
                let bytes = std::fs::read(path).map_err(|source| FewshotError::Read {
                    path: path.into(),
                    source,
                })?;
                let found = digest(&bytes);
                if found != source.digest {
                    return Err(RebuildError::FewshotChanged {
                        path: path.to_owned(),
                        recorded: source.digest.clone(),
                        found,
                    });
                }
            }
            fewshots.push(Fewshot::from_file(Path::new(path))?);
        }
        Examples::Files(fewshots)
    };
    let toolbox = recorded_toolbox(run)?;
    let config = recorded_method(run);
    // The bundled set's task is the run's; a file's examples say theirs (one rule).
    let task = examples.task();
    let max_steps = overrides.max_steps.or(run.max_steps).unwrap_or_else(|| {
        if run.method() == Method::React {
            DEFAULT_MAX_STEPS
        } else {
            config.max_steps(None, task)
        }
    });
    let solver = Solver::new(
        &config,
        profile,
        &examples,
        &toolbox,
        &PromptOptions {
            today: run.today.clone(),
        },
        max_steps,
    )?;
    // A trial under a strategy other than `none` saw Reflexion's prompt, with what it recorded
    // of the failed trials before it.
    let solver = match run.reflect.filter(|strategy| *strategy != Reflect::None) {
        Some(strategy) => solver.in_trial_prompt(&run.question, strategy, &Memory::of_run(run)),
        None => solver,
    };
    Ok((solver, max_steps))
}

/// What a replay changes of a run's setup: its profile (`replay --profile`) and its step budget
/// (`replay --max-steps`); nothing by default.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOverrides {
    pub profile: Option<crate::base::profile::Profile>,
    pub max_steps: Option<usize>,
    pub changed_examples: ChangedExamples,
}

/// What a drawn examples file (`--fewshot-from`) whose digest is not the run's does: `export`
/// refuses it (its prompt would not be the run's); `replay`, whose answers come from the
/// recording, goes on and says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChangedExamples {
    #[default]
    Refuse,
    Accept,
}

/// The examples a run names (`fewshot`, and a backoff's `cot_fewshot`) and its task
/// ([`Run::task`]: recorded, or derived once for older runs).
pub fn recorded_examples(run: &Run) -> (Vec<&str>, Task) {
    let names: Vec<&str> = [run.fewshot.as_deref(), run.cot_fewshot.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    (names, run.task())
}

/// The method a run recorded and how it sampled: N and the temperature of its vote (N: its
/// samples when it has no vote, at least 1), and its stopping rule with the N it had.
pub fn recorded_method(run: &Run) -> MethodConfig {
    MethodConfig {
        method: run.method(),
        samples: match (&run.sc_stop, &run.vote) {
            (Some(record), _) => record.samples.max(1),
            (None, Some(vote)) => vote.samples.max(1),
            (None, None) => run.samples.len().max(1),
        },
        sc_stop: run.sc_stop.map(|record| record.stop),
        sample_temperature: run
            .vote
            .as_ref()
            .map_or(DEFAULT_SAMPLE_TEMPERATURE, |vote| vote.temperature),
    }
}

/// The tools a run registered, for their prompt lines (never called): each as the run recorded
/// its description, else the built-in tool of its name.
fn recorded_toolbox(run: &Run) -> Result<Toolbox, RebuildError> {
    let mut toolbox = Toolbox::default();
    for name in &run.tools {
        let recorded = run
            .tool_descriptions
            .iter()
            .find(|recorded| recorded.name == *name);
        let tool: Arc<dyn Tool> = match (recorded, crate::tools::recorded_builtin(name)) {
            (Some(recorded), _) => Arc::new(RecordedTool(recorded.clone())),
            (None, Some(builtin)) => builtin,
            (None, None) => return Err(RebuildError::UnknownTool { name: name.clone() }),
        };
        toolbox.register(tool);
    }
    Ok(toolbox)
}

/// A tool as a run recorded it: its prompt line and examples, nothing to call.
struct RecordedTool(ToolDescription);

/// A rebuild calls no tool: the run's observations are replayed.
#[derive(Debug, thiserror::Error)]
#[error("a rebuilt run calls no tool")]
struct NotCalled;

impl Tool for RecordedTool {
    fn name(&self) -> &str {
        &self.0.name
    }

    fn description(&self) -> &str {
        &self.0.description
    }

    fn examples(&self) -> Option<&str> {
        self.0.examples.as_deref()
    }

    fn call<'a>(&'a self, _argument: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            Err(ToolError {
                tool: self.0.name.clone(),
                source: Box::new(NotCalled),
            })
        })
    }
}

/// The recorded model, noting the messages and functions of the last tools request.
struct Captured {
    llm: ReplayLlm,
    last: Mutex<Option<ToolsConversation>>,
}

impl Llm for Captured {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        self.llm.complete(request)
    }

    fn sample<'a>(&'a self, request: SampleRequest<'a>) -> BoxFuture<'a, Result<Samples, LlmError>> {
        self.llm.sample(request)
    }

    fn converse<'a>(&'a self, request: ConverseRequest<'a>) -> BoxFuture<'a, Result<Reply, LlmError>> {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(ToolsConversation {
            messages: request.messages.to_vec(),
            functions: request.functions.to_vec(),
        });
        self.llm.converse(request)
    }

    fn model(&self) -> &str {
        self.llm.model()
    }

    fn api(&self) -> Option<Api> {
        self.llm.api()
    }
}

/// The trajectories of a recorded run as its model saw and wrote them: one for a run that acted
/// (ReAct, Act, a backoff answered by ReAct), one per sample for a run that sampled (CoT,
/// Standard, CoT-SC, a backoff answered by CoT-SC). The run is replayed through the method
/// [`run_solver`] sets up; a replay that ends otherwise than the recording is refused.
pub async fn rebuild(recorded: &Run) -> Result<Vec<Example>, RebuildError> {
    let (solver, max_steps) = run_solver(recorded, &RunOverrides::default())?;
    let model = recorded.model.clone().unwrap_or_else(|| "replay".to_owned());
    let replay = match recorded.api {
        Some(api) if api.calls_functions() => {
            ReplayLlm::with_replies(model, recorded.replies()).recorded_api(Some(api))
        }
        api => ReplayLlm::new(model, recorded.completions())
            .with_reasoning(recorded.step_reasoning())
            .with_past_stop(recorded.step_past_stop())
            .recorded_api(api)
            .with_samples(recorded.sample_requests())
            .with_sample_reasoning(recorded.sample_reasoning()),
    }
    .with_ending(recorded.reply_ending());
    let llm = Captured {
        llm: replay,
        last: Mutex::new(None),
    };
    let mut environment = Recording::new(recorded.observations(), solver.grammar().clone(), None);
    let question = recorded.question.as_str();
    let episode = if recorded.method() == Method::React {
        // As `replay` does: a recording that did not stop for repeating itself replays to its end.
        let Some(prompt) = solver.loop_prompt() else {
            return Err(differs("ReAct has no prompt"));
        };
        let agent = Agent {
            repeats: Repeats::replaying(recorded, recorded.profile),
            ..Agent::new(&llm, prompt, solver.grammar(), max_steps)
        };
        agent.run(question, &mut environment, &mut |_| {}).await
    } else {
        solver.solve(&llm, question, &mut environment, &mut |_| {}).await
    };
    check_same(recorded, &episode.run)?;
    let samples_answered = match recorded.method() {
        Method::Cot | Method::Standard | Method::CotSc => true,
        Method::React | Method::Act => false,
        Method::ReactThenCotSc | Method::CotScThenReact => {
            let phase = recorded
                .answered_by
                .or(recorded.backoff.map(|backoff| backoff.to))
                .unwrap_or(match recorded.method() {
                    Method::ReactThenCotSc => Method::React,
                    _ => Method::CotSc,
                });
            phase == Method::CotSc
        }
    };
    let score = |answer: Option<&str>| {
        recorded
            .gold
            .as_deref()
            .map(|gold| AnswerScore::new(answer.unwrap_or(""), gold))
    };
    if samples_answered {
        let Some(prompt) = solver.answer_prompt() else {
            return Err(differs("the method has no answer prompt"));
        };
        return sample_examples(prompt, question, &episode, score);
    }
    let Some(prompt) = solver.loop_prompt() else {
        return Err(differs("the method has no loop prompt"));
    };
    let conversation = llm.last.into_inner().unwrap_or_else(PoisonError::into_inner);
    let conversation = match (conversation, prompt.tools()) {
        (Some(mut conversation), Some(tools)) => {
            let functions = tools.functions.including(solver.grammar().tool_names());
            if let Some(last) = last_reply_echo(&episode.run.steps, &functions) {
                conversation.messages.push(last);
            }
            Some(conversation)
        }
        _ => None,
    };
    let turns = step_turns(prompt, question, &episode, conversation.is_some())?;
    let (prompt_text, instruction) = match &conversation {
        Some(conversation) => {
            let system = conversation
                .messages
                .iter()
                .find_map(|message| match message {
                    Message::System(text) => Some(text.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            (system.clone(), instruction_of(&system))
        }
        None => (prompt.text().to_owned(), instruction_of(prompt.text())),
    };
    Ok(vec![Example {
        format: prompt.format(),
        prompt: prompt_text,
        instruction,
        turns,
        conversation,
        finished: episode.run.stopped == Some(Stopped::Finish),
        score: score(episode.run.answer.as_deref()),
    }])
}

fn differs(difference: &str) -> RebuildError {
    RebuildError::Differs {
        difference: difference.to_owned(),
    }
}

/// Refuses a replay that ended otherwise than its recording (a hand-written run that records
/// no end is what its replay makes of it, as `replay` takes it).
fn check_same(recorded: &Run, replayed: &Run) -> Result<(), RebuildError> {
    let same = recorded.stopped.is_none()
        || recorded.answer == replayed.answer
            && recorded.stopped == replayed.stopped
            && recorded.steps.len() == replayed.steps.len()
            && recorded.samples.len() == replayed.samples.len();
    if same {
        return Ok(());
    }
    Err(RebuildError::Differs {
        difference: format!(
            "replayed to {:?} ({}, {} steps, {} samples), recorded {:?} ({}, {} steps, {} samples)",
            replayed.answer.as_deref().unwrap_or(""),
            replayed.stopped.map_or("no stop", Stopped::as_str),
            replayed.steps.len(),
            replayed.samples.len(),
            recorded.answer.as_deref().unwrap_or(""),
            recorded.stopped.map_or("no stop", Stopped::as_str),
            recorded.steps.len(),
            recorded.samples.len()
        ),
    })
}

/// The assistant message that echoes a tools run's last reply, as the agent echoes it: every
/// reply read in order through one set of used call ids, the last one's echo kept.
fn last_reply_echo(steps: &[RunStep], functions: &crate::agent::calls::FunctionSet) -> Option<Message> {
    let mut used_ids = HashSet::new();
    let mut echo = None;
    for step in steps {
        for reply in &step.replies {
            let read = functions.read_reply(reply, step.n, &mut used_ids);
            echo = Some(read.echo(reply));
        }
    }
    echo
}

/// The turns of a run that acted: the question line, then each step's model part and
/// observation, cut from the replayed scratchpad — each piece checked to be the bytes there.
fn step_turns(
    prompt: &Prompt,
    question: &str,
    episode: &Episode,
    conversed: bool,
) -> Result<Vec<Turn>, RebuildError> {
    let opening = prompt.scratchpad(question);
    let question_line = &opening.text()[prompt.text().len()..];
    let text = episode.scratchpad.text();
    // A text run's scratchpad starts with the prompt; a tools run's with the question line.
    let mut at = if conversed { 0 } else { prompt.text().len() };
    if !text[at..].starts_with(question_line) {
        return Err(differs("the scratchpad does not start with the question"));
    }
    let mut turns = vec![turn(Speaker::Input, question_line)];
    at += question_line.len();
    for step in &episode.run.steps {
        // A step the model never finished (the error that ended the run) is not in the scratchpad.
        let (Some(action), thought) = (step.action.as_deref(), step.thought.as_deref()) else {
            break;
        };
        let mut model = Scratchpad::new(String::new());
        let mut whole = Scratchpad::new(String::new());
        match (prompt.format(), conversed) {
            (Format::Act, false) => {
                model.push_act_step(step.n, action, None);
                whole.push_act_step(step.n, action, step.observation.as_deref());
            }
            _ => {
                let thought = thought.unwrap_or("");
                model.push_last_step(step.n, thought, action);
                match step.observation.as_deref() {
                    Some(observation) => whole.push_step(step.n, thought, action, observation),
                    None => whole.push_last_step(step.n, thought, action),
                }
            }
        }
        if !text[at..].starts_with(whole.text()) || !whole.text().starts_with(model.text()) {
            return Err(differs(&format!("step {} is not the scratchpad's", step.n)));
        }
        turns.push(model_turn(model.text(), step.reasoning.as_ref()));
        if whole.text().len() > model.text().len() {
            turns.push(turn(Speaker::Input, &whole.text()[model.text().len()..]));
        }
        at += whole.text().len();
    }
    if at != text.len() {
        return Err(differs("the scratchpad holds more than its steps"));
    }
    Ok(turns)
}

fn turn(speaker: Speaker, text: &str) -> Turn {
    Turn {
        speaker,
        text: text.strip_suffix('\n').unwrap_or(text).to_owned(),
        reasoning: None,
    }
}

/// A model turn, with the thinking before it.
fn model_turn(text: &str, reasoning: Option<&String>) -> Turn {
    Turn {
        reasoning: reasoning.cloned(),
        ..turn(Speaker::Model, text)
    }
}

/// The examples of a run that sampled: one per sample, each the question line and the label the
/// model continued (`Thought:`, `Answer:`) with the sample's text — the first one checked to be
/// the replayed scratchpad's bytes.
fn sample_examples(
    prompt: &Prompt,
    question: &str,
    episode: &Episode,
    score: impl Fn(Option<&str>) -> Option<AnswerScore>,
) -> Result<Vec<Example>, RebuildError> {
    let opening = prompt.scratchpad(question);
    let request = prompt.answer_request(question);
    let question_line = &opening.text()[prompt.text().len()..];
    let label = &request[opening.text().len()..];
    let mut examples = Vec::new();
    for (idx, sample) in episode.run.samples.iter().enumerate() {
        let written = format!("{label}{}", sample.completion);
        if idx == 0 && episode.scratchpad.text() != format!("{request}{}", sample.completion) {
            return Err(differs("the first sample is not the scratchpad's"));
        }
        examples.push(Example {
            format: prompt.format(),
            prompt: prompt.text().to_owned(),
            instruction: instruction_of(prompt.text()),
            turns: vec![
                turn(Speaker::Input, question_line),
                model_turn(&written, sample.reasoning.as_ref()),
            ],
            conversation: None,
            finished: sample.answer.is_some(),
            score: score(sample.answer.as_deref()),
        });
    }
    Ok(examples)
}
