//! `export`: results files as fine-tuning data; the summary on stderr.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::options::read_results_runs;
use crate::base::fsutil::atomic_write;
use crate::base::method::Method;
use crate::base::output;
use crate::record::questions::Contexts;
use crate::record::selection::Selection;
use crate::trajectories::export::{
    self, ExamplesPerQuestion, ExportConfig, ExportFormat, ExportReasoning, PromptPart,
};
use crate::trajectories::{Excluded, Keep};

#[derive(clap::Args)]
pub struct ExportArgs {
    /// Results files of `eval` (or run files, or directories of them), read as one set.
    #[arg(required = true, value_name = "RESULTS")]
    results: Vec<PathBuf>,
    /// `openai-chat` (JSON Lines of `{"messages"}`), `alpaca` (a JSON array of
    /// `{"instruction", "input", "output"}`) or `sharegpt` (JSON Lines of `{"conversations"}`).
    #[arg(long, value_name = "FORMAT")]
    format: ExportFormat,
    /// Where to write the examples.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Keep every run, right or wrong, finished or not (default: right and ended by an answer).
    #[arg(long, conflicts_with = "min_f1")]
    all: bool,
    /// Keep the runs ended by an answer whose F1 is at least X (instead of EM 1).
    #[arg(long, value_name = "X")]
    min_f1: Option<f64>,
    /// Only runs of this method.
    #[arg(long, value_name = "METHOD")]
    method: Option<Method>,
    /// Only runs of this trial (`eval --trials`).
    #[arg(long, value_name = "N")]
    trial: Option<u32>,
    /// Every kept attempt at a question (trials, epochs, a CoT-SC run's right samples), not only
    /// the first.
    #[arg(long)]
    every_attempt: bool,
    /// Question files whose questions (by id or text) no example may come from: the evaluation
    /// split.
    #[arg(long, value_name = "QUESTIONS", num_args = 1..)]
    exclude: Vec<PathBuf>,
    /// Put the few-shot examples the model saw in the prompt part (default: the instruction alone).
    #[arg(long)]
    with_examples: bool,
    /// The model's thinking: `drop` (left out) or `keep` (`<think>…</think>` before the
    /// assistant's text in ShareGPT and Alpaca, a `reasoning` key beside `content` in openai-chat,
    /// which OpenAI's fine-tuning does not accept).
    #[arg(long, default_value = "drop", value_name = "WHAT")]
    reasoning: ExportReasoning,
}

pub async fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let keep = match (args.all, args.min_f1) {
        (true, _) => Keep::All,
        (false, Some(min)) if (0.0..=1.0).contains(&min) => Keep::MinF1(min),
        (false, Some(min)) => anyhow::bail!("`--min-f1` is an F1 between 0 and 1, not `{min}`"),
        (false, None) => Keep::Right,
    };
    let mut excluded = Excluded::default();
    for path in &args.exclude {
        let file = Selection::default().read(path, Contexts::Unused)?;
        for question in &file.questions {
            excluded.insert(&question.id, question.position, &question.question);
        }
    }
    let runs = read_results_runs(&args.results)?;
    let config = ExportConfig {
        format: args.format,
        keep,
        method: args.method,
        trial: args.trial,
        attempts: if args.every_attempt {
            ExamplesPerQuestion::Every
        } else {
            ExamplesPerQuestion::OnePerQuestion
        },
        prompt: if args.with_examples {
            PromptPart::WithExamples
        } else {
            PromptPart::Instruction
        },
        excluded,
        reasoning: args.reasoning,
    };
    let mut stderr = output::stderr();
    let mut bytes = Vec::new();
    let summary = export::export(&runs, &config, &mut bytes, &mut |note| {
        let _ = writeln!(output::stderr(), "note: {note}");
    })
    .await?;
    atomic_write(&args.out, &bytes).with_context(|| format!("cannot write `{}`", args.out.display()))?;
    summary.write_text(&mut stderr)?;
    writeln!(
        stderr,
        "wrote          {} ({} examples, {})",
        args.out.display(),
        summary.n_examples,
        args.format.as_str()
    )?;
    Ok(ExitCode::SUCCESS)
}
