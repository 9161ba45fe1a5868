//! `chat`: a conversation whose follow-ups are rewritten into standalone questions, then answered.

use std::process::ExitCode;

use crate::agent::trace::TracePrinter;
use crate::apps::chat::{self, ChatConfig, ChatOutput};
use crate::base::output;
use crate::docstore::Opener;

use super::options::{AgentRunArgs, DefaultDate, ShowReasoningArgs, TodayArgs, stdin_interaction};

/// Who opens the docstore, as its refusals name it.
const CHAT: Opener = Opener::Command("chat");

#[derive(clap::Args)]
pub struct ChatArgs {
    #[command(flatten)]
    today: TodayArgs,
    /// Print each question's run as one JSON line instead of its answer.
    #[arg(long, help_heading = "Output")]
    json: bool,
    #[command(flatten, next_help_heading = "Output")]
    reasoning: ShowReasoningArgs,
    #[command(flatten)]
    run: AgentRunArgs,
}

pub async fn run(args: ChatArgs) -> anyhow::Result<ExitCode> {
    args.run.check(CHAT)?;
    let llm = args.run.open_model()?;
    let docstore = args.run.open_docstore(CHAT)?;
    let toolbox = args.run.open_tools()?;
    let config = ChatConfig {
        agent: args
            .run
            .agent
            .config(args.today.prompt_options(DefaultDate::TodayUtc))?,
        interaction: stdin_interaction(),
        output: if args.json {
            ChatOutput::Run
        } else {
            ChatOutput::Answer
        },
    };
    let mut stdin = std::io::stdin().lock();
    let mut stdout = output::stdout();
    let mut trace = TracePrinter::stderr().showing_reasoning(args.reasoning.shown());
    let summary = chat::chat(
        &config,
        &llm,
        docstore.as_ref(),
        &toolbox,
        &mut stdin,
        &mut stdout,
        &mut trace,
    )
    .await?;
    Ok(ExitCode::from(summary.exit_code()))
}
