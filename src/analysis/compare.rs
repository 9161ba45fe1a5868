//! `Comparison`: two results files paired by question id — the four right/wrong counts, the EM and
//! F1 differences (B − A) with paired bootstrap intervals, McNemar's exact p-value and the flipped
//! questions. `ScoredEvaluation` reads one evaluation (a results file, or its shards) and scores each run; `report` uses both.
//!
//! A run is right when its answer's EM is 1 against its gold (FEVER: the label is right); a run
//! that ended in an error is scored like any other, so with no answer it is wrong. Scores come from
//! [`AnswerScore`] on the run's `gold`, the metric `eval` itself records.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::analysis::attempts::{ByQuestion, Reduce, Reduced, Seen};
use crate::analysis::prices::PriceList;
use crate::analysis::summary::{Incomplete, Spend, Spent};
use crate::base::metrics::{AnswerScore, normalize_answer};
use crate::base::rng::SplitMix64;
use crate::base::task::Task;
use crate::record::evaluation::{self, Evaluation, EvaluationError};
use crate::record::recorded::RecordedRun;
use crate::record::results::ResultsError;
use crate::record::run::{Attempt, Run, Stopped};

/// How many times the questions are resampled for each interval.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;
/// The default `--seed`: the output is the same on every machine and every run.
pub const DEFAULT_SEED: u64 = 15;

/// One run of a results file (one of an evaluation's shards), scored.
#[derive(Debug, Clone)]
pub struct ScoredRun {
    pub recorded: RecordedRun,
    pub score: AnswerScore,
    /// `--reduce mean`: the share of the question's attempts that were right (`score` holds the
    /// mean F1 then).
    pub em_share: Option<f64>,
}

impl ScoredRun {
    /// Right: EM 1; under `--reduce mean`, right in most attempts.
    pub fn is_right(&self) -> bool {
        self.em_share.map_or(self.score.em, |share| share > 0.5)
    }

    /// EM as a number: 0 or 1, or the share of attempts right under `--reduce mean`.
    pub fn em(&self) -> f64 {
        self.em_share.unwrap_or(f64::from(u8::from(self.score.em)))
    }

    /// The run.
    pub fn run(&self) -> &Run {
        &self.recorded.run
    }

    /// Its question id.
    pub fn id(&self) -> &str {
        self.recorded.id()
    }

    /// How the run stopped ([`Run::how_stopped`]).
    pub fn stopped(&self) -> Stopped {
        self.recorded.run.how_stopped()
    }

    /// Prompt and completion tokens together.
    pub fn tokens(&self) -> u64 {
        self.run()
            .usage
            .prompt_tokens
            .saturating_add(self.run().usage.completion_tokens)
    }
}

/// The runs of one evaluation (a results file, or several read as one: [`evaluation::read_evaluation`]),
/// each scored against its gold answer, in the evaluation's order.
#[derive(Debug, Clone)]
pub struct ScoredEvaluation {
    /// The evaluation as named: a file, a directory, or comma-joined files.
    pub path: PathBuf,
    /// The evaluation's task ([`Evaluation::task`]).
    pub task: Task,
    /// One run a question: a file of several attempts a question reduced ([`Reduce`]).
    pub runs: Vec<ScoredRun>,
    /// Every line of a file of trials or epochs, in file order (empty for single runs).
    pub attempts: Vec<ScoredRun>,
    /// How the attempts were reduced, in words, when there were several a question.
    pub reduced: Option<String>,
    /// What the evaluation lacks (missing shards and questions) or held twice ([`Evaluation::gaps`]).
    pub gaps: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error(transparent)]
    Merge(#[from] EvaluationError),
    #[error("`{}` holds no runs: not a results file of `eval`", path.display())]
    Empty { path: PathBuf },
    #[error("results file `{}`, line {line}: field `gold` is missing, so the run cannot be scored", path.display())]
    MissingGold { path: PathBuf, line: usize },
    #[error("results file `{}`, line {line}: question `{id}` was already run{attempt} on line {first_line}", path.display())]
    DuplicateId {
        /// ` in trial k` / ` in epoch k`, or nothing.
        attempt: String,
        path: PathBuf,
        line: usize,
        first_line: usize,
        id: String,
    },
    #[error("`{}` and `{}` have no question id in common", a.display(), b.display())]
    NothingShared { a: PathBuf, b: PathBuf },
    #[error(
        "question `{}` differs: `{}` line {} asks {:?}, `{}` line {} asks {:?}",
        .0.id,
        .0.a.display(),
        .0.a_line,
        .0.a_question,
        .0.b.display(),
        .0.b_line,
        .0.b_question
    )]
    DifferentQuestion(Box<QuestionMismatch>),
    #[error(
        "question `{}` has two gold answers: `{}` line {} says {:?}, `{}` line {} says {:?}; compare runs scored against one gold, or pass --ignore-gold to score each file against its own",
        .0.id,
        .0.a.display(),
        .0.a_line,
        .0.a_gold,
        .0.b.display(),
        .0.b_line,
        .0.b_gold
    )]
    DifferentGold(Box<GoldMismatch>),
}

