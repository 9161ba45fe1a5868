//! `evaluate`: runs a question file through the agent, many questions at once, appending every
//! finished run to a results file that a re-run resumes from, and sums it up.
//!
//! The runner only: what it reads and writes is the record's ([`crate::record::questions`] the
//! question files, [`crate::record::selection`] the questions picked, [`crate::record::results`]
//! the JSON Lines file that survives a crash), and what the runs add up to is the analysis's
//! ([`crate::analysis::summary`]). Here: the questions in flight, [`resume`] (every stored line
//! checked against this evaluation before any request), [`failure`] (whether an error stops the
//! evaluation) and [`progress`] (the events a caller's view draws).

mod failure;
mod progress;
mod resume;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};

pub use failure::{FailureClass, FailureKind, FailureOrigin};
pub use progress::{PROGRESS_LINE_EVERY, Progress, ProgressView};

use progress::ProgressReporter;

use crate::agent::environment::{EnvironmentError, Inspected, Workbench};
use crate::agent::fewshot::{Fewshot, FewshotError};
use crate::agent::prompt::PromptOptions;
use crate::agent::trace::LogOutput;
use crate::analysis::attempts::{self, Attempts, AttemptsSummary};
use crate::analysis::summary::{self, Outcome, Summary, SummaryContext};
use crate::base::method::Reflect;
use crate::base::metrics::AnswerScore;
use crate::base::task::Task;
use crate::docstore::DocstoreSource;
use crate::llm::cache::{CacheScope, ScopedLlm};
use crate::llm::{
    Completion, ConverseRequest, Llm, LlmError, LlmRequest, Reply, SampleRequest, Samples, openai::Api,
};
use crate::record::questions::{Contexts, Question, QuestionFileError};
use crate::record::results::{ResultsError, ResultsFile};
use crate::record::run::settings::{AttemptsRecord, EvalSettings, Sampling, SelectionRecord, ShardSplit};
use crate::record::run::{Attempt, Run, RunErrorKind, Stopped};
use crate::record::selection::{Selection, SelectionError};
use crate::record::shard::{self, ShardError};
use crate::solver::setup::{self, AgentSetup, ExtraTools, SetupError};
use crate::solver::{Examples, Solver, SolverError, Trial};
use crate::tools::Toolbox;
use crate::trajectories::fewshot_from::{Drawn, FewshotFrom, FewshotFromError, OtherExamples};

/// How to evaluate.
#[derive(Debug, Clone)]
pub struct EvalConfig {
    pub questions: PathBuf,
    pub selection: Selection,
    /// Whether the docstore reads each question's context paragraphs (`--docstore distractor`);
    /// when not, they are dropped while the file is read.
    pub contexts: Contexts,
    /// The profile, the method (`--method`) with CoT-SC's sampling, and the step budget: what
    /// `ask` and `chat` take too.
    pub agent: AgentSetup,
    /// Few-shot examples instead of the task's bundled ones (HotpotQA or FEVER): one file, or
    /// one per phase of a backoff method.
    pub fewshot: Vec<PathBuf>,
    /// Once, Reflexion's trials, or independent epochs.
    pub attempts: Attempts,
    /// Examples drawn from earlier runs instead (`--fewshot-from`), written beside `results`.
    pub fewshot_from: Option<FewshotFrom>,
    /// Questions in flight at once.
    pub concurrency: usize,
    /// The JSON Lines file every finished run is appended to, and resumed from.
    pub results: PathBuf,
    pub resume: Resume,
    pub progress: Progress,
    /// Where notes and progress lines go (stderr, above the bar).
    pub log: LogOutput,
}

/// What a re-run does with the questions the results file already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resume {
    /// Skip every question already in the results file, errors included.
    #[default]
    SkipDone,
    /// Remove the runs that ended in an error first, so their questions run again.
    RetryErrors,
}

/// The model, docstore and tools every question shares.
#[derive(Clone)]
pub struct EvalServices {
    pub llm: Arc<dyn Llm>,
    pub docstore: Arc<dyn DocstoreSource>,
    pub toolbox: Toolbox,
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Questions(#[from] QuestionFileError),
    #[error(transparent)]
    Selection(#[from] SelectionError),
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error(transparent)]
    Fewshot(#[from] FewshotError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Method(#[from] SolverError),
    #[error(transparent)]
    Shard(#[from] ShardError),
    #[error(transparent)]
    FewshotFrom(#[from] FewshotFromError),
    #[error(transparent)]
    LineContradiction(#[from] Box<crate::record::run::settings::LineContradiction>),
    #[error(
        "{difference}; `{}` holds another evaluation: pass another `--out`, or the same {} as its runs",
        results.display(),
        difference.difference.flag
    )]
    OtherEvaluation {
        results: PathBuf,
        difference: Box<crate::record::run::settings::NotOneEvaluation>,
    },
    #[error("cannot read `{}` to record its digest", path.display())]
    Digest {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`--reflect {strategy}` shows Reflexion's HotpotQA prompt, which asks a `Question`; `{}` is a FEVER file: run its trials with `--reflect none`",
        questions.display()
    )]
    ReflectFever {
        questions: PathBuf,
        strategy: crate::base::method::Reflect,
    },
    #[error(
        "`--reflect {strategy}` writes Reflexion's text prompt; `--api {api}` sends no text prompt: use `--api chat` or `--api completions`, or `--reflect none`"
    )]
    ReflectTools {
        strategy: crate::base::method::Reflect,
        api: Api,
    },
    #[error(
        "`{}` is {} (task `{task}`), but the few-shot examples {examples} teach `{examples_task}`: give examples of `{task}`, or none for the bundled ones",
        questions.display(),
        crate::record::questions::describe(*task)
    )]
    ExamplesOfAnotherTask {
        questions: PathBuf,
        task: Task,
        /// The examples' files as the message names them (`--fewshot` files, or the results
        /// `--fewshot-from` drew from).
        examples: String,
        examples_task: Task,
    },
    #[error("the selection holds no question")]
    NothingSelected,
    #[error(
        "`{}` has no context paragraphs: `--docstore distractor` needs a HotpotQA file with `context` (official or Hugging Face schema)",
        path.display()
    )]
    NoContexts { path: PathBuf },
    #[error(
        "results file `{}` belongs to other questions: its run of id `{id}` asks {stored:?}, but `{}` asks {asked:?} under that id; choose another `--out` (or remove the file)",
        results.display(),
        questions.display()
    )]
    OtherQuestions {
        results: PathBuf,
        questions: PathBuf,
        id: String,
        /// The stored run's question, abbreviated.
        stored: String,
        /// The question file's question, abbreviated.
        asked: String,
    },
    #[error("evaluation stopped: {reason}; {progress} in `{}`", results.display())]
    Stopped {
        reason: StopReason,
        progress: StopProgress,
        results: PathBuf,
    },
}

