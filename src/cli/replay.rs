//! `replay`: recorded runs (run files, results files, directories of them) re-run offline.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::agent::action::ActionGrammar;
use crate::agent::environment::{Environment, Workbench};
use crate::agent::trace::{Flush, TracePrinter};
use crate::apps::replay::{self, Output, ReplayConfig, ToolsOnly};
use crate::base::output::{self, Destinations};
use crate::base::profile::Profile;
use crate::docstore::{DocstoreKind, Opener};
use crate::record::run::Run;

use super::options::{DocstoreArgs, FetchArgs, PricesArg, ShowReasoningArgs, ToolArgs};

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
    #[command(flatten)]
    prices: PricesArg,
    #[command(flatten)]
    reasoning: ShowReasoningArgs,
    /// Where steps without a recorded observation are observed.
    #[command(flatten)]
    docstore: ReplayDocstoreArgs,
    /// The tools that observe recorded tool actions without an observation.
    #[command(flatten)]
    tools: ToolArgs,
}

/// The docstore options of the other commands, except that `--docstore` has no default: replay
/// reaches no docstore (and so no network) unless it is given.
#[derive(clap::Args)]
struct ReplayDocstoreArgs {
    /// Observe steps that have no recorded observation with this docstore: `wikipedia`,
    /// `corpus:FILE` or `index:DIR` (a corpus or an index must be the snapshot the runs were
    /// recorded against, when they say). Without it, such a step ends its run in an error.
    #[arg(long, value_name = "DOCSTORE")]
    docstore: Option<DocstoreKind>,
    #[command(flatten)]
    fetch: FetchArgs,
}

/// Who opens the docstore, as its refusals name it.
const REPLAY: Opener = Opener::Command("replay");

pub async fn run(args: ReplayArgs) -> anyhow::Result<ExitCode> {
    // A bad price file is named before any run is replayed.
    let prices = args.prices.read()?;
    let toolbox = args.tools.open(&args.docstore.fetch)?;
    // Steps without a recorded observation are observed live, under each run's profile, only
    // by a docstore given on the command line (and the tools given there).
    let sources = match &args.docstore.docstore {
        Some(kind) => {
            let docstore = DocstoreArgs {
                docstore: kind.clone(),
                fetch: args.docstore.fetch.clone(),
            };
            Some(docstore.config(Profile::Default).open_for(REPLAY)?.sources())
        }
        None => None,
    };
    let config = ReplayConfig {
        paths: args.runs,
        output: if args.json { Output::Json } else { Output::Text },
        profile: args.profile,
        max_steps: args.max_steps,
        docstore: sources
            .as_ref()
            .map(|sources| sources.get(Profile::Default).info()),
        prices,
    };
    // Nothing a replay does waits unless a run's step goes to a live docstore or tool: then
    // its trace is written as it comes, else once a run (or, when stdout goes elsewhere, where
    // the order of the two cannot be seen, when the buffer is full).
    let flush = match (sources.is_none() && toolbox.is_empty(), output::destinations()) {
        (false, _) => Flush::EachLine,
        (true, Destinations::One) => Flush::EachRun,
        (true, Destinations::Two) => Flush::WhenFull,
    };
    let live = move |_run: &Run, grammar: &ActionGrammar| -> Option<Box<dyn Environment>> {
        match &sources {
            Some(sources) => Some(Box::new(Workbench::new(
                sources.get(grammar.profile()).open(&[]),
                toolbox.clone(),
                grammar.clone(),
            ))),
            None if toolbox.is_empty() => None,
            None => Some(Box::new(ToolsOnly::new(toolbox.clone()))),
        }
    };
    let mut trace = TracePrinter::stderr()
        .flushed(flush)
        .showing_reasoning(args.reasoning.shown());
    let summary = match flush {
        // Nobody sees the order of the two streams: stdout too is written in large blocks.
        Flush::WhenFull => {
            let mut stdout = std::io::BufWriter::with_capacity(64 * 1024, output::stdout());
            let summary = replay::replay(&config, &live, &mut stdout, &mut trace).await?;
            stdout.flush()?;
            summary
        }
        Flush::EachLine | Flush::EachRun => {
            replay::replay(&config, &live, &mut output::stdout(), &mut trace).await?
        }
    };
    Ok(ExitCode::from(summary.exit_code()))
}
