//! `replay`: re-runs recorded runs offline — recorded completions as the model, recorded observations
//! as the world. A step without a recorded observation is observed only by a docstore the caller
//! gives (`--docstore`), or by a tool it gives; else it ends its run in an error naming the step.
//! Reads run files (one run each), JSON Lines of runs (an `eval` results file) and directories of
//! both, recursively.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use futures::future::BoxFuture;

use crate::agent::action::{Action, ActionError, ActionGrammar};
use crate::agent::environment::{Environment, EnvironmentError, Inspected, Recording};
use crate::agent::trace::TracePrinter;
use crate::agent::{Agent, Episode, Repeats};
use crate::analysis::attempts::{self, Seen};
use crate::analysis::prices::PriceList;
use crate::analysis::summary::{Incomplete, Spend, Spent};
use crate::base::method::Method;
use crate::base::method::Reflect;
use crate::base::profile::Profile;
use crate::docstore::DocstoreInfo;
use crate::eval::abbreviated;
use crate::llm::ReplayLlm;
use crate::record::files::{FilesError, Found, RunsError, Wanted, read_runs, recorded_files};
use crate::record::recorded::{RecordedRun, RunPlace};
use crate::record::run::{Attempt, Run, Stopped, Usage};
use crate::solver::Solver;
use crate::solver::reflexion::{Memory, memory_after};
use crate::tools::Toolbox;
use crate::trajectories::rebuild::{ChangedExamples, RebuildError, RunOverrides, run_solver};

/// What `replay` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Each run's answer on a line of its own.
    Text,
    /// Each run as a JSON line, then a summary line when runs carry gold answers.
    Json,
}

/// How to replay.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// Run files, JSON Lines files of runs, or directories of them.
    pub paths: Vec<PathBuf>,
    pub output: Output,
    /// Replay under this profile instead of the one each run recorded.
    pub profile: Option<Profile>,
    /// Replay with this step budget instead of the one each run recorded.
    pub max_steps: Option<usize>,
    /// The docstore the live environment observes unrecorded steps with, when one was given. When
    /// it is a frozen one (it has a snapshot), every run must have been recorded against it.
    pub docstore: Option<DocstoreInfo>,
    /// `--prices`: the summary gives what the replayed runs' tokens cost (the tokens their
    /// recording counted, so the cost of the evaluation that recorded them).
    pub prices: Option<PriceList>,
}

/// Opens a live environment for steps a run file has no observation for; `None` when nothing
/// may observe them (no docstore, no tool given): such a step ends its run in an error.
pub type LiveEnvironment<'a> = dyn Fn(&Run, &ActionGrammar) -> Option<Box<dyn Environment>> + Sync + 'a;

/// What a replay of many runs added up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplaySummary {
    pub n_runs: usize,
    pub n_answered: usize,
    /// Runs whose replayed answer differs from the answer they recorded.
    pub n_changed: usize,
    /// Runs that ended in an error their recording did not end in (a step with no recorded
    /// observation and no docstore, ...).
    pub n_errors: usize,
    pub n_scored: usize,
    /// Of the `n_scored` the headline counts, the runs that ended in an error (recorded so, or in
    /// this replay), each scored zero: the headline is incomplete ([`Incomplete`]).
    pub n_scored_errors: usize,
    /// Files found in a directory that could not be replayed (not runs), each named on stderr.
    pub n_skipped_files: usize,
    pub em: f64,
    pub f1: f64,
    pub usage: Usage,
    /// The runs' tokens by kind and, with `--prices`, their cost.
    pub spend: Spend,
}

impl ReplaySummary {
    /// 2 when a run ended in an error, 1 when none answered, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.n_errors > 0 {
            2
        } else if self.n_answered == 0 {
            1
        } else {
            0
        }
    }
}

/// Replays one run. Its identity (id, gold) carries over; the steps, answer and usage are replayed.
pub async fn replay_run(
    recorded: &Run,
    profile: Option<Profile>,
    max_steps: Option<usize>,
    live: &LiveEnvironment<'_>,
    trace: &mut TracePrinter,
) -> Episode {
    replay_recorded(recorded, profile, max_steps, live, trace).await.0
}