/// What to do when the two files give a question different gold answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Golds {
    /// Refuse: the two sides would not be scored against the same answer.
    #[default]
    MustAgree,
    /// Score each side against its own file's gold (`--ignore-gold`).
    EachFileItsOwn,
}

/// One id with two gold answers in the two files.
#[derive(Debug)]
pub struct GoldMismatch {
    pub id: String,
    pub a: PathBuf,
    pub a_line: usize,
    pub a_gold: String,
    pub b: PathBuf,
    pub b_line: usize,
    pub b_gold: String,
}

/// One id asking two questions in the two files.
#[derive(Debug)]
pub struct QuestionMismatch {
    pub id: String,
    pub a: PathBuf,
    pub a_line: usize,
    pub a_question: String,
    pub b: PathBuf,
    pub b_line: usize,
    pub b_question: String,
}

impl ScoredEvaluation {
    /// Reads a results file with the results reader `eval` uses and scores every run; several
    /// attempts a question are reduced to their final state.
    pub fn read(path: &Path) -> Result<ScoredEvaluation, CompareError> {
        ScoredEvaluation::read_reduced(path, Reduce::Final)
    }

    /// [`ScoredEvaluation::read`], several attempts a question reduced by `reduce`. `path` is an
    /// evaluation: a results file, a directory of them, or comma-joined files
    /// ([`crate::record::files::recorded_files`]), read as one.
    pub fn read_reduced(path: &Path, reduce: Reduce) -> Result<ScoredEvaluation, CompareError> {
        let evaluation = evaluation::read_evaluation(&[path.to_owned()])?;
        let mut file = ScoredEvaluation::from_evaluation(path, evaluation)?;
        file.reduce(reduce);
        Ok(file)
    }

