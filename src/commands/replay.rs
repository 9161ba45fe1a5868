//! `replay`: recorded runs (run files, results files, directories of them) re-run offline.

use std::path::PathBuf;
use std::process::ExitCode;

use react_docstore::environment::{Environment, Workbench};
use react_docstore::output;
use react_docstore::replay::{self, Output, ReplayConfig};
use react_docstore::trace::TracePrinter;
use react_docstore::{ActionGrammar, Profile, Run};

use super::options::{DocstoreArgs, ToolArgs};

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// Run files (a run, or JSON Lines of runs such as an eval results file), or directories whose
    /// `*.json` and `*.jsonl` files are replayed, recursively, in name order.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// Replay under this profile instead of the one each run recorded.
    #[arg(long, value_name = "PROFILE")]
    profile: Option<Profile>,
    /// Replay with this step budget instead of the one each run recorded.
    #[arg(long, value_name = "N")]
    max_steps: Option<usize>,
    /// Print each run as a JSON line, then a summary line.
    #[arg(long)]
    json: bool,
    /// Where steps without a recorded observation are observed.
    #[command(flatten)]
    docstore: DocstoreArgs,
    /// The tools that observe recorded tool actions without an observation.
    #[command(flatten)]
    tools: ToolArgs,
}

pub async fn run(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    args.docstore.check_not_distractor("replay")?;
    let config = ReplayConfig {
        paths: args.runs,
        output: if args.json { Output::Json } else { Output::Text },
        profile: args.profile,
        max_steps: args.max_steps,
    };
    // Steps without a recorded observation are observed live, under each run's profile.
    let sources = args.docstore.config(Profile::Default).open_sources()?;
    let toolbox = args.tools.open(&args.docstore)?;
    let live = move |_run: &Run, grammar: &ActionGrammar| -> Option<Box<dyn Environment>> {
        let source = sources.get(grammar.profile());
        Some(Box::new(Workbench::new(
            source.open(&[]),
            toolbox.clone(),
            grammar.clone(),
        )))
    };
    let mut stdout = output::stdout();
    let mut trace = TracePrinter::stderr();
    let summary = replay::replay(&config, &live, &mut stdout, &mut trace).await?;
    Ok(ExitCode::from(summary.exit_code()))
}
