//! The `react-docstore` binary: parses the command line and hands over to the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use react_docstore::Profile;
use react_docstore::replay::{self, Output, ReplayConfig};
use react_docstore::trace::TracePrinter;

#[derive(Parser)]
#[command(name = "react-docstore", version, about = "A few-shot ReAct agent over Wikipedia")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay run files (or directories of them) offline.
    Replay(ReplayArgs),
}

#[derive(Args)]
struct ReplayArgs {
    /// Run files, or directories whose `*.json` files are replayed in name order.
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return report(&anyhow::Error::new(error).context("cannot start the async runtime")),
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(error) => report(&error),
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Replay(args) => {
            let config = ReplayConfig {
                paths: args.runs,
                output: if args.json { Output::Json } else { Output::Text },
                profile: args.profile,
                max_steps: args.max_steps,
            };
            let mut stdout = std::io::stdout().lock();
            let mut trace = TracePrinter::stderr();
            let summary = replay::replay(&config, &|_, _| None, &mut stdout, &mut trace).await?;
            Ok(if summary.n_answered > 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

fn report(error: &anyhow::Error) -> ExitCode {
    eprintln!("error: {error:#}");
    ExitCode::from(2)
}