    /// Reduces several attempts a question to one run a question, in the order questions first
    /// appear, its usage summed over the attempts the reduction looked at (the steps are the
    /// chosen attempt's); a file of single runs stays as it is.
    fn reduce(&mut self, reduce: Reduce) {
        if self
            .runs
            .iter()
            .all(|scored| scored.run().attempt() == Attempt::Only)
        {
            return;
        }
        let kind = self
            .runs
            .iter()
            .map(|scored| scored.run().attempt())
            .find(|attempt| *attempt != Attempt::Only)
            .unwrap_or(Attempt::Only);
        self.attempts = std::mem::take(&mut self.runs);
        self.reduced = Some(reduce.describe(kind));
        let by_id = ByQuestion::of(&self.attempts, |scored| scored.id());
        for id in &by_id.order {
            let attempts = &by_id.groups[id];
            let seen: Vec<Seen<'_>> = attempts
                .iter()
                .map(|scored| Seen {
                    attempt: scored.run().attempt(),
                    em: scored.score.em,
                    f1: scored.score.f1,
                    answer: scored.run().answer.as_deref(),
                })
                .collect();
            let mut reduced = match reduce.reduce(&seen) {
                Some(Reduced::Attempt(idx)) => attempts[idx].clone(),
                Some(Reduced::NoAnswer(idx)) => {
                    let mut scored = attempts[idx].clone();
                    scored.recorded.run.answer = None;
                    let gold = scored.run().gold.as_deref().unwrap_or("");
                    scored.score = AnswerScore::new("", gold);
                    scored
                }
                Some(Reduced::Mean { first, em, f1 }) => {
                    let mut scored = attempts[first].clone();
                    let n = attempts.len() as f64;
                    scored.score = AnswerScore {
                        em: em > 0.5,
                        f1,
                        precision: attempts.iter().map(|run| run.score.precision).sum::<f64>() / n,
                        recall: attempts.iter().map(|run| run.score.recall).sum::<f64>() / n,
                    };
                    scored.em_share = Some(em);
                    scored
                }
                None => continue,
            };
            // What the question cost: every attempt the reduction looked at.
            let mut usage = crate::record::run::Usage::default();
            for idx in reduce.considered(&seen) {
                usage.add(&attempts[idx].run().usage);
            }
            reduced.recorded.run.usage = usage;
            self.runs.push(reduced);
        }
    }

    fn from_evaluation(path: &Path, evaluation: Evaluation) -> Result<ScoredEvaluation, CompareError> {
        let gaps = evaluation.gaps();
        let task = evaluation.task();
        let lines = evaluation.runs;
        if lines.is_empty() {
            return Err(CompareError::Empty {
                path: path.to_owned(),
            });
        }
        let mut first_lines: HashMap<(String, Attempt), usize> = HashMap::with_capacity(lines.len());
        let mut runs = Vec::with_capacity(lines.len());
        for recorded in lines {
            let (run, line, id) = (&recorded.run, recorded.line(), recorded.id().to_owned());
            let attempt = run.attempt();
            if let Some(&first_line) = first_lines.get(&(id.clone(), attempt)) {
                return Err(CompareError::DuplicateId {
                    path: recorded.place.file.to_path_buf(),
                    line,
                    first_line,
                    id,
                    attempt: match attempt {
                        Attempt::Only => String::new(),
                        attempt => format!(" in {attempt}"),
                    },
                });
            }
            first_lines.insert((id, attempt), line);
            let Some(gold) = run.gold.as_deref() else {
                return Err(CompareError::MissingGold {
                    path: recorded.place.file.to_path_buf(),
                    line,
                });
            };
            let score = AnswerScore::new(run.answer.as_deref().unwrap_or(""), gold);
            runs.push(ScoredRun {
                recorded,
                score,
                em_share: None,
            });
        }
        Ok(ScoredEvaluation {
            path: path.to_owned(),
            task,
            runs,
            attempts: Vec::new(),
            reduced: None,
            gaps,
        })
    }

    /// The file's name as a reader would say it (its last component; comma-joined files whole).
    pub fn name(&self) -> String {
        if crate::record::files::is_list(&self.path) {
            return self.path.display().to_string();
        }
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        )
    }
}

/// EM and F1 of one side over the paired questions, and what the side cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    pub em: f64,
    pub f1: f64,
    pub path: PathBuf,
    pub mean_steps: f64,
    pub mean_tokens: f64,
    /// Of the paired questions, those whose run ended in an error (each counted wrong).
    pub errors: usize,
    /// The side's figures count errors ([`Incomplete`]).
    pub incomplete: bool,
    /// The method of the side's runs (`--method`), `, `-joined when they mix.
    pub method: String,
    /// How a file of several attempts a question was reduced to one, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduced: Option<String>,
    /// What the paired runs spent (a reduced question: every attempt the reduction looked at):
    /// `tokens`, and `cost` with `--prices`.
    #[serde(flatten)]
    pub spend: Spend,
}

/// A difference B − A with its paired bootstrap 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    pub value: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Which side of a flipped question was right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RightSide {
    A,
    B,
}

