//! `index build` and `index info`: a frozen Wikipedia dump indexed for `--docstore index:DIR`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, Subcommand};

use crate::base::output;
use crate::docstore::index::{self, BuildConfig, DumpFormat, IndexInfo, MalformedRecords};

use super::signals::stop_signals;

#[derive(Subcommand)]
pub enum IndexCommand {
    /// Index dumps (HotpotQA processed Wikipedia, KILT, FEVER wiki-pages, DPR passages, JSON Lines),
    /// compressed or not, in tar/zip archives or directories.
    Build(IndexBuildArgs),
    /// What an index holds: formats, sources, pages, snapshot id, build date.
    Info(IndexInfoArgs),
}

#[derive(Args)]
pub struct IndexBuildArgs {
    /// Dump files or directories, read in the order given.
    #[arg(required = true, value_name = "SOURCE")]
    sources: Vec<PathBuf>,
    /// The index directory to write (an existing index there is replaced when the build completes).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// `auto` (recognised from each source's first record), `hotpotqa`, `kilt`, `fever`, `dpr` or `jsonl`.
    #[arg(long, default_value = "auto", value_parser = parse_dump_format, value_name = "FORMAT")]
    format: FormatChoice,
    /// Memory of the indexing threads together (`512M`, `2G`): bounds the build's memory (default:
    /// an eighth of the memory the build may use, the machine's or its job's limit, from 512M to 2G).
    #[arg(long, value_parser = index::parse_size, value_name = "SIZE")]
    memory: Option<usize>,
    /// Parsing and indexing threads (default: the number of cores).
    #[arg(long, value_name = "N")]
    threads: Option<std::num::NonZeroUsize>,
    /// Stop at the first malformed record instead of skipping it.
    #[arg(long)]
    strict: bool,
    /// Print the manifest as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct IndexInfoArgs {
    /// The index directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Print it as one JSON object.
    #[arg(long)]
    json: bool,
}

/// `--format`: `None` to recognise each source's format.
#[derive(Clone)]
struct FormatChoice(Option<DumpFormat>);

/// `auto` → detect, else the named format.
fn parse_dump_format(text: &str) -> Result<FormatChoice, String> {
    match text {
        "auto" => Ok(FormatChoice(None)),
        _ => text.parse().map(|format| FormatChoice(Some(format))),
    }
}

pub async fn run(command: IndexCommand) -> anyhow::Result<ExitCode> {
    match command {
        IndexCommand::Build(args) => build(args).await,
        IndexCommand::Info(args) => info(args),
    }
}

async fn build(args: IndexBuildArgs) -> anyhow::Result<ExitCode> {
    let mut config = BuildConfig::new(args.sources, args.out);
    config.format = args.format.0;
    if let Some(memory) = args.memory {
        config.memory_bytes = memory;
    }
    if let Some(threads) = args.threads {
        config.threads = threads.get();
    }
    if args.strict {
        config.malformed = MalformedRecords::Fail;
    }
    config.progress = super::progress::build_for_stderr();
    // Ctrl-C, SIGTERM or SIGHUP: the build stops and removes what it wrote.
    let signals = stop_signals()?;
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    tokio::spawn(async move {
        signals.await;
        flag.store(true, Ordering::Relaxed);
    });
    let report = tokio::task::spawn_blocking(move || index::build(&config, &interrupted)).await??;
    let mut stdout = output::stdout();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string(&report.manifest)?)?;
    } else {
        report.write_summary(&mut stdout)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn info(args: IndexInfoArgs) -> anyhow::Result<ExitCode> {
    let info = IndexInfo::read(&args.dir)?;
    let mut stdout = output::stdout();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string(&info)?)?;
    } else {
        info.write_text(&mut stdout)?;
    }
    Ok(ExitCode::SUCCESS)
}
