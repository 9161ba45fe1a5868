//! `compare`: two results files paired by question id — counts, differences with paired bootstrap
//! intervals, McNemar's exact p-value and the flipped questions.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use react_docstore::analysis::attempts::Reduce;
use react_docstore::analysis::compare::{self, DEFAULT_SEED, Golds, ScoredFile};
use react_docstore::output;

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The first evaluation (A): a results file, a directory of them or comma-joined files
    /// (shards merged as one). Differences are B − A.
    a: PathBuf,
    /// The second evaluation (B), as A.
    b: PathBuf,
    /// Seed of the bootstrap's resampling, which draws the intervals (the same seed prints the same
    /// intervals).
    #[arg(long, visible_alias = "bootstrap-seed", default_value_t = DEFAULT_SEED, value_name = "N")]
    seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Pair runs whose gold answers differ, each scored against its own file's gold (without it,
    /// such a pair is an error naming both golds).
    #[arg(long)]
    ignore_gold: bool,
    /// A file of trials (`eval --trials`): compare the state after trial N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "reduce")]
    trial: Option<u32>,
    /// How a file of several attempts a question becomes one answer a question: `final` (trials:
    /// right in any; epochs: the majority), `majority`, `pass@K` or `mean` [default: final].
    #[arg(long, value_name = "HOW")]
    reduce: Option<Reduce>,
}

impl CompareArgs {
    fn reduction(&self) -> Reduce {
        match (self.trial, self.reduce) {
            (Some(trial), _) => Reduce::Trial(trial),
            (None, Some(reduce)) => reduce,
            (None, None) => Reduce::Final,
        }
    }

    fn golds(&self) -> Golds {
        if self.ignore_gold {
            Golds::EachFileItsOwn
        } else {
            Golds::MustAgree
        }
    }
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let a = ScoredFile::read_reduced(&args.a, args.reduction())?;
    let b = ScoredFile::read_reduced(&args.b, args.reduction())?;
    let comparison = compare::compare(&a, &b, args.seed, args.golds())?;
    super::merge::warn_gaps(&compare::gap_notes(&[a, b]))?;
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