/// A question one side got right and the other wrong.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flip {
    pub id: String,
    pub a_answer: Option<String>,
    pub b_answer: Option<String>,
    /// A's gold answer.
    pub gold: String,
    /// B's gold answer, when it differs from A's (only with [`Golds::EachFileItsOwn`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_gold: Option<String>,
    pub right: RightSide,
    pub question: String,
}

/// What `compare` prints (`--json`: this object, the fields DESIGN.md fixes first).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Questions in both files: what everything below is computed over.
    pub n: usize,
    pub only_in_a: usize,
    pub only_in_b: usize,
    pub a: Side,
    pub b: Side,
    pub both_right: usize,
    pub a_only: usize,
    pub b_only: usize,
    pub both_wrong: usize,
    pub em_diff: Difference,
    pub f1_diff: Difference,
    pub mcnemar_p: f64,
    /// Only-A first, then only-B, each in A's file order.
    pub flipped: Vec<Flip>,
    pub task: Task,
    pub seed: u64,
    pub resamples: usize,
}

impl Comparison {
    /// Prices both sides' tokens at `prices` (`--prices`).
    pub fn price(&mut self, prices: &PriceList) {
        self.a.spend.price(prices);
        self.b.spend.price(prices);
    }

    /// The terminal account: both sides, the counts, the differences, the p-value, then one line
    /// per flipped question within `width` columns.
    pub fn write_text(&self, out: &mut dyn Write, width: usize) -> io::Result<()> {
        let (em, f1) = match self.task {
            Task::Fever => ("accuracy", "F1 (n/a)"),
            Task::HotpotQa => ("EM", "F1"),
        };
        writeln!(
            out,
            "paired         {} ({} only in A, {} only in B)",
            crate::base::output::counted(self.n, "question", "questions"),
            self.only_in_a,
            self.only_in_b
        )?;
        writeln!(
            out,
            "{:<4}{em:>9}{f1:>9}{:>8}{:>10}{:>8}  file",
            "", "steps", "tokens", "errors"
        )?;
        for (name, side) in [("A", &self.a), ("B", &self.b)] {
            writeln!(
                out,
                "{name:<4}{:>9.4}{:>9.4}{:>8.2}{:>10.0}{:>8}  {}",
                side.em,
                side.f1,
                side.mean_steps,
                side.mean_tokens,
                side.errors,
                side.path.display()
            )?;
        }
        for (name, side) in [("A", &self.a), ("B", &self.b)] {
            let incomplete = Incomplete {
                errors: side.errors,
                ..Incomplete::default()
            };
            if incomplete.is_incomplete() {
                writeln!(
                    out,
                    "incomplete     {name}: {} of the {} paired questions ended in an error, counted wrong",
                    side.errors, self.n
                )?;
            }
        }
        if self.a.method != self.b.method {
            writeln!(out, "methods        A {}, B {}", self.a.method, self.b.method)?;
        }
        for (name, side) in [("A", &self.a), ("B", &self.b)] {
            if let Some(reduced) = &side.reduced {
                writeln!(out, "reduced        {name}: each question by the {reduced}")?;
            }
        }
        writeln!(
            out,
            "both right {}   only A {}   only B {}   neither {}",
            self.both_right, self.a_only, self.b_only, self.both_wrong
        )?;
        for (name, diff) in [(em, &self.em_diff), (f1, &self.f1_diff)] {
            writeln!(
                out,
                "{name} B − A {:>+9.4}   95% CI [{:+.4}, {:+.4}]  (paired bootstrap, {} resamples, seed {})",
                diff.value, diff.ci_low, diff.ci_high, self.resamples, self.seed
            )?;
        }
        writeln!(
            out,
            "McNemar exact p {:.4} ({} discordant pairs)",
            self.mcnemar_p,
            self.a_only + self.b_only
        )?;
        // The table's tokens column says 0 when no run records any: lines only when one does, or
        // when priced.
        let spent = [&self.a, &self.b]
            .iter()
            .any(|side| side.spend.tokens.runs_with_tokens > 0 || side.spend.cost.is_some());
        for (name, side) in [("A", &self.a), ("B", &self.b)].into_iter().filter(|_| spent) {
            for (what, text) in side.spend.lines() {
                writeln!(out, "{:<15}{text}", format!("{what} {name}"))?;
            }
        }
        if self.flipped.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "flipped        (right side, id, question, A's answer | B's answer | gold)"
        )?;
        for flip in &self.flipped {
            let right = match flip.right {
                RightSide::A => "A",
                RightSide::B => "B",
            };
            let gold = match &flip.b_gold {
                Some(b_gold) => format!("{} (B: {b_gold})", flip.gold),
                None => flip.gold.clone(),
            };
            let answers = format!(
                "{} | {} | {gold}",
                flip.a_answer.as_deref().unwrap_or("(none)"),
                flip.b_answer.as_deref().unwrap_or("(none)"),
            );
            let head = format!("  {right}  {}  ", flip.id);
            let room = width
                .saturating_sub(head.chars().count() + answers.chars().count() + 2)
                .max(12);
            writeln!(out, "{head}{}  {answers}", cut(&one_line(&flip.question), room))?;
        }
        Ok(())
    }
}