/// What a stopped evaluation leaves: the attempts that finished, and those a resume asks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopProgress {
    /// Attempts that ended without an error (this run's and resumed ones).
    pub n_finished: usize,
    /// Attempts that ended in an error that may fix itself: asked again by the same command.
    pub n_asked_again: usize,
    /// Attempts that ended in an error that will not: kept until `--retry-errors`.
    pub n_kept_errors: usize,
}

impl StopProgress {
    fn of(tally: &Tally) -> StopProgress {
        let mut progress = StopProgress {
            n_finished: 0,
            n_asked_again: 0,
            n_kept_errors: 0,
        };
        for (outcome, error_kind) in tally.outcomes.iter().zip(&tally.error_kinds) {
            match (outcome.stopped, error_kind) {
                (Stopped::Error, Some(RunErrorKind::Transient)) => progress.n_asked_again += 1,
                (Stopped::Error, _) => progress.n_kept_errors += 1,
                _ => progress.n_finished += 1,
            }
        }
        progress
    }
}

impl fmt::Display for StopProgress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.n_finished {
            0 => f.write_str("no question finished")?,
            1 => f.write_str("1 question finished")?,
            n => write!(f, "{n} questions finished")?,
        }
        f.write_str("; run the same command again to resume")?;
        if self.n_asked_again > 0 {
            write!(
                f,
                ": it asks again the {} that failed in a way that may fix itself",
                self.n_asked_again
            )?;
        }
        if self.n_kept_errors > 0 {
            write!(
                f,
                "; `--retry-errors` asks again the {} that failed in a way that will not",
                self.n_kept_errors
            )?;
        }
        f.write_str(" — every run is kept")
    }
}

/// Why an evaluation stopped before its questions were done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// An error that will not go away by asking again ([`stops_evaluation`]); the question that
    /// met it is not recorded, so it runs next time.
    Refused { error: String },
    /// The model server refused the connection (nothing listens there: not started, or down):
    /// no other question can be answered now, but every one may be once it is back. The
    /// questions that met it are recorded as errors that may fix themselves, asked again next time.
    Unreachable { error: String },
    /// Failures of one class ended this many questions in a row (recorded as errors); `error`
    /// is the last one's message.
    Repeated {
        n_questions: usize,
        failure: FailureClass,
        error: String,
    },
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Refused { error } => {
                write!(
                    f,
                    "{error} (asking again will not help: check the key, the model name and the URL)"
                )
            }
            StopReason::Unreachable { error } => {
                write!(
                    f,
                    "{error}; the questions that met it are recorded as errors, asked again once the server answers"
                )
            }
            StopReason::Repeated {
                n_questions,
                failure,
                error,
            } => write!(
                f,
                "the last {n_questions} questions all failed alike: {failure} (the last one: {error}); they are recorded as errors"
            ),
        }
    }
}

/// After this many questions in a row fail alike (one [`FailureClass`]: same server, same kind,
/// same status), the evaluation stops: the model or the docstore is down, and the remaining
/// questions would only record it again.
pub const SAME_ERROR_STREAK: usize = 5;

/// Whether a model error stops the whole evaluation at once: the server refused the key (401),
/// the access (403), does not know the model or the endpoint (404, 405, 501), or the client cannot
/// be built — every other question would get the same answer ([`LlmError::is_permanent`]).
/// Everything else (429, 5xx, a dropped connection, a bad request about one prompt such as a
/// too-long context) ends only its own question.
pub fn stops_evaluation(error: &LlmError) -> bool {
    error.is_permanent()
}

/// The shared model, watched for errors that stop the evaluation.
struct WatchedLlm<'a> {
    llm: &'a dyn Llm,
    /// Why the first stopping error stops the evaluation, with the error as the run records it.
    refusal: Mutex<Option<StopReason>>,
    refused: tokio::sync::Notify,
    /// The evaluation's concurrency budget, one permit a request in flight: CoT-SC's samples,
    /// asked one by one of a server that ignores `n`, share it with every other question.
    permits: tokio::sync::Semaphore,
}