/// [`replay_run`], and the step that ended the run for want of a recorded observation, if one did.
async fn replay_recorded(
    recorded: &Run,
    profile: Option<Profile>,
    max_steps: Option<usize>,
    live: &LiveEnvironment<'_>,
    trace: &mut TracePrinter,
) -> (Episode, Option<usize>) {
    // The run's setup, rebuilt as `export` rebuilds it: a few-shot file that is gone, or a tool
    // whose prompt line the run does not record, ends the replay of that run in an error.
    let overrides = RunOverrides {
        profile,
        max_steps,
        // Its answers are the recording's: a changed examples file is noted (`changed_fewshot`).
        changed_examples: ChangedExamples::Accept,
    };
    let (solver, max_steps) = match run_solver(recorded, &overrides) {
        Ok(rebuilt) => rebuilt,
        Err(error) => return (not_rebuilt(recorded, &error), None),
    };
    if recorded.method() != Method::React {
        return replay_method(recorded, solver, live, trace).await;
    }
    let profile = profile.unwrap_or(recorded.profile);
    let grammar = ActionGrammar::new(profile, recorded.tools.iter().cloned());
    let Some(prompt) = solver.loop_prompt() else {
        // invariant: `run_solver` sets a `react` run up as ReAct, whose phase loops
        unreachable!("a ReAct solver has a loop prompt")
    };
    let model = recorded.model.clone().unwrap_or_else(|| "replay".to_owned());
    let llm = match recorded.api {
        // The assistant messages as the server sent them: the agent reads their calls again.
        Some(api) if api.calls_functions() => {
            ReplayLlm::with_replies(model, recorded.replies()).recorded_api(Some(api))
        }
        api => ReplayLlm::new(model, recorded.completions())
            .with_reasoning(recorded.step_reasoning())
            .with_past_stop(recorded.step_past_stop())
            .recorded_api(api),
    }
    .with_generation(recorded_generation(recorded))
    .with_ending(recorded.reply_ending());
    let mut unrecorded = None;
    let recording = Recording::new(recorded.observations(), grammar.clone(), live(recorded, &grammar));
    let mut environment = Inspected::new(recording, |error: &EnvironmentError| {
        if let EnvironmentError::NotRecorded { step } = error {
            unrecorded = Some(*step);
        }
    });
    let agent = Agent {
        // tests/it/replay.rs checks both ways of `Repeats::replaying`.
        repeats: Repeats::replaying(recorded, profile),
        ..Agent::new(&llm, prompt, &grammar, max_steps)
    };
    if !trace.is_silent() {
        trace.header("Question:", &recorded.question);
        trace_memory(trace, recorded);
    }
    let mut episode = agent
        .run(&recorded.question, &mut environment, &mut |event| {
            trace.event(event)
        })
        .await;
    carry_over(&mut episode.run, recorded);
    (episode, unrecorded)
}

/// The generation settings an evaluation recorded with the run (none for `ask`'s runs), so that
/// a reply cut inside its thinking names the same `--max-tokens` again.
fn recorded_generation(recorded: &Run) -> Option<crate::llm::Generation> {
    recorded
        .evaluation
        .as_ref()
        .and_then(|settings| settings.generation.clone())
}

/// What a trial's prompt showed of the question's failed trials: the last one, the reflections.
fn trace_memory(trace: &mut TracePrinter, recorded: &Run) {
    match recorded.attempt() {
        crate::record::run::Attempt::Trial(k) => trace.header("Trial:", &k.to_string()),
        crate::record::run::Attempt::Epoch(k) => trace.header("Epoch:", &k.to_string()),
        crate::record::run::Attempt::Only => {}
    }
    if let Some(last_trial) = &recorded.last_trial {
        trace.header("Last trial:", last_trial);
    }
    for reflection in &recorded.reflections {
        trace.header("Reflection:", reflection);
    }
}