/// `text` on one line: runs of whitespace (newlines too) become one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `width` characters of `text`, ending in `…` when cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    crate::base::text::shorten(text, width.saturating_sub(1)).into_owned()
}

/// The runs of both files for one shared question.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    pub a: &'a ScoredRun,
    pub b: &'a ScoredRun,
}

/// The questions both files ran, in A's order, with the counts of the questions only one ran.
/// The two runs of a pair must ask the same question and, unless `golds` lets them differ, be
/// scored against the same gold answer (the same once normalized, as the metric reads it).
pub fn pair<'a>(
    a: &'a ScoredEvaluation,
    b: &'a ScoredEvaluation,
    golds: Golds,
) -> Result<(Vec<Pair<'a>>, usize, usize), CompareError> {
    let b_by_id: HashMap<&str, &ScoredRun> = b.runs.iter().map(|run| (run.id(), run)).collect();
    let mut pairs = Vec::new();
    for a_run in &a.runs {
        let Some(&b_run) = b_by_id.get(a_run.id()) else {
            continue;
        };
        if a_run.run().question.trim() != b_run.run().question.trim() {
            return Err(CompareError::DifferentQuestion(Box::new(QuestionMismatch {
                id: a_run.id().to_owned(),
                a: a_run.recorded.place.file.to_path_buf(),
                a_line: a_run.recorded.line(),
                a_question: a_run.run().question.clone(),
                b: b_run.recorded.place.file.to_path_buf(),
                b_line: b_run.recorded.line(),
                b_question: b_run.run().question.clone(),
            })));
        }
        if golds == Golds::MustAgree {
            check_same_gold(a_run, b_run)?;
        }
        pairs.push(Pair { a: a_run, b: b_run });
    }
    if pairs.is_empty() {
        return Err(CompareError::NothingShared {
            a: a.path.clone(),
            b: b.path.clone(),
        });
    }
    let n = pairs.len();
    Ok((pairs, a.runs.len() - n, b.runs.len() - n))
}

/// Refuses a pair whose runs were scored against golds the metric reads differently.
fn check_same_gold(a_run: &ScoredRun, b_run: &ScoredRun) -> Result<(), CompareError> {
    let gold = |run: &ScoredRun| run.run().gold.clone().unwrap_or_default();
    let (a_gold, b_gold) = (gold(a_run), gold(b_run));
    if normalize_answer(&a_gold) == normalize_answer(&b_gold) {
        return Ok(());
    }
    Err(CompareError::DifferentGold(Box::new(GoldMismatch {
        id: a_run.id().to_owned(),
        a: a_run.recorded.place.file.to_path_buf(),
        a_line: a_run.recorded.line(),
        a_gold,
        b: b_run.recorded.place.file.to_path_buf(),
        b_line: b_run.recorded.line(),
        b_gold,
    })))
}