impl<'a> WatchedLlm<'a> {
    fn new(llm: &'a dyn Llm, concurrency: usize) -> WatchedLlm<'a> {
        WatchedLlm {
            llm,
            refusal: Mutex::new(None),
            refused: tokio::sync::Notify::new(),
            permits: tokio::sync::Semaphore::new(concurrency.max(1)),
        }
    }

    /// Runs `call` with one permit of the concurrency budget.
    async fn throttled<T>(&self, call: impl Future<Output = T>) -> T {
        let permit = self.permits.acquire().await;
        // invariant: the semaphore is never closed
        let _permit = permit.expect("the permits are never closed");
        call.await
    }

    fn refusal(&self) -> Option<StopReason> {
        self.refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl WatchedLlm<'_> {
    /// Notes the first error that stops the evaluation, and passes the result on.
    fn watch<T>(&self, result: Result<T, LlmError>) -> Result<T, LlmError> {
        if let Err(error) = &result
            && stops_evaluation(error)
        {
            let mut refusal = self.refusal.lock().unwrap_or_else(PoisonError::into_inner);
            if refusal.is_none() {
                let message = crate::agent::error_chain(error);
                if let LlmError::Refused { .. } = error {
                    // Not started yet, or down for a while: the question that met it finishes
                    // in its error and is recorded, to be asked again.
                    *refusal = Some(StopReason::Unreachable { error: message });
                } else {
                    *refusal = Some(StopReason::Refused { error: message });
                    self.refused.notify_one();
                }
            }
        }
        result
    }
}

impl Llm for WatchedLlm<'_> {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move { self.watch(self.throttled(self.llm.complete(request)).await) })
    }

    fn converse<'a>(&'a self, request: ConverseRequest<'a>) -> BoxFuture<'a, Result<Reply, LlmError>> {
        Box::pin(async move { self.watch(self.throttled(self.llm.converse(request)).await) })
    }

    fn sample<'a>(&'a self, request: SampleRequest<'a>) -> BoxFuture<'a, Result<Samples, LlmError>> {
        Box::pin(async move { self.watch(self.throttled(self.llm.sample(request)).await) })
    }

    fn model(&self) -> &str {
        self.llm.model()
    }

    fn api(&self) -> Option<Api> {
        self.llm.api()
    }

    fn generation(&self) -> Option<crate::llm::Generation> {
        self.llm.generation()
    }
}

/// Runs every selected question that the results file does not hold yet, `concurrency` at a
/// time, until all are done or `interrupt` resolves (Ctrl-C, SIGTERM). Finished runs are on disk
/// the moment they finish; questions in flight when interrupted are dropped and run next time.
/// A model error that every question would meet ([`stops_evaluation`]), or failures of one class on
/// [`SAME_ERROR_STREAK`] questions in a row, stops it with [`EvalError::Stopped`].
pub async fn evaluate(
    config: &EvalConfig,
    services: &EvalServices,
    interrupt: impl Future<Output = ()>,
) -> Result<Summary, EvalError> {
    let started = Instant::now();
    let plan = Plan::make(config, services).await?;
    let notes = ProgressReporter::notes(config);
    let (results, kept) = plan.resume(config, &notes)?;
    let batcher = services.llm.batcher().cloned();
    // `--batch`: every open question waits on the model at once, so none waits for a permit.
    let concurrency = match &batcher {
        Some(batcher) => {
            let log = config.log.clone();
            batcher.set_notes(Arc::new(move |message: &str| log.line(message)));
            tokio::sync::Semaphore::MAX_PERMITS
        }
        None => config.concurrency,
    };
    let llm = WatchedLlm::new(services.llm.as_ref(), concurrency);
    let mut rounds = Rounds {
        config,
        services,
        plan: &plan,
        llm: &llm,
        results,
        tally: Tally::default(),
        streak: ErrorStreak::default(),
        distractor_hint: plan.distractor_hint.clone(),
        resumed_errors: 0,
    };
    let end = rounds.run_all(kept, interrupt).await?;
    let Rounds {
        tally,
        resumed_errors,
        ..
    } = rounds;
    if resumed_errors > 0 {
        notes.note(&format!(
            "{} holds runs that ended in an error that asking again will not fix ({resumed_errors}): they are kept, not run again; `--retry-errors` runs them again",
            config.results.display()
        ));
    }
    let interrupted = match end {
        RoundsEnd::Stopped(reason) => {
            return Err(EvalError::Stopped {
                reason,
                progress: StopProgress::of(&tally),
                results: config.results.clone(),
            });
        }
        RoundsEnd::Interrupted => true,
        RoundsEnd::Done => false,
    };
    let questions = &plan.questions;
    if interrupted {
        let done = match config.attempts {
            Attempts::Once => format!("{} of {} questions done", tally.outcomes.len(), questions.len()),
            _ => format!(
                "{} done for {}",
                crate::base::output::counted(tally.outcomes.len(), "attempt", "attempts"),
                crate::base::output::counted(questions.len(), "question", "questions")
            ),
        };
        notes.note(&format!(
            "interrupted: {done}; run the same command again to resume from {}",
            config.results.display()
        ));
    }
    Ok(tally.summary(
        questions,
        config.attempts,
        SummaryContext {
            task: plan.task,
            selected: questions.len(),
            resumed: 0,
            interrupted,
            wall_time: started.elapsed(),
            results: config.results.clone(),
        },
    ))
}

