//! `Report`: one self-contained HTML page of one or more results files — the summary of each, the
//! comparison of the first with each other one, pictures, and every question with its trajectories.
//!
//! The page is written by `page.rs` (maud templates: every string from a file is escaped by the
//! template engine), its pictures by `charts.rs` (SVG), and its question table by `script.js` from
//! the data embedded once as JSON in a `<script type="application/json">` block (`embed_json`).

mod charts;
mod page;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::analysis::attempts::ByQuestion;
use crate::analysis::compare::{self, CompareError, Comparison, Golds, ScoredEvaluation, ScoredRun};
use crate::analysis::prices::PriceList;
use crate::analysis::summary::{Outcome, Scores, Spend, Spent, Summary, SummaryContext};
use crate::base::fsutil::atomic_write;
use crate::record::questions::{QuestionFile, QuestionFileError};

/// What `report` needs: the results files (the first is A of every comparison), the optional
/// question file (type and level), where to write, and the bootstrap's seed.
#[derive(Debug, Clone)]
pub struct ReportConfig {
    pub results: Vec<PathBuf>,
    pub questions: Option<PathBuf>,
    pub out: PathBuf,
    pub seed: u64,
    /// Whether compared files may score a question against different golds.
    pub golds: Golds,
    /// `--prices`: each file's cost, and each comparison's sides'.
    pub prices: Option<PriceList>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Compare(#[from] CompareError),
    #[error(transparent)]
    Questions(#[from] QuestionFileError),
    #[error("cannot write report `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportWritten {
    pub path: PathBuf,
    pub bytes: usize,
    pub questions: usize,
    /// What the evaluations lack (missing shards and questions), each sentence naming its results.
    pub gaps: Vec<String>,
}

/// One results file as the page shows it.
pub(crate) struct FileView {
    pub scored: ScoredEvaluation,
    pub summary: Summary,
    pub by_level: BTreeMap<String, Scores>,
    /// The distinct values the runs record, `, `-joined (a file may mix them).
    pub model: String,
    /// `chat`, `completions`, `tools`: the format the model was asked in.
    pub api: String,
    pub profile: String,
    pub docstore: String,
    /// `react`, `cot-sc`, ...: the method of the runs (`--method`).
    pub method: String,
    /// What the file's several attempts a question were, when it made several.
    pub attempts: Option<AttemptsView>,
    /// What every run of the file spent (each attempt of a question too), priced with `--prices`.
    pub spend: Spend,
}

/// A file of several attempts a question (`--trials`, `--epochs`) as the summary names it.
pub(crate) struct AttemptsView {
    /// `trial` or `epoch`.
    pub kind: &'static str,
    /// Trials: the strategy between them (`--reflect`), `, `-joined when the file mixes them;
    /// `None` for epochs.
    pub reflect: Option<String>,
    /// Whether any attempt's usage counts a reflection call (trials under a strategy that asks
    /// the model for reflections).
    pub reflection_calls: bool,
}

/// Everything the page is made of.
pub(crate) struct Report {
    pub files: Vec<FileView>,
    /// The first file against each other one, in order.
    pub comparisons: Vec<Comparison>,
    pub has_questions: bool,
    /// How many questions the table holds.
    pub n_questions: usize,
    /// The embedded JSON (already safe inside a `<script>` element).
    pub data_json: String,
}

/// Reads the results files, compares the first with each other one and writes the page.
pub fn write_report(config: &ReportConfig) -> Result<ReportWritten, ReportError> {
    let (html, questions, gaps) = render(config)?;
    atomic_write(&config.out, html.as_bytes()).map_err(|source| ReportError::Write {
        path: config.out.clone(),
        source,
    })?;
    crate::base::fsutil::remove_stale_temporaries(&config.out);
    Ok(ReportWritten {
        path: config.out.clone(),
        bytes: html.len(),
        questions,
        gaps,
    })
}

/// The shell command that writes the report of `results` beside it (`X.results.jsonl` →
/// `X.results.html`), paths quoted for a POSIX shell where needed: what `eval` ends by naming.
pub fn report_command(results: &Path) -> String {
    let out = results.with_extension("html");
    format!(
        "react-docstore report {} --out {}",
        shell_quote(&results.to_string_lossy()),
        shell_quote(&out.to_string_lossy())
    )
}

/// `text` as one POSIX shell word: as is when it is plain, else in single quotes.
fn shell_quote(text: &str) -> String {
    let is_plain = !text.is_empty()
        && text.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ',' | ':' | '+' | '@' | '%')
        });
    if is_plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The page's HTML.