/// Pairs `a` and `b` by question id and compares them; `seed` drives the bootstrap.
/// The gaps of several evaluations, each sentence said once, naming every evaluation it is
/// true of (`` `a.jsonl`, `b.jsonl`: … ``), in the order first met.
pub fn gap_notes(files: &[ScoredEvaluation]) -> Vec<String> {
    let mut gaps: Vec<(&str, Vec<String>)> = Vec::new();
    for file in files {
        for gap in &file.gaps {
            let name = format!("`{}`", file.path.display());
            match gaps.iter_mut().find(|(text, _)| *text == gap.as_str()) {
                Some((_, names)) => names.push(name),
                None => gaps.push((gap.as_str(), vec![name])),
            }
        }
    }
    gaps.into_iter()
        .map(|(gap, names)| format!("{}: {gap}", names.join(", ")))
        .collect()
}

pub fn compare(
    a: &ScoredEvaluation,
    b: &ScoredEvaluation,
    seed: u64,
    golds: Golds,
) -> Result<Comparison, CompareError> {
    let (pairs, only_in_a, only_in_b) = pair(a, b, golds)?;
    let n = pairs.len();
    let mut counts = [0usize; 4];
    for pair in &pairs {
        let idx = match (pair.a.is_right(), pair.b.is_right()) {
            (true, true) => 0,
            (true, false) => 1,
            (false, true) => 2,
            (false, false) => 3,
        };
        counts[idx] += 1;
    }
    let [both_right, a_only, b_only, both_wrong] = counts;
    let em_diffs: Vec<f64> = pairs.iter().map(|pair| pair.b.em() - pair.a.em()).collect();
    let f1_diffs: Vec<f64> = pairs
        .iter()
        .map(|pair| pair.b.score.f1 - pair.a.score.f1)
        .collect();
    let [em_diff, f1_diff] = paired_bootstrap([&em_diffs, &f1_diffs], BOOTSTRAP_RESAMPLES, seed);
    let flip = |pair: &Pair, right| Flip {
        id: pair.a.id().to_owned(),
        a_answer: pair.a.run().answer.clone(),
        b_answer: pair.b.run().answer.clone(),
        gold: pair.a.run().gold.clone().unwrap_or_default(),
        b_gold: pair.b.run().gold.clone().filter(|b_gold| {
            normalize_answer(b_gold) != normalize_answer(pair.a.run().gold.as_deref().unwrap_or(""))
        }),
        right,
        question: pair.a.run().question.clone(),
    };
    let flipped = pairs
        .iter()
        .filter(|pair| pair.a.is_right() && !pair.b.is_right())
        .map(|pair| flip(pair, RightSide::A))
        .chain(
            pairs
                .iter()
                .filter(|pair| !pair.a.is_right() && pair.b.is_right())
                .map(|pair| flip(pair, RightSide::B)),
        )
        .collect();
    let side = |file: &ScoredEvaluation, runs: Vec<&ScoredRun>| {
        let n = runs.len() as f64;
        let mean = |value: &dyn Fn(&ScoredRun) -> f64| runs.iter().map(|run| value(run)).sum::<f64>() / n;
        let errors = runs.iter().filter(|run| run.stopped() == Stopped::Error).count();
        Side {
            em: mean(&|run| run.em()),
            f1: mean(&|run| run.score.f1),
            path: file.path.clone(),
            mean_steps: mean(&|run| run.run().steps.len() as f64),
            mean_tokens: mean(&|run| run.tokens() as f64),
            errors,
            incomplete: errors > 0,
            method: {
                let mut methods: Vec<&str> = runs.iter().map(|run| run.run().method().as_str()).collect();
                methods.sort_unstable();
                methods.dedup();
                methods.join(", ")
            },
            reduced: file.reduced.clone(),
            spend: Spend::of(runs.iter().map(|run| Spent::of_run(run.run()))),
        }
    };
    Ok(Comparison {
        n,
        only_in_a,
        only_in_b,
        a: side(a, pairs.iter().map(|pair| pair.a).collect()),
        b: side(b, pairs.iter().map(|pair| pair.b).collect()),
        both_right,
        a_only,
        b_only,
        both_wrong,
        em_diff,
        f1_diff,
        mcnemar_p: mcnemar_exact_p(a_only, b_only),
        flipped,
        task: evaluation::task_of([a.task, b.task]),
        seed,
        resamples: BOOTSTRAP_RESAMPLES,
    })
}

