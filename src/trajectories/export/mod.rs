//! `export`: recorded runs as fine-tuning data — OpenAI chat JSONL, Alpaca JSON or ShareGPT
//! JSONL — each trajectory the bytes its model saw and wrote ([`rebuild`]), filtered ([`Keep`](super::Keep),
//! method, trial, one example per question, the evaluation's questions left out) and summed up.

mod format;

use std::collections::HashSet;
use std::io::{self, Write};

use crate::base::method::Method;
use crate::record::recorded::RecordedRun;
use crate::trajectories::rebuild::{Example, rebuild};
use crate::trajectories::{Excluded, Keep, is_kept, question_key};

pub use format::{ExportFormat, Written};

/// How many examples a question gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExamplesPerQuestion {
    /// The first kept trajectory of each question (its first right trial or epoch; a CoT-SC
    /// run's first right sample).
    OnePerQuestion,
    /// Every kept trajectory (`--every-attempt`), identical prompts and texts once.
    Every,
}

/// What the prompt part of an example holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptPart {
    /// The instruction alone: a fine-tuned model needs no examples.
    Instruction,
    /// The instruction and the few-shot examples, as the model saw them (`--with-examples`).
    WithExamples,
}

/// How to export.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    pub format: ExportFormat,
    pub keep: Keep,
    /// Only runs of this method.
    pub method: Option<Method>,
    /// Only runs of this trial (`eval --trials`).
    pub trial: Option<u32>,
    pub attempts: ExamplesPerQuestion,
    pub prompt: PromptPart,
    pub excluded: Excluded,
    /// Whether the model's thinking goes into the examples (`--reasoning`).
    pub reasoning: ExportReasoning,
}

/// What `export --reasoning` does with the model's thinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExportReasoning {
    /// Leaves it out: the examples hold what the model answered (the default).
    #[default]
    Drop,
    /// Writes it where each format's users put it: `<think>…</think>` before the assistant's text
    /// (ShareGPT, Alpaca), a `reasoning` key beside `content` (openai-chat; OpenAI's own
    /// fine-tuning does not take it).
    Keep,
}

impl std::str::FromStr for ExportReasoning {
    type Err = String;

    fn from_str(name: &str) -> Result<ExportReasoning, String> {
        match name {
            "drop" => Ok(ExportReasoning::Drop),
            "keep" => Ok(ExportReasoning::Keep),
            other => Err(format!(
                "unknown `--reasoning` `{other}`: expected `drop` or `keep`"
            )),
        }
    }
}

/// What an export read, kept and dropped, and the size of what it kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportSummary {
    pub n_runs: usize,
    /// Runs that gave at least one example.
    pub n_kept_runs: usize,
    pub n_examples: usize,
    pub dropped_method: usize,
    pub dropped_trial: usize,
    pub dropped_excluded: usize,
    /// Runs that do not replay as recorded, or whose prompt cannot be built again.
    pub dropped_unrebuilt: usize,
    /// Runs that ended without an answer (a budget, a repeat, an error, no answer line).
    pub dropped_unfinished: usize,
    /// Runs that are wrong (or below `--min-f1`, or have no gold to say).
    pub dropped_wrong: usize,
    /// Runs kept by the filters with no model turn to learn (`--all`: a run whose first model
    /// call failed).
    pub dropped_no_model_turn: usize,
    /// Runs whose question already gave its example (a later trial, epoch or sample).
    pub dropped_repeated: usize,
    /// The calls to functions a tools conversation does not offer, left out of the examples
    /// written with their tool replies (OpenAI's fine-tuning refuses them): their names.
    pub unknown_calls: Vec<String>,
    /// Estimated tokens of each example (its bytes / 4, rounded up), in the order written.
    pub tokens: Vec<usize>,
}

impl ExportSummary {
    /// The summary as printed on stderr.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "runs read      {}, kept {} ({} examples)",
            self.n_runs, self.n_kept_runs, self.n_examples
        )?;
        let dropped: Vec<String> = self
            .dropped()
            .into_iter()
            .map(|(count, why)| format!("{count} {why}"))
            .collect();
        if !dropped.is_empty() {
            writeln!(out, "dropped        {}", dropped.join(", "))?;
        }
        if !self.unknown_calls.is_empty() {
            let mut names: Vec<&str> = self.unknown_calls.iter().map(String::as_str).collect();
            names.sort_unstable();
            names.dedup();
            let names: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
            let calls = match self.unknown_calls.len() {
                1 => "1 call to a function not among `tools`".to_owned(),
                n_calls => format!("{n_calls} calls to functions not among `tools`"),
            };
            let replies = if self.unknown_calls.len() == 1 {
                "its reply"
            } else {
                "their replies"
            };
            writeln!(
                out,
                "left out       {calls} ({}), with {replies}",
                names.join(", ")
            )?;
        }
        if let Some((min, median, max)) = self.token_range() {
            writeln!(
                out,
                "tokens         {min} min, {median} median, {max} max per example (estimated: bytes / 4)"
            )?;
        }
        Ok(())
    }

    /// The filters that dropped runs: how many each, and what it says.
    pub fn dropped(&self) -> Vec<(usize, &'static str)> {
        [
            (self.dropped_method, "of another method"),
            (self.dropped_trial, "of another trial"),
            (self.dropped_excluded, "excluded"),
            (self.dropped_unrebuilt, "not rebuilt"),
            (self.dropped_unfinished, "unfinished"),
            (self.dropped_wrong, "not right"),
            (self.dropped_no_model_turn, "without a model turn"),
            (self.dropped_repeated, "question already given"),
        ]
        .into_iter()
        .filter(|(count, _)| *count > 0)
        .collect()
    }

    /// Min, median and max of the estimated tokens per example.
    pub fn token_range(&self) -> Option<(usize, usize, usize)> {
        let mut tokens = self.tokens.clone();
        tokens.sort_unstable();
        let (min, max) = (*tokens.first()?, *tokens.last()?);
        Some((min, tokens[tokens.len() / 2], max))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("no example to write: {reasons}")]
    Nothing { reasons: String },
    #[error("cannot write the examples")]
    Write(#[source] io::Error),
}

