//! `report`: one self-contained HTML page of one or more results files.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::analysis::report::{self, ReportConfig};
use crate::base::output;

use super::options::{BootstrapSeedArg, GoldsArg, PricesArg};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Results of `eval`, one evaluation each: a results file, a directory of them or
    /// comma-joined files (shards merged as one); with two or more, the first is compared with
    /// each other one.
    #[arg(required = true, value_name = "RESULTS")]
    results: Vec<PathBuf>,
    /// Where to write the page.
    #[arg(long, value_name = "FILE.html")]
    out: PathBuf,
    /// The question file, for EM and F1 by HotpotQA `type` and `level`.
    #[arg(long, value_name = "FILE")]
    questions: Option<PathBuf>,
    #[command(flatten)]
    seed: BootstrapSeedArg,
    #[command(flatten)]
    golds: GoldsArg,
    #[command(flatten)]
    prices: PricesArg,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let written = report::write_report(&ReportConfig {
        results: args.results,
        questions: args.questions,
        out: args.out,
        seed: args.seed.seed,
        golds: args.golds.golds(),
        prices: args.prices.read()?,
    })?;
    let questions = output::counted(written.questions, "question", "questions");
    let size = if written.bytes < 1_000_000 {
        format!("{:.0} kB", written.bytes as f64 / 1e3)
    } else {
        format!("{:.1} MB", written.bytes as f64 / 1e6)
    };
    writeln!(
        output::stdout(),
        "report         {} ({questions}, {size})",
        written.path.display()
    )?;
    super::options::warn_gaps(&written.gaps)?;
    Ok(ExitCode::SUCCESS)
}
