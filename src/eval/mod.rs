//! `evaluate`: runs a question file through the agent, many questions at once, appending every
//! finished run to a results file that a re-run resumes from, and sums it up.
//!
//! [`questions`] reads the files, [`selection`] picks the questions, [`results`] is the JSON Lines
//! file that survives a crash, [`summary`] adds the outcomes up, [`score`] is the `score` command.

pub mod questions;
pub mod results;
pub mod score;
pub mod selection;
pub mod summary;

use std::collections::HashMap;
use std::future::Future;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use indicatif::{ProgressBar, ProgressStyle};

pub use questions::{Question, QuestionFile, QuestionFileError, Task};
pub use results::{ResultsError, ResultsFile};
pub use selection::{Selection, SelectionError, Subset};
pub use summary::{Outcome, Summary, SummaryContext};

use crate::action::ActionGrammar;
use crate::agent::Agent;
use crate::docstore::DocstoreSource;
use crate::environment::Workbench;
use crate::fewshot::{Fewshot, FewshotError};
use crate::llm::Llm;
use crate::metrics::AnswerScore;
use crate::profile::Profile;
use crate::prompt::{Prompt, PromptOptions};
use crate::run::Run;
use crate::tool::Toolbox;

/// How to evaluate.
#[derive(Debug, Clone)]
pub struct EvalConfig {
    pub questions: PathBuf,
    pub selection: Selection,
    pub profile: Profile,
    pub max_steps: usize,
    /// Few-shot examples instead of the task's bundled ones (HotpotQA or FEVER).
    pub fewshot: Option<PathBuf>,
    /// Questions in flight at once.
    pub concurrency: usize,
    /// The JSON Lines file every finished run is appended to, and resumed from.
    pub results: PathBuf,
    pub resume: Resume,
    pub progress: Progress,
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

/// Whether a progress bar is drawn on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    Bar,
    Hidden,
}

impl Progress {
    /// A bar when stderr is a terminal.
    pub fn for_stderr() -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::Bar
        } else {
            Progress::Hidden
        }
    }
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
    #[error("the selection holds no question")]
    NothingSelected,
}

/// Runs every selected question that the results file does not hold yet, `concurrency` at a
/// time, until all are done or `interrupt` resolves (Ctrl-C). Finished runs are on disk the
/// moment they finish; questions in flight when interrupted are dropped and run next time.
pub async fn evaluate(
    config: &EvalConfig,
    services: &EvalServices,
    interrupt: impl Future<Output = ()>,
) -> Result<Summary, EvalError> {
    let started = Instant::now();
    let file = QuestionFile::read(&config.questions)?;
    let task = file.task;
    let questions = config.selection.apply(file)?;
    if questions.is_empty() {
        return Err(EvalError::NothingSelected);
    }
    if config.resume == Resume::RetryErrors {
        ResultsFile::drop_errors(&config.results)?;
    }
    let (mut results, stored) = ResultsFile::open(&config.results)?;
    let progress = ProgressReporter::new(config.progress, questions.len());
    if stored.torn_bytes > 0 {
        progress.note(&format!(
            "{}: dropped a torn last line ({} bytes) left by an interrupted write",
            config.results.display(),
            stored.torn_bytes
        ));
    }

    let mut stored_by_id: HashMap<String, Run> = stored
        .runs
        .into_iter()
        .filter_map(|run| Some((run.id.clone()?, run)))
        .collect();
    let mut outcomes = Vec::with_capacity(questions.len());
    let mut pending = Vec::new();
    for question in &questions {
        match stored_by_id.remove(&question.id) {
            Some(run) => {
                note_other_settings(&progress, &run, config, services.llm.model());
                outcomes.push(Outcome::new(&run, question));
            }
            None => pending.push(question),
        }
    }
    drop(stored_by_id);
    let resumed = outcomes.len();
    progress.advance(&outcomes);
    progress.restart_eta();

    let fewshot = match (&config.fewshot, task) {
        (Some(path), _) => Fewshot::from_file(path)?,
        (None, Task::HotpotQa) => Fewshot::hotpotqa(),
        (None, Task::Fever) => Fewshot::fever(),
    };
    let prompt = Prompt::new(
        config.profile,
        &fewshot,
        &services.toolbox,
        &PromptOptions::default(),
    );
    let grammar = ActionGrammar::new(config.profile, services.toolbox.names());
    let agent = Agent::new(services.llm.as_ref(), &prompt, &grammar, config.max_steps);

    let mut runs = futures::stream::iter(pending)
        .map(|question| run_question(&agent, question, services, &grammar))
        .buffer_unordered(config.concurrency.max(1));
    let mut interrupt = std::pin::pin!(interrupt.fuse());
    let mut interrupted = false;
    loop {
        tokio::select! {
            biased;
            () = &mut interrupt => {
                interrupted = true;
                break;
            }
            finished = runs.next() => {
                let Some((question, run)) = finished else { break };
                results.append(&run)?;
                if let Some(error) = &run.error {
                    progress.note(&format!("question `{}`: {error}", question.id));
                }
                outcomes.push(Outcome::new(&run, question));
                progress.advance(&outcomes);
            }
        }
    }
    drop(runs);
    progress.finish();
    if interrupted {
        progress.note(&format!(
            "interrupted: {} of {} questions done; run the same command again to resume from {}",
            outcomes.len(),
            questions.len(),
            config.results.display()
        ));
    }
    Ok(Summary::new(
        &outcomes,
        SummaryContext {
            task,
            selected: questions.len(),
            resumed,
            interrupted,
            wall_time: started.elapsed(),
            results: config.results.clone(),
        },
    ))
}

