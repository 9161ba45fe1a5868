//! The command line: one module per command, its arguments (clap) and the code that runs it;
//! `options` holds the option groups several commands share. The top layer: `main.rs` calls
//! [`main`], and the Python package's `react-docstore` script calls [`run`].

mod options;
mod progress;
mod signals;

mod ask;
mod cache;
mod chat;
mod compare;
mod eval;
mod explore;
mod export;
mod index;
mod mcp;
mod merge;
mod replay;
mod report;
mod score;
mod serve;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::agent::trace::{Color, LogFormat, LogOutput};
use crate::base::output;

#[derive(Parser)]
#[command(
    name = "react-docstore",
    version,
    about = "A few-shot ReAct agent over Wikipedia"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Answer one question: the trace on stderr, the answer on stdout.
    Ask(ask::AskArgs),
    /// Converse: follow-ups are rewritten into standalone questions, then answered.
    Chat(chat::ChatArgs),
    /// Replay run files (or directories of them) offline.
    Replay(replay::ReplayArgs),
    /// Evaluate a question file: EM/F1 summary on stdout.
    Eval(eval::EvalArgs),
    /// Run Search[...] / Lookup[...] (and tool actions) by hand against a docstore.
    Explore(explore::ExploreArgs),
    /// The official HotpotQA EM/F1 of a predictions file against a gold file.
    Score(score::ScoreArgs),
    /// Pair two results files by question id: counts, differences with intervals, McNemar's p.
    Compare(compare::CompareArgs),
    /// Write one self-contained HTML page of one or more results files.
    Report(report::ReportArgs),
    /// Merge an evaluation's shards (results files, or directories of them) into one results file.
    Merge(merge::MergeArgs),
    /// Write results files as fine-tuning data: OpenAI chat, Alpaca or ShareGPT.
    Export(export::ExportArgs),
    /// Index a frozen Wikipedia dump for `--docstore index:DIR`, or say what an index holds.
    #[command(subcommand)]
    Index(index::IndexCommand),
    /// What the reply cache (`--cache`) holds; remove all or the old part of it.
    #[command(subcommand)]
    Cache(cache::CacheCommand),
    /// Serve the docstore over HTTP: the ReAct environment, DSPy's and Search-R1's retrieval.
    Serve(serve::ServeArgs),
    /// Serve the docstore to MCP clients on stdio: tools `search` {query} and `lookup` {keyword}.
    Mcp(mcp::McpArgs),
}

pub fn main() -> ExitCode {
    run(std::env::args_os())
}

/// The command line run on `args` (the program name first), as the binary runs it: the Python
/// package's `react-docstore` script calls this.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    // `--help`, `--version` and a refused command line print as clap prints them and return its
    // status, without ending the process (the Python module runs this in an interpreter).
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(error) => {
            let error = options::explain_cache_word(error, &args);
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    // Log lines go to stderr, above `eval`'s progress bar while it is drawn.
    let log = LogOutput::stderr();
    // Warnings (a model server being retried) by default, each one plain line; `RUST_LOG=debug`
    // for more.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(log.clone())
        .with_ansi(Color::for_stderr() == Color::Always)
        .event_format(LogFormat::default())
        .try_init()
        // A second run in one process (the Python module) keeps the first run's subscriber.
        .ok();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return report(&anyhow::Error::new(error).context("cannot start the async runtime")),
    };
    match runtime.block_on(dispatch(cli.command, log)) {
        Ok(code) => code,
        Err(error) => report(&error),
    }
}

async fn dispatch(command: Command, log: LogOutput) -> anyhow::Result<ExitCode> {
    match command {
        Command::Ask(args) => ask::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Replay(args) => replay::run(args).await,
        Command::Eval(args) => eval::run(args, log).await,
        Command::Explore(args) => explore::run(args).await,
        Command::Score(args) => score::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Report(args) => report::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Export(args) => export::run(args).await,
        Command::Index(command) => index::run(command).await,
        Command::Cache(command) => cache::run(command),
        Command::Serve(args) => serve::run(args).await,
        Command::Mcp(args) => mcp::run(args).await,
    }
}

/// The error chain on stderr, exit status 2.
fn report(error: &anyhow::Error) -> ExitCode {
    let _ = writeln!(output::stderr(), "error: {error:#}");
    ExitCode::from(2)
}
