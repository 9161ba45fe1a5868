//! `ask`: one question from the command line — the live trace on stderr, the answer (or the run as
//! JSON) on stdout, and optionally the run file for `replay`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::environment::Workbench;
use crate::agent::prompt::PromptOptions;
use crate::agent::trace::TracePrinter;
use crate::base::fsutil::AtomicFile;
use crate::docstore::DocstoreSource;
use crate::llm::Llm;
use crate::llm::cache::{CacheScope, ScopedLlm};
use crate::tools::Toolbox;

use crate::record::run::{Run, RunFileError, Stopped};
use crate::solver::setup::{AgentSetup, ExtraTools, SetupError};
use crate::solver::{Examples, Solver, SolverError};
use crate::trajectories::Excluded;
use crate::trajectories::fewshot_from::{FewshotFrom, FewshotFromError, OtherExamples};

/// What `ask` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskOutput {
    /// The final answer alone on a line.
    Answer,
    /// The run, as pretty-printed JSON.
    Run,
}

/// How the agent is set up for `ask` and `chat`: what `eval` shares ([`AgentSetup`]), with the
/// examples and the prompt's options.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub setup: AgentSetup,
    pub examples: Examples,
    pub prompt_options: PromptOptions,
}

impl AgentConfig {
    /// The method set up with these examples and tools: built once, before any model call.
    pub fn solver(&self, toolbox: &Toolbox) -> Result<Solver, SolverError> {
        let task = self.examples.task();
        let max_steps = self.setup.max_steps(task);
        Solver::new(
            &self.setup.method_config(),
            self.setup.profile,
            &self.examples,
            toolbox,
            &self.prompt_options,
            max_steps,
        )
    }
}

/// One `ask`.
#[derive(Debug, Clone)]
pub struct AskConfig {
    pub question: String,
    pub agent: AgentConfig,
    pub output: AskOutput,
    /// Where to write the run file.
    pub record: Option<PathBuf>,
    /// Examples drawn from earlier runs (`--fewshot-from`), written beside `record`.
    pub fewshot_from: Option<FewshotFrom>,
}

/// How a run ended, for the exit code: 0 answered, 1 ran but no answer, 2 error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskOutcome {
    Answered,
    Unanswered,
    Failed,
}

impl AskOutcome {
    pub fn of(run: &Run) -> AskOutcome {
        match (run.stopped, run.answer.as_deref()) {
            (Some(Stopped::Error), _) => AskOutcome::Failed,
            (_, Some(answer)) if !answer.trim().is_empty() => AskOutcome::Answered,
            _ => AskOutcome::Unanswered,
        }
    }