/// Writes the examples of `runs` that pass the filters to `out` in the config's format, and
/// sums up what was read, kept and dropped. Each run the filters keep is rebuilt; one that does
/// not rebuild is dropped with a note (`on_note`). Refuses to write nothing.
pub async fn export(
    runs: &[RecordedRun],
    config: &ExportConfig,
    out: &mut dyn Write,
    on_note: &mut dyn FnMut(&str),
) -> Result<ExportSummary, ExportError> {
    let mut summary = ExportSummary {
        n_runs: runs.len(),
        ..ExportSummary::default()
    };
    let mut given: HashSet<String> = HashSet::new();
    let mut texts: HashSet<String> = HashSet::new();
    let mut kept: Vec<Written> = Vec::new();
    for RecordedRun {
        place: source, run, ..
    } in runs
    {
        if config.method.is_some_and(|method| method != run.method()) {
            summary.dropped_method += 1;
            continue;
        }
        if config.trial.is_some() && config.trial != run.trial {
            summary.dropped_trial += 1;
            continue;
        }
        if config.excluded.contains(run) {
            summary.dropped_excluded += 1;
            continue;
        }
        let key = question_key(run);
        if config.attempts == ExamplesPerQuestion::OnePerQuestion && given.contains(&key) {
            summary.dropped_repeated += 1;
            continue;
        }
        let examples = match rebuild(run).await {
            Ok(examples) => examples,
            Err(error) => {
                summary.dropped_unrebuilt += 1;
                on_note(&format!(
                    "{source}: not exported: {}",
                    crate::agent::error_chain(&error)
                ));
                continue;
            }
        };
        let finished: Vec<Example> = examples
            .into_iter()
            .filter(|example| config.keep == Keep::All || example.finished)
            .collect();
        if finished.is_empty() {
            summary.dropped_unfinished += 1;
            continue;
        }
        let right: Vec<Example> = finished
            .into_iter()
            .filter(|example| is_kept(config.keep, example))
            .collect();
        if right.is_empty() {
            summary.dropped_wrong += 1;
            continue;
        }
        // What the format makes of each: nothing when the model wrote nothing.
        let written: Vec<(Example, Written)> = right
            .into_iter()
            .filter_map(|example| {
                let written = config.format.example(&example, config.prompt, config.reasoning)?;
                Some((example, written))
            })
            .collect();
        if written.is_empty() {
            summary.dropped_no_model_turn += 1;
            continue;
        }
        let before = kept.len();
        for (example, written) in written {
            if config.attempts == ExamplesPerQuestion::OnePerQuestion && kept.len() > before {
                break;
            }
            // The same trajectory after another prompt (a later trial's reflections) is another
            // example.
            if texts.insert(format!(
                "{key}\u{0}{}\u{0}{}",
                example.prompt,
                example.trajectory()
            )) {
                kept.push(written);
            }
        }
        if kept.len() == before {
            summary.dropped_repeated += 1;
            continue;
        }
        given.insert(key);
        summary.n_kept_runs += 1;
    }
    if kept.is_empty() {
        return Err(ExportError::Nothing {
            reasons: nothing_reasons(&summary),
        });
    }
    for written in &kept {
        summary.tokens.push(written.text_bytes.div_ceil(4));
        summary
            .unknown_calls
            .extend(written.unknown_calls.iter().cloned());
        config
            .format
            .write(out, &written.value, summary.n_examples)
            .map_err(ExportError::Write)?;
        summary.n_examples += 1;
    }
    config
        .format
        .finish(out, summary.n_examples)
        .map_err(ExportError::Write)?;
    Ok(summary)
}

/// Why nothing passed, for the error: what was read and what each filter dropped.
fn nothing_reasons(summary: &ExportSummary) -> String {
    if summary.n_runs == 0 {
        return "the files hold no run".to_owned();
    }
    let dropped: Vec<String> = summary
        .dropped()
        .into_iter()
        .map(|(count, why)| format!("{count} {why}"))
        .collect();
    format!(
        "{} read, every one dropped ({}); `--all` keeps wrong and unfinished runs, `--min-f1 X` partly right ones",
        crate::base::output::counted(summary.n_runs, "run", "runs"),
        dropped.join(", ")
    )
}