/// What an evaluation will ask, settled before any request: the question file's task, the
/// selected questions (a shard's, placed in the selection), the solver with its examples, and the
/// settings every line it appends records.
struct Plan {
    task: Task,
    questions: Vec<Question>,
    shard: Option<shard::ShardPlan>,
    solver: Solver,
    /// The examples `--fewshot-from` drew, which every run records.
    drawn: Option<Drawn>,
    settings: EvalSettings,
    /// Offered when a question fails for want of Wikipedia: the file's own paragraphs need none.
    distractor_hint: Option<String>,
}

impl Plan {
    /// Checks the options, reads the selection, sets the examples and the method up: every
    /// refusal that needs no request happens here.
    async fn make(config: &EvalConfig, services: &EvalServices) -> Result<Plan, EvalError> {
        // Options that cannot work together are refused before anything is read.
        let tools = ExtraTools::of(&services.toolbox);
        config.agent.check(services.llm.api(), tools)?;
        if let Attempts::Trials { reflect, .. } = config.attempts {
            setup::check_reflect_tools(reflect, tools)?;
        }
        // With `--shard`, only the shard's questions; the plan says where each sits in the selection.
        let (file, shard, other_shards) = config
            .selection
            .read_sharded(&config.questions, config.contexts)?;
        let task = file.task;
        let distractor_hint = (file.has_contexts && config.contexts == Contexts::Unused).then(|| {
            format!(
                "`{}` holds each question's context paragraphs: `--docstore distractor` searches them (HotpotQA's distractor setting), with no network",
                config.questions.display()
            )
        });
        let questions = file.questions;
        if questions.is_empty() {
            return Err(EvalError::NothingSelected);
        }
        if config.contexts == Contexts::Required
            && questions.iter().all(|question| question.context.is_empty())
        {
            return Err(EvalError::NoContexts {
                path: config.questions.clone(),
            });
        }
        let (examples, drawn) = examples_of_task(config, task, &questions, &other_shards).await?;
        let solver = Solver::new(
            &config.agent.method_config(),
            config.agent.profile,
            &examples,
            &services.toolbox,
            &PromptOptions::default(),
            config.agent.max_steps(task),
        )?;
        if let Attempts::Trials { reflect, .. } = config.attempts
            && reflect != Reflect::None
        {
            solver.check_reflect(reflect)?;
            if task == Task::Fever {
                return Err(EvalError::ReflectFever {
                    questions: config.questions.clone(),
                    strategy: reflect,
                });
            }
            if let Some(api) = services.llm.api().filter(|api| api.calls_functions()) {
                return Err(EvalError::ReflectTools {
                    strategy: reflect,
                    api,
                });
            }
        }
        let settings = evaluation_settings(config, services, &solver, shard.as_ref(), task, file.digest)?;
        Ok(Plan {
            task,
            questions,
            shard,
            solver,
            drawn,
            settings,
            distractor_hint,
        })
    }

    /// Opens the results file and keeps what it holds of this evaluation ([`resume::resume`]),
    /// saying so: the runs kept, by question id and attempt.
    fn resume(
        &self,
        config: &EvalConfig,
        notes: &ProgressReporter,
    ) -> Result<(ResultsFile, KeptRuns), EvalError> {
        let (mut results, stored) = ResultsFile::open(&config.results)?;
        if stored.torn_bytes > 0 {
            notes.note(&format!(
                "{}: dropped a torn last line ({} bytes) left by an interrupted write",
                config.results.display(),
                stored.torn_bytes
            ));
        }
        let resumed = resume::resume(
            &mut results,
            stored,
            &self.settings,
            self.shard.as_ref(),
            &self.questions,
            config,
        )?;
        note_resumed(notes, &resumed, config, &self.settings);
        let kept = resumed
            .runs
            .into_iter()
            .filter_map(|run| Some(((run.id.clone()?, run.attempt()), run)))
            .collect();
        Ok((results, kept))
    }
}

/// The few-shot examples: drawn by `--fewshot-from` (from the whole selection's other questions,
/// so every shard draws the same), the `--fewshot` files, or the task's bundled ones. Examples of
/// another task than the question file's are refused, naming both.
async fn examples_of_task(
    config: &EvalConfig,
    task: Task,
    questions: &[Question],
    other_shards: &[crate::record::selection::OtherQuestion],
) -> Result<(Examples, Option<Drawn>), EvalError> {
    let drawn = match &config.fewshot_from {
        Some(from) => {
            let mut excluded = crate::trajectories::Excluded::default();
            for question in questions {
                excluded.insert(&question.id, question.position, &question.question);
            }
            for other in other_shards {
                excluded.insert(&other.id, other.position, &other.question);
            }
            let drawn = from
                .draw(
                    config.agent.method,
                    task,
                    config.agent.profile,
                    &excluded,
                    &config.results,
                    OtherExamples::Refuse,
                )
                .await?;
            Some(drawn)
        }
        None => None,
    };
    let examples = if let Some(drawn) = &drawn {
        Examples::Files(vec![drawn.fewshot.clone()])
    } else if config.fewshot.is_empty() {
        Examples::Bundled(task)
    } else {
        Examples::Files(
            config
                .fewshot
                .iter()
                .map(|path| Fewshot::from_file(path))
                .collect::<Result<_, _>>()?,
        )
    };
    // The question file says the task; examples of another are refused before any request.
    if examples.task() != task {
        let files: Vec<&PathBuf> = match &config.fewshot_from {
            Some(from) => vec![&from.results],
            None => config.fewshot.iter().collect(),
        };
        return Err(EvalError::ExamplesOfAnotherTask {
            questions: config.questions.clone(),
            task,
            examples: files
                .iter()
                .map(|path| format!("`{}`", path.display()))
                .collect::<Vec<_>>()
                .join(", "),
            examples_task: examples.task(),
        });
    }
    Ok((examples, drawn))
}

