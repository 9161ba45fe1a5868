//! `compare`: two results files paired by question id — counts, differences with paired bootstrap
//! intervals, McNemar's exact p-value and the flipped questions.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::analysis::attempts::Reduce;
use crate::analysis::compare::{self, ScoredEvaluation};
use crate::base::output;

use super::options::{BootstrapSeedArg, GoldsArg, PricesArg};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// The first evaluation (A): a results file, a directory of them or comma-joined files
    /// (shards merged as one). Differences are B − A.
    a: PathBuf,
    /// The second evaluation (B), as A.
    b: PathBuf,
    #[command(flatten)]
    seed: BootstrapSeedArg,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    golds: GoldsArg,
    #[command(flatten)]
    prices: PricesArg,
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
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let prices = args.prices.read()?;
    let a = ScoredEvaluation::read_reduced(&args.a, args.reduction())?;
    let b = ScoredEvaluation::read_reduced(&args.b, args.reduction())?;
    let mut comparison = compare::compare(&a, &b, args.seed.seed, args.golds.golds())?;
    if let Some(prices) = &prices {
        comparison.price(prices);
    }
    super::options::warn_gaps(&compare::gap_notes(&[a, b]))?;
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
