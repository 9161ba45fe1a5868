//! `ask`: answer one question, the trace on stderr and the answer (or the run) on stdout.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::agent::trace::TracePrinter;
use crate::apps::ask::{self, AskConfig, AskOutcome, AskOutput};
use crate::base::output;
use crate::docstore::Opener;

use super::options::{AgentRunArgs, DefaultDate, FewshotFromArgs, ShowReasoningArgs, TodayArgs};

/// Who opens the docstore, as its refusals name it.
const ASK: Opener = Opener::Command("ask");

#[derive(clap::Args)]
pub struct AskArgs {
    /// The question to answer, in one argument (quote it); the trace goes to stderr, the answer
    /// to stdout.
    #[arg(value_parser = ask::check_question)]
    question: String,
    #[command(flatten)]
    run: AgentRunArgs,
    #[command(flatten)]
    fewshot_from: FewshotFromArgs,
    /// Print the run as JSON on stdout.
    #[arg(long, help_heading = "Output")]
    json: bool,
    #[command(flatten, next_help_heading = "Output")]
    reasoning: ShowReasoningArgs,
    /// Write the run file (`react-docstore.run.v1`) here, for `replay`.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    record: Option<PathBuf>,
    #[command(flatten)]
    today: TodayArgs,
}

pub async fn run(args: AskArgs) -> anyhow::Result<ExitCode> {
    args.run.check(ASK)?;
    let llm = args.run.open_model()?;
    let docstore = args.run.open_docstore(ASK)?;
    let toolbox = args.run.open_tools()?;
    let config = AskConfig {
        question: args.question,
        agent: args
            .run
            .agent
            .config(args.today.prompt_options(DefaultDate::None))?,
        output: if args.json {
            AskOutput::Run
        } else {
            AskOutput::Answer
        },
        record: args.record,
        fewshot_from: args.fewshot_from.open()?,
    };
    let mut stdout = output::stdout();
    let mut trace = TracePrinter::stderr().showing_reasoning(args.reasoning.shown());
    let run = ask::ask(
        &config,
        &llm,
        docstore.as_ref(),
        &toolbox,
        &mut stdout,
        &mut trace,
    )
    .await?;
    if let Some(error) = &run.error {
        let _ = writeln!(output::stderr(), "error: {error}");
    }
    Ok(ExitCode::from(AskOutcome::of(&run).exit_code()))
}