/// The runs a resumed results file keeps, by question id and attempt.
type KeptRuns = HashMap<(String, Attempt), Run>;

/// How the rounds ended.
enum RoundsEnd {
    /// Every round ran (or every question was right before the next trial).
    Done,
    Interrupted,
    /// A refusal every question would meet, or a streak of failures of one class.
    Stopped(StopReason),
}

/// The scheduler: a plan's rounds, run against the model, every finished run appended.
struct Rounds<'a> {
    config: &'a EvalConfig,
    services: &'a EvalServices,
    plan: &'a Plan,
    llm: &'a WatchedLlm<'a>,
    results: ResultsFile,
    tally: Tally,
    streak: ErrorStreak,
    distractor_hint: Option<String>,
    /// Runs kept from the results file that ended in an error asking again will not fix.
    resumed_errors: usize,
}

impl Rounds<'_> {
    /// Each round in turn ([`rounds`]): the runs `kept` of it counted, the rest asked.
    async fn run_all(
        &mut self,
        mut kept: KeptRuns,
        interrupt: impl Future<Output = ()>,
    ) -> Result<RoundsEnd, EvalError> {
        let mut interrupt = std::pin::pin!(interrupt.fuse());
        let plan = self.plan;
        for round in rounds(self.config.attempts) {
            let mut pending = Vec::new();
            let mut resumed_now = Vec::new();
            for &attempt in &round {
                for question in &plan.questions {
                    if matches!(attempt, Attempt::Trial(_)) && self.tally.right.contains(&question.id) {
                        continue;
                    }
                    match kept.remove(&(question.id.clone(), attempt)) {
                        Some(run) => resumed_now.push((question, run)),
                        None => pending.push(Job {
                            question,
                            attempt,
                            previous: self.tally.latest.get(&question.id).cloned(),
                        }),
                    }
                }
            }
            if resumed_now.is_empty() && pending.is_empty() {
                // Every question is right before this trial.
                break;
            }
            let end = self
                .run_round(&round, resumed_now, pending, &mut interrupt)
                .await?;
            if !matches!(end, RoundsEnd::Done) {
                return Ok(end);
            }
        }
        Ok(RoundsEnd::Done)
    }

    /// One round: the runs resumed for it counted, then its jobs asked `concurrency` at a time,
    /// each finished run appended, until all are done, `interrupt` resolves or the model stops it.
    async fn run_round<'q, F: Future<Output = ()>>(
        &mut self,
        round: &[Attempt],
        resumed_now: Vec<(&'q Question, Run)>,
        pending: Vec<Job<'q>>,
        interrupt: &mut std::pin::Pin<&mut futures::future::Fuse<F>>,
    ) -> Result<RoundsEnd, EvalError> {
        let config = self.config;
        let progress = ProgressReporter::new(config, resumed_now.len() + pending.len());
        if let (Attempts::Trials { trials, .. }, Some(Attempt::Trial(k))) = (config.attempts, round.first()) {
            progress.note(&format!(
                "trial {k} of {trials}: {} not yet right",
                crate::base::output::counted(resumed_now.len() + pending.len(), "question", "questions")
            ));
        }
        let round_start = self.tally.outcomes.len();
        for (question, run) in resumed_now {
            self.resumed_errors += usize::from(run.how_stopped() == Stopped::Error);
            self.tally.record(run, question, Origin::Resumed);
        }
        progress.advance(&self.tally.outcomes[round_start..]);
        progress.restart_eta();
        let n_resumed = self.tally.outcomes.len() - round_start;
        let (plan, llm, services) = (self.plan, self.llm, self.services);
        let batcher = services.llm.batcher();
        // `--batch`: every question of the round runs at once, each open to the batcher until
        // its run ends, so a batch goes out when all of them wait on the model.
        let (concurrency, mut open) = match batcher {
            Some(batcher) => (pending.len(), batcher.open_questions(pending.len())),
            None => (config.concurrency, Vec::new()),
        };
        let jobs = pending.into_iter().map(|job| (job, open.pop()));
        let mut runs = futures::stream::iter(jobs)
            .map(|(job, open)| async move {
                let (question, mut run, failure) =
                    run_question(&plan.solver, llm, job, config.attempts, services).await;
                drop(open);
                run.fewshot_from = plan.drawn.as_ref().map(|drawn| drawn.source.clone());
                (question, run, failure)
            })
            .buffer_unordered(concurrency.max(1));
        let mut driving = std::pin::pin!(async move {
            match batcher {
                Some(batcher) => batcher.drive().await,
                None => futures::future::pending().await,
            }
        });
        let mut ticks = progress.ticks();
        let end = loop {
            tokio::select! {
                biased;
                () = &mut *interrupt => break RoundsEnd::Interrupted,
                () = llm.refused.notified() => match llm.refusal() {
                    Some(reason) => break RoundsEnd::Stopped(reason),
                    None => break RoundsEnd::Done,
                },
                _ = ticks.tick() => progress.line(&self.tally.outcomes[round_start..], n_resumed),
                () = &mut driving => {}
                finished = runs.next() => {
                    let Some((question, run, failure)) = finished else { break RoundsEnd::Done };
                    if let Some(end) = self.finished(question, run, failure, &progress, round_start)? {
                        break end;
                    }
                }
            }
        };
        drop(runs);
        progress.finish();
        Ok(end)
    }

    /// A run just finished: appended (unless it met a refusal every question would meet), told,
    /// tallied; `Some` when it stops the evaluation.
    fn finished(
        &mut self,
        question: &Question,
        mut run: Run,
        failure: Option<FailureClass>,
        progress: &ProgressReporter,
        round_start: usize,
    ) -> Result<Option<RoundsEnd>, EvalError> {
        let refusal = self.llm.refusal().filter(|_| run.error.is_some());
        if let Some(StopReason::Refused { .. }) = refusal {
            // Met the refusal (or failed beside it): not recorded, it runs next time.
            return Ok(refusal.map(RoundsEnd::Stopped));
        }
        if let Some(plan) = &self.plan.shard {
            plan.stamp(&mut run);
        }
        run.evaluation = Some(Box::new(self.plan.settings.clone()));
        // The question file's task (the examples', refused when another, are the same).
        run.task = Some(self.plan.task);
        if run.stopped == Some(Stopped::Error) {
            let transient = failure
                .as_ref()
                .is_some_and(|failure| failure.kind.is_transient());
            run.error_kind = Some(if transient {
                RunErrorKind::Transient
            } else {
                RunErrorKind::Lasting
            });
        }
        self.results.append(&run)?;
        if let Some(error) = &run.error {
            progress.note(&format!("question `{}`: {error}", question.id));
            if failure.as_ref().is_some_and(wants_wikipedia)
                && let Some(hint) = self.distractor_hint.take()
            {
                progress.note(&hint);
            }
        }
        let error = run.error.clone();
        self.tally.record(run, question, Origin::RunNow);
        progress.advance(&self.tally.outcomes[round_start..]);
        if let Some(StopReason::Unreachable { .. }) = refusal {
            // Recorded as an error that may fix itself: asked again next time.
            return Ok(refusal.map(RoundsEnd::Stopped));
        }
        Ok(self
            .streak
            .push(failure.as_ref(), error.as_deref())
            .map(RoundsEnd::Stopped))
    }
}

