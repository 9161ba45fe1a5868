//! `eval`: a question file run concurrently, resumable from its results file; the summary on stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::trace::LogOutput;
use crate::analysis::attempts::Attempts;
use crate::analysis::report;
use crate::base::method::Reflect;
use crate::base::output;
use crate::docstore::{DocstoreKind, Opener};
use crate::eval::{self, EvalConfig, EvalServices, Resume};
use crate::llm::Llm;
use crate::llm::batch::{self, BatchSettings, BatchVendor, Batcher, Fallback};
use crate::llm::openai::batch::{AnthropicBatches, OpenAiBatches};
use crate::record::questions::{Contexts, QuestionFile};
use crate::record::selection::{Selection, Subset};
use crate::record::shard::{Shard, ShardArg};
use crate::solver::setup;

use super::options::{AgentRunArgs, FewshotFromArgs, PricesArg};
use super::signals::stop_signals;

#[derive(clap::Args)]
pub struct EvalArgs {
    /// A HotpotQA (official, Hugging Face or ReAct-simplified JSON, or JSON Lines) or FEVER file.
    questions: PathBuf,
    #[command(flatten)]
    run: AgentRunArgs,
    #[command(flatten)]
    fewshot_from: FewshotFromArgs,
    #[command(flatten)]
    selection: SelectionArgs,
    #[command(flatten)]
    attempts: AttemptArgs,
    /// Questions in flight at once.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        value_parser = clap::value_parser!(u16).range(1..),
        help_heading = "Output"
    )]
    concurrency: u16,
    /// Every finished run is appended here; running the same command again resumes from it.
    /// Default: `<questions file stem>.results.jsonl` in the current directory
    /// (`<stem>.shard-I-of-N.results.jsonl` with `--shard`).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    out: Option<PathBuf>,
    /// Run again the questions whose run ended in an error (the results file drops them first).
    #[arg(long, help_heading = "Output")]
    retry_errors: bool,
    /// Print the summary as one JSON object.
    #[arg(long, help_heading = "Output")]
    json: bool,
    #[command(flatten)]
    batch: BatchArgs,
    #[command(flatten, next_help_heading = "Output")]
    prices: PricesArg,
}

/// `--batch`: the requests through the vendor's batch API, at half the price.
#[derive(clap::Args, Clone)]
#[command(next_help_heading = "Batch")]
struct BatchArgs {
    /// Send the requests through the vendor's batch API (OpenAI's Batch API, or Anthropic's
    /// Message Batches with `--api anthropic`): half the price, replies within 24 h. Each round is
    /// one batch of every open question's next request; run the same command again to attach to
    /// the batches in flight (docs/evaluation.md).
    #[arg(long)]
    batch: bool,
    /// The most requests one batch holds [default: the vendor's most, 50,000 for OpenAI and
    /// 100,000 for Anthropic]; the vendor's byte limit splits further.
    #[arg(long, value_name = "N", requires = "batch", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    batch_size: Option<u32>,
    /// Seconds before the first look at a submitted batch; each look without an end doubles the
    /// wait, up to 16 times this.
    #[arg(long, value_name = "SECS", requires = "batch", default_value_t = batch::DEFAULT_POLL_INTERVAL.as_secs_f64())]
    batch_poll: f64,
    /// Send a request that failed inside a batch again synchronously (full price), not in the
    /// next round's batch.
    #[arg(long, requires = "batch")]
    batch_fallback: bool,
    /// Cancel this evaluation's batches in flight (those its ledger records, beside the results
    /// file) and stop: the same command run again without it collects what they answered before
    /// the cancel and asks the rest again.
    #[arg(long, requires = "batch")]
    batch_cancel: bool,
}

impl BatchArgs {
    /// The model of `run`, through the batch API when `--batch` is on.
    fn open_model(&self, run: &AgentRunArgs, results: &Path) -> anyhow::Result<Arc<dyn Llm>> {
        if !self.batch {
            return run.open_shared_model();
        }
        let poll = Duration::try_from_secs_f64(self.batch_poll).map_err(|_| {
            anyhow::anyhow!(
                "invalid `--batch-poll {}`: expected seconds, such as 10 or 0.5",
                self.batch_poll
            )
        })?;
        let client = run.open_model()?;
        let settings = BatchSettings {
            size: self.batch_size.map(|size| size as usize),
            poll,
            fallback: if self.batch_fallback {
                Fallback::Synchronous
            } else {
                Fallback::NextRound
            },
            ledger: batch::ledger_path(results),
        };
        let vendor: Box<dyn BatchVendor> = if client.config().api.is_anthropic() {
            Box::new(AnthropicBatches::new(client.config()))
        } else {
            Box::new(OpenAiBatches::new(client.config()))
        };
        let batcher = Batcher::new(vendor, settings, client.config().max_response_bytes)?;
        Ok(Arc::new(client.with_batcher(Arc::new(batcher))))
    }
}

