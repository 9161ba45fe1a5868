//! `compare`: two results files paired by question id — counts, differences with paired bootstrap
//! intervals, McNemar's exact p-value and the flipped questions.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use react_docstore::compare::{self, DEFAULT_SEED, Golds, ScoredFile};
use react_docstore::output;

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The first evaluation (A): a results file, a directory of them or comma-joined files
    /// (shards merged as one). Differences are B − A.
    a: PathBuf,
    /// The second evaluation (B), as A.
    b: PathBuf,
    /// Seed of the bootstrap's resampling (the same seed prints the same intervals).
    #[arg(long, default_value_t = DEFAULT_SEED, value_name = "N")]
    seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Pair runs whose gold answers differ, each scored against its own file's gold (without it,
    /// such a pair is an error naming both golds).
    #[arg(long)]
    ignore_gold: bool,
}

impl CompareArgs {
    fn golds(&self) -> Golds {
        if self.ignore_gold {
            Golds::EachFileItsOwn
        } else {
            Golds::MustAgree
        }
    }
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let a = ScoredFile::read(&args.a)?;
    let b = ScoredFile::read(&args.b)?;
    let comparison = compare::compare(&a, &b, args.seed, args.golds())?;
    for side in [&a, &b] {
        super::merge::warn_gaps(&side.gap_notes())?;
    }
    let mut stdout = output::stdout();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string(&comparison)?)?;
    } else {
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|columns| columns.parse().ok())
            .unwrap_or(120);
        comparison.write_text(&mut stdout, width)?;
    }
    Ok(ExitCode::SUCCESS)
}