/// The mean of each series of per-question differences with its 95% percentile interval over
/// `resamples` resamples of the questions; every series is resampled with the same questions
/// (the pairing is kept).
pub fn paired_bootstrap<const K: usize>(series: [&[f64]; K], resamples: usize, seed: u64) -> [Difference; K] {
    let n = series.first().map_or(0, |values| values.len());
    let mut means: [Vec<f64>; K] = std::array::from_fn(|_| Vec::with_capacity(resamples));
    let mut rng = SplitMix64(seed);
    let mut sums = [0.0; K];
    for _ in 0..resamples {
        sums.fill(0.0);
        for _ in 0..n {
            let idx = rng.below(n);
            for (sum, values) in sums.iter_mut().zip(&series) {
                *sum += values[idx];
            }
        }
        for (resampled, sum) in means.iter_mut().zip(sums) {
            resampled.push(sum / n as f64);
        }
    }
    std::array::from_fn(|k| {
        let values = series[k];
        let value = if n == 0 {
            0.0
        } else {
            values.iter().sum::<f64>() / n as f64
        };
        let resampled = &mut means[k];
        resampled.sort_by(f64::total_cmp);
        Difference {
            value,
            ci_low: quantile(resampled, 0.025).unwrap_or(value),
            ci_high: quantile(resampled, 0.975).unwrap_or(value),
        }
    })
}

/// The `q` quantile of sorted values, interpolated linearly between neighbours (numpy's default).
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let position = q * last as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(last);
    let fraction = position - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * fraction)
}