/// What a replayed run keeps of its recording: its identity (id, method as named, gold,
/// docstore) and, when the
/// replay made the same calls, the tokens and requests they cost (recorded completions carry no
/// counts of their own); then it is scored.
fn carry_over(run: &mut Run, recorded: &Run) {
    run.id = recorded.id.clone();
    run.method = recorded.method;
    // The task and the evaluation as recorded (absent from older runs, and absent again).
    run.task = recorded.task;
    run.evaluation.clone_from(&recorded.evaluation);
    // A trial's place and what its prompt showed; the reflection call was made before the trial.
    run.format.clone_from(&recorded.format);
    run.trial = recorded.trial;
    run.epoch = recorded.epoch;
    run.reflect = recorded.reflect;
    run.reflections.clone_from(&recorded.reflections);
    run.last_trial.clone_from(&recorded.last_trial);
    run.reflection.clone_from(&recorded.reflection);
    run.reflection_reasoning
        .clone_from(&recorded.reflection_reasoning);
    if recorded.reflection.is_some() {
        run.usage.llm_calls = run.usage.llm_calls.saturating_add(1);
    }
    run.gold = recorded.gold.clone();
    run.docstore = recorded.docstore.clone();
    let usage = &mut run.usage;
    if usage.prompt_tokens == 0 && usage.completion_tokens == 0 && usage.llm_calls == recorded.usage.llm_calls
    {
        usage.prompt_tokens = recorded.usage.prompt_tokens;
        usage.completion_tokens = recorded.usage.completion_tokens;
        usage.reasoning_tokens = recorded.usage.reasoning_tokens;
        usage.cached_tokens = recorded.usage.cached_tokens;
        usage.cache_write_tokens = recorded.usage.cache_write_tokens;
        usage.requests = recorded.usage.requests;
    }
    run.score();
}

/// Replays a run of a method other than ReAct: the same method set up from what the run
/// recorded (its examples, step budget, tools, N and temperature), its recorded completions and
/// samples as the model.
async fn replay_method(
    recorded: &Run,
    solver: Solver,
    live: &LiveEnvironment<'_>,
    trace: &mut TracePrinter,
) -> (Episode, Option<usize>) {
    let grammar = solver.grammar().clone();
    let model = recorded.model.clone().unwrap_or_else(|| "replay".to_owned());
    let llm = ReplayLlm::new(model, recorded.completions())
        .with_reasoning(recorded.step_reasoning())
        .with_past_stop(recorded.step_past_stop())
        .recorded_api(recorded.api)
        .with_samples(recorded.sample_requests())
        .with_sample_reasoning(recorded.sample_reasoning())
        .with_generation(recorded_generation(recorded))
        .with_ending(recorded.reply_ending());
    let mut unrecorded = None;
    let recording = Recording::new(recorded.observations(), grammar.clone(), live(recorded, &grammar));
    let mut environment = Inspected::new(recording, |error: &EnvironmentError| {
        if let EnvironmentError::NotRecorded { step } = error {
            unrecorded = Some(*step);
        }
    });
    if !trace.is_silent() {
        trace.header("Question:", &recorded.question);
        trace_memory(trace, recorded);
    }
    let mut episode = solver
        .solve(&llm, &recorded.question, &mut environment, &mut |event| {
            trace.event(event)
        })
        .await;
    carry_over(&mut episode.run, recorded);
    (episode, unrecorded)
}

/// The replay of a run whose setup cannot be rebuilt: an error naming why, its identity kept.
fn not_rebuilt(recorded: &Run, error: &RebuildError) -> Episode {
    let mut run = Run::new(&recorded.question, recorded.profile);
    run.stopped = Some(Stopped::Error);
    run.error = Some(format!(
        "cannot set its method up again: {}",
        crate::agent::error_chain(error)
    ));
    carry_over(&mut run, recorded);
    Episode::new(run, crate::agent::scratchpad::Scratchpad::new(String::new()), 0)
}

/// The live environment of a replay given tools but no docstore: a tool action goes to its tool;
/// Search, Lookup and the actions of tools not given are steps nothing may observe.
pub struct ToolsOnly {
    toolbox: Toolbox,
}

impl ToolsOnly {
    pub fn new(toolbox: Toolbox) -> ToolsOnly {
        ToolsOnly { toolbox }
    }
}