/// This evaluation's settings, as every line it appends records them.
fn evaluation_settings(
    config: &EvalConfig,
    services: &EvalServices,
    solver: &Solver,
    plan: Option<&shard::ShardPlan>,
    task: Task,
    questions_digest: String,
) -> Result<EvalSettings, EvalError> {
    let digest_of = |path: &Path| {
        crate::base::digest::file_digest(path).map_err(|source| EvalError::Digest {
            path: path.to_owned(),
            source,
        })
    };
    let method = config.agent.method;
    let method_config = config.agent.method_config();
    Ok(EvalSettings {
        model: services.llm.model().to_owned(),
        api: services.llm.api(),
        profile: config.agent.profile,
        method,
        sampling: method.samples().then_some(Sampling {
            samples: method_config.samples,
            temperature: method_config.sample_temperature,
            stop: method_config.sc_stop,
        }),
        generation: services.llm.generation(),
        max_steps: method.acts().then(|| config.agent.max_steps(task)),
        prompts: solver.prompt_digests(),
        tools: solver.grammar().tool_names().to_vec(),
        attempts: match config.attempts {
            Attempts::Once => AttemptsRecord::Once,
            Attempts::Trials { trials, reflect } => AttemptsRecord::Trials {
                count: trials,
                reflect,
            },
            Attempts::Epochs(epochs) => AttemptsRecord::Epochs { count: epochs },
        },
        docstore: services.docstore.info(),
        questions: questions_digest,
        selection: SelectionRecord {
            subset: config.selection.subset.map(|subset| subset.as_str().to_owned()),
            ids: config.selection.ids.as_deref().map(digest_of).transpose()?,
            limit: config.selection.limit,
            shards: plan.map(|plan| ShardSplit {
                count: plan.shard.count,
                selected: plan.selected,
            }),
        },
    })
}

/// Says what resuming did: runs set aside, asked again, settings older lines do not record, a
/// widened selection.
fn note_resumed(
    notes: &ProgressReporter,
    resumed: &resume::Resumed,
    config: &EvalConfig,
    settings: &EvalSettings,
) {
    let results = config.results.display();
    if let Some(aside) = &resumed.set_aside {
        notes.note(&format!(
            "{results} held only runs that ended in an error, made with other settings: they are kept in `{}`, and this evaluation starts afresh",
            aside.display()
        ));
    }
    if resumed.n_asked_again > 0 {
        notes.note(&format!(
            "{results}: {} in an error {}: asked again",
            crate::base::output::counted(resumed.n_asked_again, "run ended", "runs ended"),
            if config.resume == Resume::RetryErrors {
                "(`--retry-errors`)"
            } else {
                "that may fix itself"
            }
        ));
    }
    if !resumed.unknown.is_empty() {
        notes.note(&format!(
            "{results}: older lines, settings not compared: {}",
            resumed.unknown.join(", ")
        ));
    }
    if let Some(widened_from) = &resumed.widened_from {
        notes.note(&format!(
            "{results} held the evaluation of {widened_from}: it is now the evaluation of {}",
            settings.selection
        ));
    }
}

/// The rounds of an evaluation, each the attempts it makes of every question it asks: one round
/// of single attempts; one of every epoch; a round a trial, in order.
fn rounds(attempts: Attempts) -> Vec<Vec<Attempt>> {
    match attempts {
        Attempts::Once => vec![vec![Attempt::Only]],
        Attempts::Epochs(epochs) => vec![(1..=epochs).map(Attempt::Epoch).collect()],
        Attempts::Trials { trials, .. } => (1..=trials).map(|k| vec![Attempt::Trial(k)]).collect(),
    }
}