/// McNemar's exact test: the two-sided binomial p-value of `b` against `c` discordant pairs
/// (`2 · P(X ≤ min(b, c))`, X ~ Binomial(b + c, ½), capped at 1). Computed in logarithms, so
/// any number of pairs is exact to rounding.
pub fn mcnemar_exact_p(b: usize, c: usize) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k_max = b.min(c);
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    // ln C(n, k), grown term by term.
    let mut ln_choose = 0.0;
    let mut ln_terms = Vec::with_capacity(k_max + 1);
    for k in 0..=k_max {
        if k > 0 {
            ln_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        ln_terms.push(ln_choose + ln_half_n);
    }
    let ln_max = ln_terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tail = ln_terms
        .iter()
        .map(|term| (term - ln_max).exp())
        .sum::<f64>()
        .ln()
        + ln_max;
    (2.0 * tail.exp()).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_mcnemar(b: usize, c: usize, expected: f64) {
        let p = mcnemar_exact_p(b, c);
        assert!(
            (p - expected).abs() < 1e-12,
            "p({b}, {c}) = {p}, expected {expected}"
        );
    }

    #[test]
    fn mcnemar_matches_the_binomial_tail() {
        check_mcnemar(0, 0, 1.0);
        check_mcnemar(3, 3, 1.0);
        check_mcnemar(0, 1, 1.0);
        // 2 · (1 + 10) / 2¹⁰
        check_mcnemar(1, 9, 0.021_484_375);
        check_mcnemar(9, 1, 0.021_484_375);
        // 2 / 2⁵
        check_mcnemar(0, 5, 0.0625);
        // 2 · (1 + 12 + 66) / 2¹² (scipy.stats.binomtest(2, 12).pvalue)
        check_mcnemar(2, 10, 0.038_574_218_75);
        // Beyond f64's 2⁻¹⁰⁷⁴ for a direct product: still a number, tiny, not NaN.
        let p = mcnemar_exact_p(0, 2000);
        assert!(!p.is_nan() && p < 1e-300, "{p}");
        check_mcnemar(1000, 1000, 1.0);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_mean() {
        let em: Vec<f64> = (0..200).map(|i| if i % 4 == 0 { 1.0 } else { 0.0 }).collect();
        let f1: Vec<f64> = (0..200).map(|i| (i % 7) as f64 / 10.0).collect();
        let [em_diff, f1_diff] = paired_bootstrap([&em, &f1], 2000, 7);
        assert_eq!(em_diff.value, 0.25);
        assert!(em_diff.ci_low < 0.25 && 0.25 < em_diff.ci_high, "{em_diff:?}");
        // The normal approximation's half-width: 1.96 · sqrt(0.25 · 0.75 / 200) ≈ 0.06.
        assert!(
            (em_diff.ci_high - em_diff.ci_low - 0.12).abs() < 0.03,
            "{em_diff:?}"
        );
        assert!(f1_diff.ci_low < f1_diff.value && f1_diff.value < f1_diff.ci_high);
        assert_eq!(paired_bootstrap([&em, &f1], 2000, 7), [em_diff, f1_diff]);
        // EM's quantiles sit on a grid of 1/200; F1's move with the seed.
        assert_ne!(paired_bootstrap([&em, &f1], 2000, 8)[1], f1_diff);
        // No variation, no width.
        let same = [0.5; 10];
        let [flat] = paired_bootstrap([&same], 100, 1);
        assert_eq!((flat.value, flat.ci_low, flat.ci_high), (0.5, 0.5, 0.5));
    }

    /// The bootstrap written out from the seed's draws: resample `r` takes the `n` indices drawn
    /// `r · n` to `r · n + n - 1`, the same for every series (the pairing); with 401 resamples the
    /// 2.5 % and 97.5 % quantiles are the 11th and the 391st smallest means, no interpolation.
    #[test]
    fn bootstrap_equals_the_one_written_out_from_the_same_draws() {
        let em: Vec<f64> = (0..37)
            .map(|i| f64::from(i % 3 == 0) - f64::from(i % 5 == 0))
            .collect();
        let f1: Vec<f64> = (0..37).map(|i| f64::from(i * 7 % 11) / 10.0 - 0.4).collect();
        let n = em.len();
        let mut draws = SplitMix64(2026);
        let mut em_means = Vec::new();
        let mut f1_means = Vec::new();
        for _ in 0..401 {
            let picked: Vec<usize> = (0..n).map(|_| draws.below(n)).collect();
            em_means.push(picked.iter().map(|&idx| em[idx]).sum::<f64>() / n as f64);
            f1_means.push(picked.iter().map(|&idx| f1[idx]).sum::<f64>() / n as f64);
        }
        let [em_diff, f1_diff] = paired_bootstrap([&em, &f1], 401, 2026);
        for (diff, values, mut means) in [(em_diff, &em, em_means), (f1_diff, &f1, f1_means)] {
            means.sort_by(f64::total_cmp);
            let mean = values.iter().sum::<f64>() / n as f64;
            assert!((diff.value - mean).abs() < 1e-12, "{diff:?}");
            assert!((diff.ci_low - means[10]).abs() < 1e-12, "{diff:?} {}", means[10]);
            assert!(
                (diff.ci_high - means[390]).abs() < 1e-12,
                "{diff:?} {}",
                means[390]
            );
        }
        // Paired: a series and its mirror image are resampled alike, so their intervals mirror.
        let mirror: Vec<f64> = em.iter().map(|value| -value).collect();
        let [a, b] = paired_bootstrap([&em, &mirror], 1000, 3);
        assert!(
            (b.ci_low + a.ci_high).abs() < 1e-12 && (b.ci_high + a.ci_low).abs() < 1e-12,
            "{a:?} {b:?}"
        );
    }

    #[test]
    fn quantile_interpolates() {
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[1.0], 0.975), Some(1.0));
        assert_eq!(quantile(&[0.0, 1.0, 2.0, 3.0, 4.0], 0.5), Some(2.0));
        assert_eq!(quantile(&[0.0, 10.0], 0.25), Some(2.5));
    }
}
