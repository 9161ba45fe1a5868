//! `chat`: a conversation whose follow-ups are rewritten into standalone questions, then answered.

use std::process::ExitCode;

use crate::agent::prompt::PromptOptions;
use crate::agent::trace::TracePrinter;
use crate::apps::chat::{self, ChatConfig, ChatOutput};
use crate::base::output;
use crate::docstore::Opener;

use super::options::{AgentRunArgs, shown_reasoning, stdin_interaction};

/// Who opens the docstore, as its refusals name it.
const CHAT: Opener = Opener::Command("chat");

#[derive(clap::Args)]
pub struct ChatArgs {
    /// The date the prompt states (`Today is {date}.`, YYYY-MM-DD); default: today (UTC).
    #[arg(long, value_name = "DATE", value_parser = chat::check_date, help_heading = "Agent")]
    today: Option<String>,
    /// Print each question's run as one JSON line instead of its answer.
    #[arg(long, help_heading = "Output")]
    json: bool,
    /// Print the model's reasoning whole in the trace (by default one dimmed line, cut short).
    #[arg(long, help_heading = "Output")]
    show_reasoning: bool,
    #[command(flatten)]
    run: AgentRunArgs,
}

pub async fn run(args: ChatArgs) -> anyhow::Result<ExitCode> {
    args.run.check(CHAT)?;
    let llm = args.run.open_model()?;
    let docstore = args.run.open_docstore(CHAT)?;
    let toolbox = args.run.open_tools()?;
    let today = args.today.unwrap_or_else(chat::today_utc);
    let config = ChatConfig {
        agent: args.run.agent.config(PromptOptions { today: Some(today) })?,
        interaction: stdin_interaction(),
        output: if args.json {
            ChatOutput::Run
        } else {
            ChatOutput::Answer
        },
    };
    let mut stdin = std::io::stdin().lock();
    let mut stdout = output::stdout();
    let mut trace = TracePrinter::stderr().showing_reasoning(shown_reasoning(args.show_reasoning));
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