/// One question with its own docstore explorer and scratchpad.
async fn run_question<'q>(
    agent: &Agent<'_>,
    question: &'q Question,
    services: &EvalServices,
    grammar: &ActionGrammar,
) -> (&'q Question, Run) {
    let docstore = services.docstore.open(&question.context);
    let mut workbench = Workbench::new(docstore, services.toolbox.clone(), grammar.clone());
    let episode = agent.run(&question.question, &mut workbench, &mut |_| {}).await;
    let mut run = episode.run;
    run.id = Some(question.id.clone());
    run.gold = question.gold().map(str::to_owned);
    run.score();
    (question, run)
}

/// Says once when the results file holds runs made with another model or profile.
fn note_other_settings(progress: &ProgressReporter, run: &Run, config: &EvalConfig, model: &str) {
    let other_model = run.model.as_deref().is_some_and(|recorded| recorded != model);
    if (other_model || run.profile != config.profile) && !progress.warned_settings.replace(true) {
        progress.note(&format!(
            "{} holds runs of model `{}`, profile `{}`: they are kept, not re-run (this run: model `{model}`, profile `{}`)",
            config.results.display(),
            run.model.as_deref().unwrap_or("?"),
            run.profile,
            config.profile
        ));
    }
}

/// The progress bar (or nothing), and notes on stderr that do not tear it.
struct ProgressReporter {
    bar: Option<ProgressBar>,
    warned_settings: std::cell::Cell<bool>,
}

impl ProgressReporter {
    fn new(progress: Progress, n_questions: usize) -> ProgressReporter {
        let bar = match progress {
            Progress::Hidden => None,
            Progress::Bar => {
                let bar = ProgressBar::new(n_questions as u64);
                let style = ProgressStyle::with_template(
                    "{elapsed_precise} [{wide_bar}] {pos}/{len} {msg} ETA {eta}",
                )
                // invariant: the template is a literal (every run with a bar builds it)
                .expect("the progress template is valid")
                .progress_chars("=> ");
                bar.set_style(style);
                bar.enable_steady_tick(Duration::from_millis(500));
                Some(bar)
            }
        };
        ProgressReporter {
            bar,
            warned_settings: std::cell::Cell::new(false),
        }
    }

    fn advance(&self, outcomes: &[Outcome]) {
        let Some(bar) = &self.bar else { return };
        bar.set_position(outcomes.len() as u64);
        let scores: Vec<&AnswerScore> = outcomes
            .iter()
            .filter_map(|outcome| outcome.score.as_ref())
            .collect();
        if !scores.is_empty() {
            let n = scores.len() as f64;
            let em = scores.iter().filter(|score| score.em).count() as f64 / n;
            let f1 = scores.iter().map(|score| score.f1).sum::<f64>() / n;
            bar.set_message(format!("EM {em:.3} F1 {f1:.3}"));
        }
    }

    /// The ETA counts only questions run now, not the resumed ones.
    fn restart_eta(&self) {
        if let Some(bar) = &self.bar {
            bar.reset_eta();
        }
    }

    fn note(&self, message: &str) {
        match &self.bar {
            Some(bar) => bar.println(message),
            None => eprintln!("{message}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
