//! `merge`: several results files (an evaluation's shards, or directories of them) written as one.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::base::output;
use crate::record::{evaluation, merge};

#[derive(clap::Args)]
pub struct MergeArgs {
    /// Results files of `eval` (the shards of one evaluation), or directories of them (`*.jsonl`).
    #[arg(required = true, value_name = "RESULTS")]
    results: Vec<PathBuf>,
    /// Where to write the merged results file (JSON Lines, in the selection's order).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

pub fn run(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let evaluation = evaluation::read_evaluation(&args.results)?;
    merge::write_results(&evaluation, &args.out)?;
    let runs = output::counted(evaluation.runs.len(), "run", "runs");
    let files = output::counted(evaluation.files.len(), "file", "files");
    writeln!(
        output::stdout(),
        "merged         {runs} of {files} into {}",
        args.out.display()
    )?;
    super::options::warn_gaps(&evaluation.gaps())?;
    Ok(ExitCode::SUCCESS)
}