pub fn render_report(config: &ReportConfig) -> Result<String, ReportError> {
    render(config).map(|(html, _, _)| html)
}

/// The page's HTML, how many questions it holds, and what its evaluations lack.
fn render(config: &ReportConfig) -> Result<(String, usize, Vec<String>), ReportError> {
    let kinds = match &config.questions {
        Some(path) => Some(question_kinds(path)?),
        None => None,
    };
    let mut scored_files = Vec::with_capacity(config.results.len());
    for path in &config.results {
        scored_files.push(ScoredEvaluation::read(path)?);
    }
    let gaps = compare::gap_notes(&scored_files);
    let mut comparisons = Vec::new();
    if let Some((first, others)) = scored_files.split_first() {
        for other in others {
            let mut comparison = compare::compare(first, other, config.seed, config.golds)?;
            if let Some(prices) = &config.prices {
                comparison.price(prices);
            }
            comparisons.push(comparison);
        }
    }
    let data = page_data(&scored_files, &comparisons, kinds.as_ref());
    let n_questions = data.questions.len();
    let data_json = embed_json(&data);
    let files = scored_files
        .into_iter()
        .map(|scored| file_view(scored, kinds.as_ref(), config.prices.as_ref()))
        .collect();
    let report = Report {
        files,
        comparisons,
        has_questions: kinds.is_some(),
        n_questions,
        data_json,
    };
    Ok((page::render(&report), n_questions, gaps))
}

/// A question's HotpotQA `type` and `level`, by id.
type Kinds = HashMap<String, (Option<String>, Option<String>)>;

fn question_kinds(path: &Path) -> Result<Kinds, QuestionFileError> {
    let file = QuestionFile::read(path)?;
    Ok(file
        .questions
        .into_iter()
        .map(|question| (question.id, (question.kind, question.level)))
        .collect())
}

fn file_view(scored: ScoredEvaluation, kinds: Option<&Kinds>, prices: Option<&PriceList>) -> FileView {
    let kind_of = |run: &ScoredRun| kinds.and_then(|kinds| kinds.get(run.id()));
    let outcomes: Vec<Outcome> = scored
        .runs
        .iter()
        .map(|run| {
            let mut outcome = Outcome::scored(
                run.run(),
                kind_of(run).and_then(|(kind, _)| kind.clone()),
                Some(run.score),
            );
            outcome.stopped = run.stopped();
            outcome
        })
        .collect();
    let summary = Summary::new(
        &outcomes,
        SummaryContext {
            task: scored.task,
            selected: outcomes.len(),
            resumed: outcomes.len(),
            interrupted: false,
            wall_time: Duration::ZERO,
            results: scored.path.clone(),
        },
    );
    let mut by_level: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for run in &scored.runs {
        if let Some(level) = kind_of(run).and_then(|(_, level)| level.clone()) {
            by_level.entry(level).or_default().push(run.score);
        }
    }
    let by_level = by_level
        .into_iter()
        .map(|(level, scores)| (level, Scores::of(scores.iter())))
        .collect();
    let distinct = |value: &dyn Fn(&ScoredRun) -> Option<String>| {
        let mut seen = HashSet::new();
        let mut values = Vec::new();
        for run in &scored.runs {
            if let Some(value) = value(run)
                && seen.insert(value.clone())
            {
                values.push(value);
            }
        }
        if values.is_empty() {
            "—".to_owned()
        } else {
            values.join(", ")
        }
    };
    let attempts = attempts_view(&scored);
    // Every line of the file: each attempt of a question was paid for.
    let lines = if scored.attempts.is_empty() {
        &scored.runs
    } else {
        &scored.attempts
    };
    let mut spend = Spend::of(lines.iter().map(|run| Spent::of_run(run.run())));
    if let Some(prices) = prices {
        spend.price(prices);
    }
    FileView {
        spend,
        attempts,
        model: distinct(&|run| run.run().model.clone()),
        api: distinct(&|run| run.run().api.map(|api| api.as_str().to_owned())),
        profile: distinct(&|run| Some(run.run().profile.to_string())),
        method: distinct(&|run| Some(run.run().method().to_string())),
        docstore: distinct(&|run| run.run().docstore.as_ref().map(ToString::to_string)),
        summary,
        by_level,
        scored,
    }
}

