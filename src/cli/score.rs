//! `score`: the official HotpotQA EM/F1 of a predictions file against a gold file. Exit status: 0
//! when every gold question has a finished prediction, 2 when the headline counts an error or a
//! missing prediction (it is incomplete), 1 when no gold question has a prediction.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::base::output;

#[derive(clap::Args)]
pub struct ScoreArgs {
    /// Predictions: the official `{"answer": {id: text}}` JSON, or `eval` results JSONL — several
    /// files (or directories of them: an evaluation's shards) are read as one evaluation.
    #[arg(required = true, num_args = 1.., value_name = "PREDICTIONS")]
    predictions: Vec<PathBuf>,
    /// The gold question file.
    gold: PathBuf,
    /// Print `{"n", "em", "f1", "prec", "recall", "missing", "errors", "incomplete",
    /// "tokens_recorded"}` (and `accuracy` for FEVER, `missing_shards` for shards, `tokens` and
    /// with `--prices` `cost` for `eval` results).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    prices: super::options::PricesArg,
}

pub fn run(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let prices = args.prices.read()?;
    let mut report = crate::analysis::score::score_evaluation(&args.predictions, &args.gold)?;
    if let Some(prices) = &prices {
        report.price(prices);
    }
    let mut stdout = output::stdout();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string(&report)?)?;
    } else {
        report.write_text(&mut stdout)?;
    }
    super::options::warn_gaps(&report.gaps)?;
    Ok(ExitCode::from(report.exit_code()))
}