impl Environment for ToolsOnly {
    fn observe<'a>(
        &'a mut self,
        step: usize,
        action: &'a Result<Action, ActionError>,
        _written: &'a str,
    ) -> BoxFuture<'a, Result<String, EnvironmentError>> {
        Box::pin(async move {
            match action {
                Ok(Action::Tool { name, argument }) => match self.toolbox.get(name) {
                    Some(tool) => Ok(tool.call(argument).await?),
                    None => Err(EnvironmentError::NotRecorded { step }),
                },
                _ => Err(EnvironmentError::NotRecorded { step }),
            }
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Runs(#[from] RunsError),
    #[error(transparent)]
    Files(#[from] FilesError),
    #[error("no run files found in {paths}")]
    NoRuns { paths: String },
    #[error("cannot write the replay's output")]
    Output(#[source] std::io::Error),
    #[error(
        "the run at {run} was recorded against the docstore {recorded}, and this replay would observe its unrecorded steps with {current}: a replay never mixes snapshots — pass the docstore that run used, or no --docstore"
    )]
    OtherDocstore {
        /// The run's file and line.
        run: RunPlace,
        recorded: Box<DocstoreInfo>,
        current: Box<DocstoreInfo>,
    },
}

/// A replayed run as a `--json` line: the run's fields, and where it was read from.
#[derive(Serialize)]
struct SourcedRun<'a> {
    source: &'a RunPlace,
    #[serde(flatten)]
    run: &'a Run,
}

/// The run files named on a command line ([`recorded_files`]' rule), each with how it was found.
fn found_run_files(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Found)>, ReplayError> {
    Ok(recorded_files(paths, Wanted::Runs)?
        .into_iter()
        .map(|file| (file.path, file.found))
        .collect())
}

/// The runs of a file, or, for a file found in a directory that cannot be replayed, `None`
/// after a note naming it and why (the replay goes on with the other files).
fn read_found_runs(
    path: &Path,
    found: Found,
    trace: &mut TracePrinter,
) -> Result<Option<Vec<RecordedRun>>, ReplayError> {
    match (read_runs(path).map_err(ReplayError::from), found) {
        (Ok(runs), _) => Ok(Some(runs)),
        (Err(error), Found::InDirectory) => {
            trace.note(&format!("skipped: {error}"));
            Ok(None)
        }
        (Err(error), Found::Named) => Err(error),
    }
}

/// Replays every run the config names, printing as it goes.
pub async fn replay(
    config: &ReplayConfig,
    live: &LiveEnvironment<'_>,
    stdout: &mut dyn Write,
    trace: &mut TracePrinter,
) -> Result<ReplaySummary, ReplayError> {
    let files = found_run_files(&config.paths)?;
    if files.is_empty() {
        return Err(ReplayError::NoRuns {
            paths: display_paths(&config.paths),
        });
    }
    // Each file is read once: all of them up front when every run must be checked against the
    // snapshot before any replays, else each as its turn comes.
    let mut read_ahead = VecDeque::new();
    if let Some(current) = config.docstore.as_ref().filter(|info| info.snapshot.is_some()) {
        for (file, found) in &files {
            let runs = read_found_runs(file, *found, trace)?;
            if let Some(runs) = &runs {
                check_same_docstore(runs, current)?;
            }
            read_ahead.push_back(runs);
        }
    }
    let mut summary = ReplaySummary::default();
    let mut scored = ScoredAttempts::default();
    // Each replayed run's model and usage, for the spend.
    let mut spent: Vec<(Option<String>, Usage, Usage)> = Vec::new();
    for (file, found) in &files {
        let runs = match read_ahead.pop_front() {
            Some(runs) => runs,
            None => read_found_runs(file, *found, trace)?,
        };
        let Some(runs) = runs else {
            summary.n_skipped_files += 1;
            continue;
        };
        // Each question's latest trial in this file, with the memory it showed recomputed.
        let mut latest_trials: HashMap<String, Run> = HashMap::new();
        for RecordedRun {
            place: source,
            run: recorded,
            ..
        } in runs
        {
            if let Some(changed) = changed_fewshot(&recorded) {
                trace.note(&format!("{source}: {changed}"));
            }
            let previous = recorded.id.as_ref().and_then(|id| latest_trials.get(id));
            let (recorded, memory_note) = with_recomputed_memory(recorded, previous, config.profile);
            if let Some(note) = memory_note {
                trace.note(&format!("{source}: {note}"));
            }
            if let (Some(id), Attempt::Trial(_)) = (&recorded.id, recorded.attempt()) {
                latest_trials.insert(id.clone(), recorded.clone());
            }
            let (episode, unrecorded) =
                replay_recorded(&recorded, config.profile, config.max_steps, live, trace).await;
            let run = &episode.run;
            summary.n_runs += 1;
            summary.usage.add(&run.usage);
            spent.push((run.model.clone(), run.usage, recorded.batched_usage()));
            if run.answer.as_deref().is_some_and(|answer| !answer.is_empty()) {
                summary.n_answered += 1;
            }
            if let Some(difference) = difference(&recorded, run) {
                summary.n_changed += 1;
                trace.note(&format!("{source}: {difference}"));
            }
            if let (Some(em), Some(f1)) = (run.em, run.f1) {
                scored.add(run, em != 0, f1, run.how_stopped() == Stopped::Error);
            }
            if let Some(error) = &run.error {
                // A run recorded as failed replays to its failure: that is the recording, not an error of the replay.
                if recorded.how_stopped() != Stopped::Error && recorded.stopped != run.stopped {
                    summary.n_errors += 1;
                }
                match unrecorded {
                    Some(step) => trace.note(&format!(
                        "{source}: step {step} has no recorded observation, and replay reaches no docstore unless asked: give `--docstore` (`wikipedia`, `index:DIR`, `corpus:FILE`) to observe it"
                    )),
                    None => trace.note(&format!("{source}: {error}")),
                }
            }
            if config.output == Output::Text {
                trace.header("Answer:", run.answer.as_deref().unwrap_or(""));
                trace.blank();
            }
            // The run's trace is out before its line on stdout (`2>&1` keeps their order).
            trace.end_run();
            let written = match config.output {
                Output::Text => writeln!(stdout, "{}", run.answer.as_deref().unwrap_or("")),
                Output::Json => {
                    let line = serde_json::to_string(&SourcedRun { source: &source, run })
                        // invariant: a `Run` and a `RunPlace` (its path written lossily) always serialize
                        .expect("a run always serializes");
                    writeln!(stdout, "{line}")
                }
            };
            written.map_err(ReplayError::Output)?;
        }
    }
    (summary.n_scored, summary.em, summary.f1, summary.n_scored_errors) = scored.headline();
    summary.spend = Spend::of(spent.iter().map(|(model, usage, batched)| Spent {
        model: model.as_deref(),
        usage,
        batched: *batched,
    }));
    if let Some(prices) = &config.prices {
        summary.spend.price(prices);
    }
    write_summary(&summary, config.output, stdout, trace)?;
    Ok(summary)
}

/// The replay's summary: a JSON line on stdout (when runs carry gold answers), or a note on the
/// trace; with `--prices`, what the runs spent.
fn write_summary(
    summary: &ReplaySummary,
    output: Output,
    stdout: &mut dyn Write,
    trace: &mut TracePrinter,
) -> Result<(), ReplayError> {
    let incomplete = Incomplete {
        errors: summary.n_scored_errors,
        ..Incomplete::default()
    };
    match output {
        Output::Json if summary.n_scored > 0 => {
            let mut line = serde_json::json!({"summary": {
                "n": summary.n_scored, "em": summary.em, "f1": summary.f1,
                "runs": summary.n_runs, "answered": summary.n_answered, "changed": summary.n_changed,
                "errors": summary.n_scored_errors, "incomplete": incomplete.is_incomplete(),
            }});
            if summary.n_skipped_files > 0 {
                line["summary"]["skipped_files"] = summary.n_skipped_files.into();
            }
            // With `--prices`, what the runs spent (the line is as before without it).
            if let Some(cost) = &summary.spend.cost {
                line["summary"]["tokens"] = serde_json::json!(summary.spend.tokens);
                line["summary"]["cost"] = serde_json::json!(cost);
            }
            writeln!(stdout, "{line}").map_err(ReplayError::Output)?;
        }
        Output::Json => {}
        Output::Text => {
            let mut line = format!(
                "{} replayed, {} answered",
                crate::base::output::counted(summary.n_runs, "run", "runs"),
                summary.n_answered
            );
            if summary.n_scored > 0 {
                line.push_str(&format!(
                    "; EM {:.4} F1 {:.4} over {} with gold answers{}",
                    summary.em,
                    summary.f1,
                    summary.n_scored,
                    incomplete.note()
                ));
            }
            if summary.n_changed > 0 {
                line.push_str(&format!(
                    "; {} from the recording",
                    crate::base::output::counted(summary.n_changed, "answer differs", "answers differ")
                ));
            }
            line.push_str(&skipped_files(summary.n_skipped_files));
            trace.note(&line);
            if summary.spend.cost.is_some() {
                let mut spend = Vec::new();
                summary
                    .spend
                    .write_text(&mut spend)
                    .map_err(ReplayError::Output)?;
                for line in String::from_utf8_lossy(&spend).lines() {
                    trace.note(line);
                }
            }
        }
    }
    Ok(())
}

/// What differs from the prompt a run was made with, when its examples were drawn from runs
/// (`--fewshot-from`) and the file it names is gone or changed since: the replay goes on (the
/// recorded completions do not depend on the prompt), but its prompt is not the run's.
fn changed_fewshot(run: &Run) -> Option<String> {
    let source = run.fewshot_from.as_ref()?;
    let path = run.fewshot.as_deref()?;
    match std::fs::read(path) {
        Ok(bytes) if crate::base::digest::digest(&bytes) == source.digest => None,
        Ok(_) => Some(format!(
            "its few-shot file `{path}` changed since the run: the prompt replayed is not the one it was made with"
        )),
        Err(_) => Some(format!(
            "its few-shot file `{path}` is missing: the prompt replayed is not the one it was made with"
        )),
    }
}

/// The summary's account of the files skipped, if any.
fn skipped_files(n_skipped: usize) -> String {
    match n_skipped {
        0 => String::new(),
        1 => "; 1 file skipped (not runs)".to_owned(),
        n => format!("; {n} files skipped (not runs)"),
    }
}

/// Refuses runs recorded against another docstore than the frozen one given to observe their
/// unrecorded steps (runs that do not say which docstore answered them are let through).
fn check_same_docstore(runs: &[RecordedRun], current: &DocstoreInfo) -> Result<(), ReplayError> {
    for RecordedRun {
        place: source, run, ..
    } in runs
    {
        if let Some(recorded) = run.docstore.as_ref().filter(|recorded| *recorded != current) {
            return Err(ReplayError::OtherDocstore {
                run: source.clone(),
                recorded: Box::new(recorded.clone()),
                current: Box::new(current.clone()),
            });
        }
    }
    Ok(())
}

/// How a replayed run ended differently from its recording, if it did.
fn difference(recorded: &Run, replayed: &Run) -> Option<String> {
    // A hand-written run that records no end is what its replay makes of it.
    let recorded_stop = recorded.stopped?;
    if normalized(&recorded.answer) != normalized(&replayed.answer) {
        return Some(format!(
            "replayed answer {:?} differs from the recorded {:?}",
            replayed.answer.as_deref().unwrap_or(""),
            recorded.answer.as_deref().unwrap_or("")
        ));
    }
    let replayed_stop = replayed.how_stopped();
    if replayed_stop != recorded_stop || replayed.steps.len() != recorded.steps.len() {
        return Some(format!(
            "replay stopped ({}) after {} steps, the recording ({}) after {}",
            replayed_stop.as_str(),
            replayed.steps.len(),
            recorded_stop.as_str(),
            recorded.steps.len()
        ));
    }
    None
}

/// A Reflexion trial with the memory its prompt showed (the reflections and the last trial)
/// recomputed from `previous`, the question's trial before it in the file, and the reflection
/// reply it recorded, as `eval` computed it ([`memory_after`]); with a note when the memory it
/// recorded is another. A trial whose earlier trial is not in the file keeps its own, with a
/// note; any other run is returned as it is.
fn with_recomputed_memory(
    mut recorded: Run,
    previous: Option<&Run>,
    profile: Option<Profile>,
) -> (Run, Option<String>) {
    let (Attempt::Trial(trial), Some(strategy)) = (recorded.attempt(), recorded.reflect) else {
        return (recorded, None);
    };
    if strategy == Reflect::None {
        return (recorded, None);
    }
    let question = recorded.id.as_deref().unwrap_or("").to_owned();
    let previous =
        previous.filter(|previous| matches!(previous.attempt(), Attempt::Trial(k) if k + 1 == trial));
    if trial > 1 && previous.is_none() {
        return (
            recorded,
            Some(format!(
                "question `{question}` trial {trial}: its earlier trial is not in this file, so the reflections it recorded are replayed unchecked"
            )),
        );
    }
    let memory = memory_after(
        previous,
        strategy,
        recorded.reflection.as_deref(),
        profile.unwrap_or(recorded.profile),
    );
    let recorded_memory = Memory::of_run(&recorded);
    if memory == recorded_memory {
        return (recorded, None);
    }
    let what = if memory.reflections == recorded_memory.reflections {
        format!(
            "the last trial it shows is not its previous trial's (recorded {:?}, recomputed {:?})",
            abbreviated(recorded_memory.last_trial.as_deref().unwrap_or("")),
            abbreviated(memory.last_trial.as_deref().unwrap_or(""))
        )
    } else {
        format!(
            "its reflections are not what its previous trial and its reflection reply give (recorded {:?}, recomputed {:?})",
            recorded_memory.reflections, memory.reflections
        )
    };
    let note = format!("question `{question}` trial {trial}: {what}; replayed with the recomputed memory");
    recorded.reflections = memory.reflections;
    recorded.last_trial = memory.last_trial;
    (recorded, Some(note))
}

fn normalized(answer: &Option<String>) -> String {
    crate::base::metrics::normalize_answer(answer.as_deref().unwrap_or(""))
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| format!("`{}`", path.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The replayed runs with gold answers, by question (in the order first replayed), so that the
/// summary's EM and F1 are the evaluation's headline ([`attempts::headline`]): a question's trials
/// count once, its final state; epochs are each question's mean. Any other run (a single attempt,
/// or no id) counts once: run files given together need not be one evaluation.
#[derive(Default)]
struct ScoredAttempts {
    by_question: Vec<Vec<ScoredAttempt>>,
    index_of: HashMap<String, usize>,
}

/// One replayed run with a gold answer.
struct ScoredAttempt {
    attempt: Attempt,
    em: bool,
    f1: f64,
    answer: Option<String>,
    /// The run ended in an error.
    error: bool,
}

impl ScoredAttempts {
    fn add(&mut self, run: &Run, em: bool, f1: f64, error: bool) {
        let attempt = ScoredAttempt {
            attempt: run.attempt(),
            em,
            f1,
            answer: run.answer.clone(),
            error,
        };
        let idx = match run.id.as_ref().filter(|_| run.attempt() != Attempt::Only) {
            Some(id) => *self.index_of.entry(id.clone()).or_insert_with(|| {
                self.by_question.push(Vec::new());
                self.by_question.len() - 1
            }),
            None => {
                self.by_question.push(Vec::new());
                self.by_question.len() - 1
            }
        };
        self.by_question[idx].push(attempt);
    }

    /// How many questions were scored, their mean EM and F1, and how many of the attempts counted
    /// ended in an error.
    fn headline(&self) -> (usize, f64, f64, usize) {
        let per_question: Vec<Vec<(Seen<'_>, &ScoredAttempt)>> = self
            .by_question
            .iter()
            .map(|attempts| {
                attempts
                    .iter()
                    .map(|scored| {
                        let seen = Seen {
                            attempt: scored.attempt,
                            em: scored.em,
                            f1: scored.f1,
                            answer: scored.answer.as_deref(),
                        };
                        (seen, scored)
                    })
                    .collect()
            })
            .collect();
        // An epoch not made: wrong, and no error.
        let not_made = ScoredAttempt {
            attempt: Attempt::Only,
            em: false,
            f1: 0.0,
            answer: None,
            error: false,
        };
        let counted = attempts::headline(&per_question, &&not_made);
        let n = counted.len();
        if n == 0 {
            return (0, 0.0, 0.0, 0);
        }
        let (mut em, mut f1, mut errors) = (0.0, 0.0, 0);
        for scores in &counted {
            let k = scores.len().max(1) as f64;
            em += scores.iter().filter(|scored| scored.em).count() as f64 / k;
            f1 += scores.iter().map(|scored| scored.f1).sum::<f64>() / k;
            errors += scores.iter().filter(|scored| scored.error).count();
        }
        (n, em / n as f64, f1 / n as f64, errors)
    }
}