/// One attempt at a question to make: a trial after its failed `previous` one.
struct Job<'q> {
    question: &'q Question,
    attempt: Attempt,
    previous: Option<Run>,
}

/// Whether a finished run was found in the results file or made now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Resumed,
    RunNow,
}

/// The finished attempts so far, and what the next trial needs of them.
#[derive(Default)]
struct Tally {
    /// Every finished attempt, in the order finished (resumed ones first in each round).
    outcomes: Vec<Outcome>,
    origins: Vec<Origin>,
    /// Whether each errored attempt may fix itself (`None`: no error, or an older run's).
    error_kinds: Vec<Option<RunErrorKind>>,
    ids: Vec<String>,
    attempts: Vec<Attempt>,
    scores: Vec<attempts::AttemptScore>,
    /// Questions some attempt answered right.
    right: HashSet<String>,
    /// Each question's latest trial: what its next trial reflects on.
    latest: HashMap<String, Run>,
}

impl Tally {
    fn record(&mut self, run: Run, question: &Question, origin: Origin) {
        let outcome = Outcome::new(&run, question);
        if let Some(score) = &outcome.score {
            self.scores.push(attempts::AttemptScore {
                id: question.id.clone(),
                attempt: run.attempt(),
                em: score.em,
                f1: score.f1,
                answer: run.answer.clone(),
            });
            if score.em {
                self.right.insert(question.id.clone());
            }
        }
        self.outcomes.push(outcome);
        self.origins.push(origin);
        self.error_kinds.push(run.error_kind);
        self.ids.push(question.id.clone());
        self.attempts.push(run.attempt());
        if matches!(run.attempt(), Attempt::Trial(_)) {
            self.latest.insert(question.id.clone(), run);
        }
    }

    /// The summary: over every run, except trials, which count a question once — by its final
    /// state ([`attempts::Reduce::Final`]: right in any trial, else the last), its cost summed
    /// over its trials; epochs' headline is [`attempts::headline`]'s, the mean over questions of
    /// their mean over epochs.
    fn summary(&self, questions: &[Question], attempts: Attempts, mut context: SummaryContext) -> Summary {
        let outcomes: Vec<(Outcome, Origin)> = match attempts {
            Attempts::Trials { .. } => {
                let indices: Vec<usize> = (0..self.outcomes.len()).collect();
                let by_id = attempts::ByQuestion::of(&indices, |&idx| self.ids[idx].as_str());
                questions
                    .iter()
                    .filter_map(|question| by_id.groups.get(question.id.as_str()))
                    .filter_map(|trials| {
                        let seen: Vec<attempts::Seen<'_>> =
                            trials.iter().map(|&&idx| self.seen(idx)).collect();
                        let attempts::Reduced::Attempt(chosen) = attempts::Reduce::Final.reduce(&seen)?
                        else {
                            return None;
                        };
                        let idx = *trials[chosen];
                        let mut outcome = self.outcomes[idx].clone();
                        outcome.usage = crate::record::run::Usage::default();
                        outcome.n_steps = 0;
                        for &&trial in trials {
                            outcome.usage.add(&self.outcomes[trial].usage);
                            outcome.n_steps += self.outcomes[trial].n_steps;
                        }
                        Some((outcome, self.origins[idx]))
                    })
                    .collect()
            }
            Attempts::Once | Attempts::Epochs(_) => self
                .outcomes
                .iter()
                .cloned()
                .zip(self.origins.iter().copied())
                .collect(),
        };
        context.resumed = outcomes
            .iter()
            .filter(|(_, origin)| *origin == Origin::Resumed)
            .count();
        let outcomes: Vec<Outcome> = outcomes.into_iter().map(|(outcome, _)| outcome).collect();
        let mut summary = Summary::new(&outcomes, context);
        // Every figure is over the questions some attempt finished (all selected, once done).
        let attempted: HashSet<&str> = self.ids.iter().map(String::as_str).collect();
        let ids: Vec<&str> = questions
            .iter()
            .map(|question| question.id.as_str())
            .filter(|id| attempted.contains(id))
            .collect();
        summary.attempts = AttemptsSummary::of(&self.scores, &ids);
        if let Attempts::Epochs(_) = attempts {
            let indices: Vec<usize> = (0..self.outcomes.len()).collect();
            let by_id = attempts::ByQuestion::of(&indices, |&idx| self.ids[idx].as_str());
            let per_question: Vec<Vec<(attempts::Seen<'_>, AnswerScore)>> = questions
                .iter()
                .filter_map(|question| by_id.groups.get(question.id.as_str()))
                .map(|epochs| {
                    epochs
                        .iter()
                        .filter_map(|&&idx| Some((self.seen(idx), self.outcomes[idx].score?)))
                        .collect::<Vec<_>>()
                })
                .filter(|epochs| !epochs.is_empty())
                .collect();
            let per_question = attempts::headline(&per_question, &AnswerScore::WRONG);
            summary.scores = summary::mean_scores(&per_question);
            if summary.accuracy.is_some() {
                summary.accuracy = Some(summary.scores.em);
            }
        }
        summary
    }
}

impl Tally {
    /// The `idx`th finished attempt as a reduction sees it (no gold: not right).
    fn seen(&self, idx: usize) -> attempts::Seen<'_> {
        let score = self.outcomes[idx].score;
        attempts::Seen {
            attempt: self.attempts[idx],
            em: score.is_some_and(|score| score.em),
            f1: score.map_or(0.0, |score| score.f1),
            answer: None,
        }
    }
}