    pub fn exit_code(self) -> u8 {
        match self {
            AskOutcome::Answered => 0,
            AskOutcome::Unanswered => 1,
            AskOutcome::Failed => 2,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(transparent)]
    Question(#[from] QuestionError),
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Method(#[from] SolverError),
    #[error(transparent)]
    FewshotFrom(#[from] FewshotFromError),
    #[error(
        "`--fewshot-from` writes the examples it draws beside the run file, so that the run replays: give `--record FILE`"
    )]
    FewshotFromNeedsRecord,
    /// `--record`'s path cannot be written: found before the model is called, or, when the
    /// directory changed during the run, after the answer was printed.
    #[error(transparent)]
    Record(#[from] RunFileError),
    #[error("cannot write the answer to stdout")]
    Stdout(#[source] std::io::Error),
}

/// A question no model call can answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    #[error("the question is empty")]
    Empty,
}

/// `question`, unless it is empty or only whitespace: what the command line accepts as a question.
pub fn check_question(question: &str) -> Result<String, QuestionError> {
    if question.trim().is_empty() {
        return Err(QuestionError::Empty);
    }
    Ok(question.to_owned())
}

/// Checks that a run file can be written at `path` before anything is paid for: the temporary
/// file [`Run::write`] will write (an [`AtomicFile`] beside it) is created and removed again.
pub fn check_record_path(path: &Path) -> Result<(), RunFileError> {
    let write_error = |source| RunFileError::Write {
        path: path.to_owned(),
        source,
    };
    if path.is_dir() {
        return Err(write_error(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "it is a directory",
        )));
    }
    // Dropped uncommitted, the probe is removed again.
    AtomicFile::create(path).map(drop).map_err(write_error)
}

/// Runs one question with `solver`'s method, `llm`, a fresh explorer of `docstore` and `toolbox`,
/// tracing as it goes. The run is returned whatever happened; an infrastructure failure is in
/// `run.error`.
pub async fn run_question(
    question: &str,
    solver: &Solver,
    llm: &dyn Llm,
    docstore: &dyn DocstoreSource,
    toolbox: &Toolbox,
    trace: &mut TracePrinter,
) -> Run {
    let mut workbench = Workbench::new(docstore.open(&[]), toolbox.clone(), solver.grammar().clone());
    let scope = Arc::new(CacheScope::new(1));
    let llm = ScopedLlm::new(llm, Arc::clone(&scope));
    let (episode, requests) =
        crate::llm::requests::counted(
            solver.solve(&llm, question, &mut workbench, &mut |event| trace.event(event)),
        )
        .await;
    let mut run = episode.run;
    run.usage.requests = requests;
    run.docstore = Some(docstore.info());
    run.record_cache_use(scope.cache_use());
    run
}

/// `react-docstore ask`: answers the question, prints the answer (or the run) on stdout and writes
/// the run file when asked to. An empty question and a `record` path that cannot be written are
/// refused before the model is called; should the run file still fail to be written at the end,
/// the answer is printed first.
pub async fn ask(
    config: &AskConfig,
    llm: &dyn Llm,
    docstore: &dyn DocstoreSource,
    toolbox: &Toolbox,
    stdout: &mut dyn Write,
    trace: &mut TracePrinter,
) -> Result<Run, AskError> {
    check_question(&config.question)?;
    config.agent.setup.check(llm.api(), ExtraTools::of(toolbox))?;
    if let Some(path) = &config.record {
        check_record_path(path)?;
    }
    let drawn = match (&config.fewshot_from, &config.record) {
        (None, _) => None,
        (Some(_), None) => return Err(AskError::FewshotFromNeedsRecord),
        (Some(from), Some(record)) => {
            let mut excluded = Excluded::default();
            excluded.insert_question(&config.question);
            let task = config.agent.examples.task();
            let method = config.agent.setup.method;
            Some(
                from.draw(
                    method,
                    task,
                    config.agent.setup.profile,
                    &excluded,
                    record,
                    OtherExamples::Replace,
                )
                .await?,
            )
        }
    };
    let solver = match &drawn {
        Some(drawn) => AgentConfig {
            examples: Examples::Files(vec![drawn.fewshot.clone()]),
            ..config.agent.clone()
        }
        .solver(toolbox)?,
        None => config.agent.solver(toolbox)?,
    };
    trace.header("Question:", &config.question);
    let mut run = run_question(&config.question, &solver, llm, docstore, toolbox, trace).await;
    run.fewshot_from = drawn.map(|drawn| drawn.source);
    let answer = run.answer.as_deref().unwrap_or("");
    match AskOutcome::of(&run) {
        AskOutcome::Answered => trace.header("Answer:", answer),
        AskOutcome::Unanswered => trace.note(&format!(
            "no answer: the run stopped at {}",
            run.stopped.map_or("its start", Stopped::as_str)
        )),
        AskOutcome::Failed => {}
    }
    match config.output {
        AskOutput::Answer if AskOutcome::of(&run) == AskOutcome::Answered => writeln!(stdout, "{answer}"),
        AskOutput::Answer => Ok(()),
        AskOutput::Run => serde_json::to_writer_pretty(&mut *stdout, &run)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(stdout)),
    }
    .and_then(|()| stdout.flush())
    .map_err(AskError::Stdout)?;
    if let Some(path) = &config.record {
        run.write(path)?;
    }
    Ok(run)
}
