//! `ask`: answer one question, the trace on stderr and the answer (or the run) on stdout.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::agent::prompt::PromptOptions;
use crate::agent::trace::TracePrinter;
use crate::apps::ask::{self, AskConfig, AskOutcome, AskOutput};
use crate::apps::chat;
use crate::base::output;
use crate::docstore::Opener;

use super::options::{AgentRunArgs, FewshotFromArgs, shown_reasoning};

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
    /// Print the model's reasoning whole in the trace (by default one dimmed line, cut short).
    #[arg(long, help_heading = "Output")]
    show_reasoning: bool,
    /// Write the run file (`react-docstore.run.v1`) here, for `replay`.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    record: Option<PathBuf>,
    /// State the date in the prompt (`Today is DATE.`, DATE as YYYY-MM-DD), so the model does not
    /// argue with current facts.
    #[arg(long, value_name = "DATE", value_parser = chat::check_date, help_heading = "Agent")]
    today: Option<String>,
}

pub async fn run(args: AskArgs) -> anyhow::Result<ExitCode> {
    args.run.check(ASK)?;
    let llm = args.run.open_model()?;
    let docstore = args.run.open_docstore(ASK)?;
    let toolbox = args.run.open_tools()?;
    let config = AskConfig {
        question: args.question,
        agent: args.run.agent.config(PromptOptions { today: args.today })?,
        output: if args.json {
            AskOutput::Run
        } else {
            AskOutput::Answer
        },
        record: args.record,
        fewshot_from: args.fewshot_from.open()?,
    };
    let mut stdout = output::stdout();
    let mut trace = TracePrinter::stderr().showing_reasoning(shown_reasoning(args.show_reasoning));
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
