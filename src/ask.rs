//! `ask`: one question from the command line — the live trace on stderr, the answer (or the run as
//! JSON) on stdout, and optionally the run file for `replay`.

use std::io::Write;
use std::path::PathBuf;

use crate::action::ActionGrammar;
use crate::agent::Agent;
use crate::docstore::DocstoreSource;
use crate::environment::Workbench;
use crate::fewshot::Fewshot;
use crate::llm::Llm;
use crate::profile::Profile;
use crate::prompt::{Prompt, PromptOptions};
use crate::run::{Run, RunFileError, Stopped};
use crate::tool::Toolbox;
use crate::trace::TracePrinter;

/// What `ask` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskOutput {
    /// The final answer alone on a line.
    Answer,
    /// The run, as pretty-printed JSON.
    Run,
}

/// How the agent is set up: shared by `ask` and `chat`.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub profile: Profile,
    pub max_steps: usize,
    pub fewshot: Fewshot,
    pub prompt_options: PromptOptions,
}

/// One `ask`.
#[derive(Debug, Clone)]
pub struct AskConfig {
    pub question: String,
    pub agent: AgentConfig,
    pub output: AskOutput,
    /// Where to write the run file.
    pub record: Option<PathBuf>,
}

/// How a run ended, for the exit code: 0 answered, 1 ran but no answer, 2 error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Answered,
    Unanswered,
    Failed,
}

impl Outcome {
    pub fn of(run: &Run) -> Outcome {
        match (run.stopped, run.answer.as_deref()) {
            (Some(Stopped::Error), _) => Outcome::Failed,
            (_, Some(answer)) if !answer.trim().is_empty() => Outcome::Answered,
            _ => Outcome::Unanswered,
        }
    }

    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Answered => 0,
            Outcome::Unanswered => 1,
            Outcome::Failed => 2,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error(transparent)]
    Record(#[from] RunFileError),
    #[error("cannot write the answer to stdout")]
    Stdout(#[source] std::io::Error),
}

/// Runs one question with `llm`, a fresh explorer of `docstore` and `toolbox`, tracing as it goes.
/// The run is returned whatever happened; an infrastructure failure is in `run.error`.
pub async fn run_question(
    question: &str,
    config: &AgentConfig,
    llm: &dyn Llm,
    docstore: &dyn DocstoreSource,
    toolbox: &Toolbox,
    trace: &mut TracePrinter,
) -> Run {
    let grammar = ActionGrammar::new(config.profile, toolbox.names());
    let prompt = Prompt::new(config.profile, &config.fewshot, toolbox, &config.prompt_options);
    let mut workbench = Workbench::new(docstore.open(&[]), toolbox.clone(), grammar.clone());
    let agent = Agent::new(llm, &prompt, &grammar, config.max_steps);
    let episode = agent
        .run(question, &mut workbench, &mut |event| trace.event(event))
        .await;
    let mut run = episode.run;
    run.docstore = Some(docstore.info());
    run
}

/// `react-docstore ask`: answers the question, prints the answer (or the run) on stdout and writes
/// the run file when asked to.
pub async fn ask(
    config: &AskConfig,
    llm: &dyn Llm,
    docstore: &dyn DocstoreSource,
    toolbox: &Toolbox,
    stdout: &mut dyn Write,
    trace: &mut TracePrinter,
) -> Result<Run, AskError> {
    trace.header("Question:", &config.question);
    let run = run_question(&config.question, &config.agent, llm, docstore, toolbox, trace).await;
    if let Some(path) = &config.record {
        run.write(path)?;
    }
    let answer = run.answer.as_deref().unwrap_or("");
    match Outcome::of(&run) {
        Outcome::Answered => trace.header("Answer:", answer),
        Outcome::Unanswered => trace.note(&format!(
            "no answer: the run stopped at {}",
            run.stopped.map_or("its start", Stopped::as_str)
        )),
        Outcome::Failed => {}
    }
    match config.output {
        AskOutput::Answer if Outcome::of(&run) == Outcome::Answered => writeln!(stdout, "{answer}"),
        AskOutput::Answer => Ok(()),
        AskOutput::Run => {
            let json = serde_json::to_string_pretty(&run).expect("a run always serializes");
            writeln!(stdout, "{json}")
        }
    }
    .map_err(AskError::Stdout)?;
    Ok(run)
}