fn attempts_view(scored: &ScoredEvaluation) -> Option<AttemptsView> {
    use crate::base::method::Reflect;
    use crate::record::run::Attempt;
    let kind = scored.attempts.iter().find_map(|run| match run.run().attempt() {
        Attempt::Trial(_) => Some("trial"),
        Attempt::Epoch(_) => Some("epoch"),
        Attempt::Only => None,
    })?;
    let reflect = (kind == "trial").then(|| {
        let mut names: Vec<&str> = Vec::new();
        for run in &scored.attempts {
            let name = run.run().reflect.unwrap_or(Reflect::None).as_str();
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names.join(", ")
    });
    let reflection_calls = scored
        .attempts
        .iter()
        .any(|run| run.run().reflect.is_some_and(Reflect::asks_reflection));
    Some(AttemptsView {
        kind,
        reflect,
        reflection_calls,
    })
}

/// The JSON the page's script reads: the files, then every question once with each file's run.
#[derive(Serialize)]
struct PageData<'a> {
    files: Vec<FileData>,
    /// A question a line; `runs[i]` is file `i`'s run of it, or `null`.
    questions: Vec<QuestionData<'a>>,
}

#[derive(Serialize)]
struct FileData {
    name: String,
    task: &'static str,
}

#[derive(Serialize)]
struct QuestionData<'a> {
    id: &'a str,
    question: &'a str,
    gold: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    level: Option<&'a str>,
    /// Right in the first file and wrong in another, or the reverse.
    flipped: bool,
    runs: Vec<Option<RunData<'a>>>,
}

#[derive(Serialize)]
struct RunData<'a> {
    answer: Option<&'a str>,
    em: u8,
    f1: f64,
    stop: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    tokens: u64,
    calls: u64,
    /// Each step as `[thought, action, observation]`, any of which may be `null`, and the
    /// model's reasoning fourth when it had any.
    steps: Vec<Vec<Option<&'a str>>>,
    /// A CoT, Standard or CoT-SC phase's samples as `[completion, answer]` (answer `null` when
    /// the completion held none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    samples: Vec<[Option<&'a str>; 2]>,
    /// CoT-SC's vote: `[winning answer, votes, samples]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    vote: Option<(Option<&'a str>, usize, usize)>,
    /// A backoff: `[from, to, reason]`; the phases are shown in that order.
    #[serde(skip_serializing_if = "Option::is_none")]
    backoff: Option<[&'static str; 3]>,
    /// The phase that samples came first (`cot-sc-then-react`).
    samples_first: bool,
    /// Every attempt at the question, in order, when the file made several (trials, epochs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    attempts: Vec<AttemptData<'a>>,
}

/// One attempt at a question, beside the others.
#[derive(Serialize)]
struct AttemptData<'a> {
    /// `trial 2`, `epoch 1`.
    label: String,
    answer: Option<&'a str>,
    em: u8,
    stop: &'static str,
    steps: Vec<Vec<Option<&'a str>>>,
    /// What the attempt's prompt showed of the failed trials before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_trial: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reflections: Vec<&'a str>,
}

fn page_data<'a>(
    files: &'a [ScoredEvaluation],
    comparisons: &[Comparison],
    kinds: Option<&'a Kinds>,
) -> PageData<'a> {
    let flipped: HashSet<&str> = comparisons
        .iter()
        .flat_map(|comparison| comparison.flipped.iter().map(|flip| flip.id.as_str()))
        .collect();
    let by_id: Vec<HashMap<&str, &ScoredRun>> = files
        .iter()
        .map(|file| file.runs.iter().map(|run| (run.id(), run)).collect())
        .collect();
    let attempts_by_id: Vec<HashMap<&str, Vec<&ScoredRun>>> = files
        .iter()
        .map(|file| {
            let mut attempts = ByQuestion::of(&file.attempts, |run| run.id()).groups;
            for runs in attempts.values_mut() {
                runs.sort_by_key(|run| run.run().attempt());
            }
            attempts
        })
        .collect();
    let mut seen = HashSet::new();
    let mut questions = Vec::new();
    for file in files {
        for first in &file.runs {
            if !seen.insert(first.id()) {
                continue;
            }
            let (kind, level) = kinds
                .and_then(|kinds| kinds.get(first.id()))
                .map_or((None, None), |(kind, level)| (kind.as_deref(), level.as_deref()));
            questions.push(QuestionData {
                id: first.id(),
                question: &first.run().question,
                gold: first.run().gold.as_deref().unwrap_or(""),
                kind,
                level,
                flipped: flipped.contains(first.id()),
                runs: by_id
                    .iter()
                    .zip(&attempts_by_id)
                    .map(|(runs, attempts)| {
                        runs.get(first.id()).map(|run| {
                            let mut data = run_data(run);
                            if let Some(attempts) = attempts.get(first.id()) {
                                data.attempts = attempts.iter().map(|run| attempt_data(run)).collect();
                            }
                            data
                        })
                    })
                    .collect(),
            });
        }
    }
    PageData {
        files: files
            .iter()
            .map(|file| FileData {
                name: file.name(),
                task: file.task.as_str(),
            })
            .collect(),
        questions,
    }
}