/// Whether a question failed for want of Wikipedia: not cached under `--offline`, or not reachable.
fn wants_wikipedia(failure: &FailureClass) -> bool {
    matches!(failure.origin, FailureOrigin::Wikipedia { .. })
        && matches!(failure.kind, FailureKind::NotCached | FailureKind::Unreachable)
}

/// The failures of the latest finished questions, while they are all of one class.
#[derive(Debug, Default)]
struct ErrorStreak {
    failure: Option<FailureClass>,
    n_questions: usize,
}

impl ErrorStreak {
    /// Counts one finished question (its failure's class and message, if it failed); the reason
    /// to stop once [`SAME_ERROR_STREAK`] in a row failed alike.
    fn push(&mut self, failure: Option<&FailureClass>, error: Option<&str>) -> Option<StopReason> {
        match failure {
            None => *self = ErrorStreak::default(),
            Some(failure) if self.failure.as_ref() == Some(failure) => self.n_questions += 1,
            Some(failure) => {
                self.failure = Some(failure.clone());
                self.n_questions = 1;
            }
        }
        if self.n_questions < SAME_ERROR_STREAK {
            return None;
        }
        Some(StopReason::Repeated {
            n_questions: self.n_questions,
            failure: self.failure.clone()?,
            error: error.unwrap_or_default().to_owned(),
        })
    }
}

/// The first 60 characters of `text`, with `…` when cut.
pub(crate) fn abbreviated(text: &str) -> String {
    crate::base::text::shorten(text, 60).into_owned()
}

/// One attempt at a question with its own docstore explorer and scratchpad; when it ends in an
/// error, the class of that error, as the question's model and environment saw it typed.
async fn run_question<'q>(
    solver: &Solver,
    llm: &dyn Llm,
    job: Job<'q>,
    attempts: Attempts,
    services: &EvalServices,
) -> (&'q Question, Run, Option<FailureClass>) {
    let question = job.question;
    // The solver ends a run at its first error, from the model or the environment: both are
    // watched, so the class seen is that of the error the run records.
    let failure = OnceLock::new();
    let llm = ClassifiedLlm {
        llm,
        failure: &failure,
    };
    let docstore = services.docstore.open(&question.context);
    let workbench = Workbench::new(docstore, services.toolbox.clone(), solver.grammar().clone());
    let mut environment = Inspected::new(workbench, |error: &EnvironmentError| {
        let _ = failure.set(FailureClass::of_environment(error));
    });
    // `--cache`: each attempt's calls are keyed by its number, so no epoch or trial is served
    // another's replies.
    let scope = Arc::new(CacheScope::new(match job.attempt {
        Attempt::Only => 1,
        Attempt::Trial(number) | Attempt::Epoch(number) => number,
    }));
    let llm = ScopedLlm::new(&llm, Arc::clone(&scope));
    // Every request the attempt sends the model server, retries and failures included.
    let solving = async {
        match (job.attempt, attempts) {
            (Attempt::Trial(trial), Attempts::Trials { reflect, .. }) => {
                solver
                    .solve_trial(
                        &llm,
                        &question.question,
                        Trial {
                            number: trial,
                            strategy: reflect,
                            previous: job.previous.as_ref(),
                        },
                        &mut environment,
                        &mut |_| {},
                    )
                    .await
            }
            _ => {
                solver
                    .solve(&llm, &question.question, &mut environment, &mut |_| {})
                    .await
            }
        }
    };
    let ((episode, requests), answered) =
        crate::llm::batch::noted(crate::llm::requests::counted(solving)).await;
    let mut run = episode.run;
    run.usage.requests = requests;
    run.record_batches(answered.batches, &answered.replies);
    run.record_cache_use(scope.cache_use());
    // Every results line names its method, `react` included.
    run.method = Some(solver.method());
    if let Attempt::Epoch(epoch) = job.attempt {
        run.epoch = Some(epoch);
        run.format = crate::record::run::RUN_FORMAT_V2.to_owned();
    }
    run.id = Some(question.id.clone());
    run.docstore = Some(services.docstore.info());
    run.gold = question.gold().map(str::to_owned);
    run.score();
    let failure = run.error.as_ref().and(failure.into_inner());
    (question, run, failure)
}

/// One question's model: notes the class of the first error.
struct ClassifiedLlm<'a> {
    llm: &'a dyn Llm,
    failure: &'a OnceLock<FailureClass>,
}

impl ClassifiedLlm<'_> {
    /// Notes the class of the first error, and passes the result on.
    fn classify<T>(&self, result: Result<T, LlmError>) -> Result<T, LlmError> {
        if let Err(error) = &result {
            let _ = self.failure.set(FailureClass::of_llm(error));
        }
        result
    }
}

impl Llm for ClassifiedLlm<'_> {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move { self.classify(self.llm.complete(request).await) })
    }

    fn converse<'a>(&'a self, request: ConverseRequest<'a>) -> BoxFuture<'a, Result<Reply, LlmError>> {
        Box::pin(async move { self.classify(self.llm.converse(request).await) })
    }

    fn sample<'a>(&'a self, request: SampleRequest<'a>) -> BoxFuture<'a, Result<Samples, LlmError>> {
        Box::pin(async move { self.classify(self.llm.sample(request).await) })
    }

    fn model(&self) -> &str {
        self.llm.model()
    }

    fn api(&self) -> Option<Api> {
        self.llm.api()
    }

    fn generation(&self) -> Option<crate::llm::Generation> {
        self.llm.generation()
    }
}