/// `--batch-cancel`: cancels the batches of the ledger beside `results`, one line each on stdout.
async fn cancel_batches(batch: &BatchArgs, run: &AgentRunArgs, results: &Path) -> anyhow::Result<ExitCode> {
    let llm = batch.open_model(run, results)?;
    // invariant: `--batch-cancel` requires `--batch`, which opens the model through a batcher
    let batcher = llm.batcher().expect("`--batch` opens a batcher");
    let cancelled = batcher.cancel_all().await?;
    let mut stdout = output::stdout();
    for (id, status) in &cancelled {
        writeln!(stdout, "cancelled {} batch {id}: {status}", batcher.vendor())?;
    }
    writeln!(
        stdout,
        "{} in `{}`",
        output::counted(cancelled.len(), "batch cancelled", "batches cancelled"),
        batch::ledger_path(results).display()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Which questions of the file to run: subset, then ids, then limit, then the shard.
#[derive(clap::Args, Clone)]
#[command(next_help_heading = "Selection")]
struct SelectionArgs {
    /// `paper500`: the 500 dev questions the ReAct paper scores, in its order; `reflexion100`: the 100
    /// of Reflexion's HotpotQA runs (each needs the full dev file).
    #[arg(long, value_name = "SUBSET")]
    subset: Option<Subset>,
    /// Only the questions whose ids this file lists, one a line.
    #[arg(long, value_name = "FILE")]
    ids: Option<PathBuf>,
    /// At most this many questions.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// `I/N`: only shard I of N (0 ≤ I < N) of the selected questions, the same on every machine;
    /// `auto`: from a Slurm job array (`SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_COUNT`), or
    /// `auto/N` in a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`; N = its completions).
    #[arg(long, value_name = "SHARD")]
    shard: Option<ShardArg>,
}

/// How many times each question is asked: Reflexion's trials or independent epochs.
#[derive(clap::Args, Clone)]
#[command(next_help_heading = "Attempts")]
struct AttemptArgs {
    /// Reflexion's protocol: up to K trials; each trial after the first asks only the questions
    /// no trial has answered right yet (the gold decides: see docs/trials.md).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::base::limits::MAX_ATTEMPTS)), conflicts_with = "epochs")]
    trials: Option<u32>,
    /// What a failed trial leaves for the next: `none`, `last-trial`, `reflexion` or
    /// `last-trial-and-reflexion` (Reflexion's four strategies) [default: none].
    #[arg(long, value_name = "STRATEGY", requires = "trials")]
    reflect: Option<Reflect>,
    /// Ask every question K times, independently; the summary gives mean EM/F1 with their
    /// standard errors, the majority EM and pass@k.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::base::limits::MAX_ATTEMPTS)))]
    epochs: Option<u32>,
}

impl AttemptArgs {
    fn attempts(&self) -> Attempts {
        match (self.trials, self.epochs) {
            (Some(trials), _) => Attempts::Trials {
                trials,
                reflect: self.reflect.unwrap_or_default(),
            },
            (None, Some(epochs)) => Attempts::Epochs(epochs),
            (None, None) => Attempts::Once,
        }
    }
}

pub async fn run(args: EvalArgs, log: LogOutput) -> anyhow::Result<ExitCode> {
    args.run.check(Opener::Eval)?;
    if let Some(strategy) = args.attempts.reflect {
        setup::check_reflect_tools(strategy, args.run.tools.extra())?;
    }
    // Registered first: a job scheduler's SIGTERM during start-up is an interrupt too.
    let interrupt = stop_signals()?;
    let shard = args
        .selection
        .shard
        .map(|shard| shard.resolve(|name| std::env::var(name).ok()))
        .transpose()?;
    let results = args
        .out
        .clone()
        .unwrap_or_else(|| default_results_path(&args.questions, shard));
    let config = EvalConfig {
        questions: args.questions,
        selection: Selection {
            subset: args.selection.subset,
            ids: args.selection.ids,
            limit: args.selection.limit,
            shard,
        },
        contexts: if args.run.docstore.docstore == DocstoreKind::Distractor {
            Contexts::Required
        } else {
            Contexts::Unused
        },
        agent: args.run.agent.setup(),
        fewshot: args.run.agent.fewshot.clone(),
        attempts: args.attempts.attempts(),
        fewshot_from: args.fewshot_from.open()?,
        concurrency: usize::from(args.concurrency),
        results,
        resume: if args.retry_errors {
            Resume::RetryErrors
        } else {
            Resume::SkipDone
        },
        progress: super::progress::for_stderr(&log),
        log,
    };
    if args.batch.batch_cancel {
        return cancel_batches(&args.batch, &args.run, &config.results).await;
    }
    // The inputs before the model: a missing or mistyped question file is named first.
    QuestionFile::check_readable(&config.questions)?;
    let prices = args.prices.read()?;
    let services = EvalServices {
        llm: args.batch.open_model(&args.run, &config.results)?,
        docstore: args.run.open_docstore(Opener::Eval)?,
        toolbox: args.run.open_tools()?,
    };
    let mut summary = eval::evaluate(&config, &services, interrupt).await?;
    if let Some(prices) = &prices {
        summary.price(prices);
    }
    let mut stdout = output::stdout();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string(&summary)?)?;
    } else {
        summary.write_text(&mut stdout)?;
        writeln!(
            stdout,
            "report         {}",
            report::report_command(&summary.results)
        )?;
    }
    Ok(ExitCode::from(summary.exit_code()))
}

/// `dev.json` → `dev.results.jsonl` in the current directory (shard 3 of 8:
/// `dev.shard-3-of-8.results.jsonl`).
fn default_results_path(questions: &Path, shard: Option<Shard>) -> PathBuf {
    let stem = questions
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "questions".to_owned());
    match shard {
        Some(shard) => PathBuf::from(format!(
            "{stem}.shard-{}-of-{}.results.jsonl",
            shard.index, shard.count
        )),
        None => PathBuf::from(format!("{stem}.results.jsonl")),
    }
}