/// Each step as `[thought, action, observation]`, and its reasoning fourth when it had any.
fn step_data(run: &crate::record::run::Run) -> Vec<Vec<Option<&str>>> {
    run.steps
        .iter()
        .map(|step| {
            let mut data = vec![
                step.thought.as_deref(),
                step.action.as_deref(),
                step.observation.as_deref(),
            ];
            if let Some(reasoning) = &step.reasoning {
                data.push(Some(reasoning.as_str()));
            }
            data
        })
        .collect()
}

fn attempt_data(scored: &ScoredRun) -> AttemptData<'_> {
    let run = &scored.run();
    AttemptData {
        label: run.attempt().to_string(),
        answer: run.answer.as_deref(),
        em: u8::from(scored.score.em),
        stop: scored.stopped().as_str(),
        steps: step_data(run),
        last_trial: run.last_trial.as_deref(),
        reflections: run.reflections.iter().map(String::as_str).collect(),
    }
}

fn run_data(scored: &ScoredRun) -> RunData<'_> {
    let run = &scored.run();
    RunData {
        answer: run.answer.as_deref(),
        em: u8::from(scored.score.em),
        f1: scored.score.f1,
        stop: scored.stopped().as_str(),
        error: run.error.as_deref(),
        tokens: scored.tokens(),
        calls: run.usage.llm_calls,
        steps: step_data(run),
        samples: run
            .samples
            .iter()
            .map(|sample| [Some(sample.completion.as_str()), sample.answer.as_deref()])
            .collect(),
        vote: run
            .vote
            .as_ref()
            .map(|vote| (vote.answer.as_deref(), vote.votes, vote.samples)),
        backoff: run.backoff.map(|backoff| {
            [
                backoff.from.as_str(),
                backoff.to.as_str(),
                backoff.reason.as_str(),
            ]
        }),
        samples_first: matches!(
            run.method(),
            crate::base::method::Method::CotScThenReact
                | crate::base::method::Method::CotSc
                | crate::base::method::Method::Cot
        ),
        attempts: Vec::new(),
    }
}

/// `value` as JSON that is safe as the text of a `<script>` element: `<`, `>` and `&` are written
/// as `\u003c`, `\u003e` and `\u0026` (the same string to `JSON.parse`), so no `</script>` or
/// `<!--` in the data can end or change the element.
pub fn embed_json(value: &impl Serialize) -> String {
    // invariant: the page data (strings, numbers, string-keyed structs) always serializes
    let json = serde_json::to_string(value).expect("the page data always serializes");
    let mut safe = String::with_capacity(json.len() + json.len() / 64);
    for c in json.chars() {
        match c {
            '<' => safe.push_str("\\u003c"),
            '>' => safe.push_str("\\u003e"),
            '&' => safe.push_str("\\u0026"),
            '\u{2028}' => safe.push_str("\\u2028"),
            '\u{2029}' => safe.push_str("\\u2029"),
            c => safe.push(c),
        }
    }
    safe
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_json_cannot_close_its_script_element() {
        let hostile = vec![
            "</script><script>alert(1)</script>",
            "<!-- x",
            "a & b",
            "\u{2028}",
        ];
        let json = embed_json(&hostile);
        assert!(
            !json.contains('<') && !json.contains('>') && !json.contains('&'),
            "{json}"
        );
        let back: Vec<String> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, hostile);
    }
}
