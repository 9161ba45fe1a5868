//! `Summary`: what an evaluation adds up to — official EM/F1/precision/recall overall, by question
//! type and by how runs stopped; the mean cost of a question; wall time and throughput.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::analysis::prices::{Cost, PriceList, Tokens};
use crate::base::method::Method;
use crate::base::metrics::AnswerScore;
use crate::base::task::Task;
use crate::llm::cache::{CacheUse, SavedTokens};
use crate::record::questions::Question;
use crate::record::run::{BackoffReason, Run, Stopped, Usage};

/// What the summary keeps of one finished run: enough to score it, not its trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub kind: Option<String>,
    pub stopped: Stopped,
    /// `None` when the question has no gold answer.
    pub score: Option<AnswerScore>,
    pub n_steps: usize,
    pub usage: Usage,
    pub method: Method,
    /// CoT-SC's winning answer's share of the samples, when the run voted.
    pub vote_share: Option<f64>,
    /// Why a backoff method's run left its first phase, when it did.
    pub backoff: Option<BackoffReason>,
    /// With `--sc-stop`: the samples the run asked, and N.
    pub samples_asked: Option<(usize, usize)>,
    /// What `--cache` did for the run, when it was on.
    pub cache: Option<CacheUse>,
    /// The model the run asked, as it records it.
    pub model: Option<String>,
    /// Of `usage`, what replies of a vendor's batch API reported (`eval --batch`): priced at half.
    pub batched: Usage,
    /// What its steps wrote past their stop sequences ([`Run::past_stop`]).
    pub past_stop: Option<crate::llm::PastStop>,
}

impl Outcome {
    /// Scores `run` against `question`'s gold answer; a run without an answer scores zero.
    pub fn new(run: &Run, question: &Question) -> Outcome {
        let score = question
            .gold()
            .map(|gold| AnswerScore::new(run.answer.as_deref().unwrap_or(""), gold));
        Outcome::scored(run, question.kind.clone(), score)
    }

    /// What the summary keeps of `run`, of question type `kind`, scored `score`.
    pub fn scored(run: &Run, kind: Option<String>, score: Option<AnswerScore>) -> Outcome {
        Outcome {
            kind,
            stopped: run.how_stopped(),
            score,
            n_steps: run.steps.len(),
            usage: run.usage,
            method: run.method(),
            vote_share: run.vote.as_ref().map(crate::record::run::Vote::share),
            backoff: run.backoff.map(|backoff| backoff.reason),
            samples_asked: run.sc_stop.map(|record| (record.asked, record.samples)),
            cache: run.cache.clone(),
            model: run.model.clone(),
            batched: run.batched_usage(),
            past_stop: run.past_stop(),
        }
    }
}

/// What the runs of a method that votes or backs off add up to.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct MethodSummary {
    /// CoT-SC: the mean share of the samples the winning answer held, over the runs that voted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vote_share: Option<f64>,
    /// A backoff method: the share of the finished questions that backed off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_rate: Option<f64>,
    /// A backoff method: the questions that backed off, by reason.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub backoffs: BTreeMap<String, usize>,
    /// With `--sc-stop`: the mean samples asked per question, over the runs that sampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples_per_question: Option<f64>,
    /// With `--sc-stop`: the samples asked as a share of the N they could have asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples_asked_share: Option<f64>,
}

impl MethodSummary {
    fn of(outcomes: &[Outcome], method: Option<Method>) -> MethodSummary {
        let shares: Vec<f64> = outcomes.iter().filter_map(|outcome| outcome.vote_share).collect();
        let mut backoffs = BTreeMap::new();
        for reason in outcomes.iter().filter_map(|outcome| outcome.backoff) {
            *backoffs.entry(reason.as_str().to_owned()).or_insert(0) += 1;
        }
        let backs_off = method.is_some_and(Method::backs_off);
        let asked: Vec<(usize, usize)> = outcomes
            .iter()
            .filter_map(|outcome| outcome.samples_asked)
            .collect();
        let (n_asked, n_budget) = asked.iter().fold((0, 0), |(n_asked, n_budget), (asked, budget)| {
            (n_asked + asked, n_budget + budget)
        });
        MethodSummary {
            samples_per_question: (!asked.is_empty()).then(|| n_asked as f64 / asked.len() as f64),
            samples_asked_share: (n_budget > 0).then(|| n_asked as f64 / n_budget as f64),
            vote_share: (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64),
            backoff_rate: (backs_off && !outcomes.is_empty())
                .then(|| backoffs.values().sum::<usize>() as f64 / outcomes.len() as f64),
            backoffs,
        }
    }
}

/// Mean scores of a group of questions.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Scores {
    pub n: usize,
    pub em: f64,
    pub f1: f64,
    pub prec: f64,
    pub recall: f64,
}

impl Scores {
    pub(crate) fn of<'a>(scores: impl Iterator<Item = &'a AnswerScore>) -> Scores {
        Scores::mean(scores.map(|score| Scores {
            n: 1,
            em: f64::from(u8::from(score.em)),
            f1: score.f1,
            prec: score.precision,
            recall: score.recall,
        }))
    }

    /// The mean of `groups`, each counted once (`n` is how many there were).
    fn mean(groups: impl Iterator<Item = Scores>) -> Scores {
        let mut sums = Scores::default();
        for group in groups {
            sums.n += 1;
            sums.em += group.em;
            sums.f1 += group.f1;
            sums.prec += group.prec;
            sums.recall += group.recall;
        }
        if sums.n > 0 {
            let n = sums.n as f64;
            sums.em /= n;
            sums.f1 /= n;
            sums.prec /= n;
            sums.recall /= n;
        }
        sums
    }

    /// The overall line: label accuracy for FEVER, the answer metric for HotpotQA; what it counts
    /// that is no finished answer said inside its brackets (`(n = 3; incomplete: 3 errors, scored
    /// zero)`), so the figure is never read without it.
    pub(crate) fn write_headline(
        &self,
        task: Task,
        incomplete: Incomplete,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let n = format!("n = {}{}", self.n, incomplete.note());
        match task {
            Task::Fever => writeln!(out, "accuracy       {:.4} ({n})", self.em),
            Task::HotpotQa => writeln!(
                out,
                "EM {:.4}  F1 {:.4}  precision {:.4}  recall {:.4}  ({n})",
                self.em, self.f1, self.prec, self.recall
            ),
        }
    }
}

/// What a headline counts that is no finished answer: the rule every reader of runs that prints
/// a headline (`eval`, `score`, `replay`, `compare`, `report`) keeps. A run that ended in an error
/// and a gold question with no prediction are counted in `n` and scored zero, as the official
/// metric scores a missing answer; a headline that counts any, or an evaluation stopped before
/// its questions were done, is incomplete, and says so beside `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Incomplete {
    /// The attempts the headline counts that ended in an error.
    pub errors: usize,
    /// Questions the headline counts with no run (`score`: gold questions with no prediction).
    pub missing: usize,
    /// The evaluation was stopped (Ctrl-C) before every question was run: `n` counts the done.
    pub interrupted: bool,
}

impl Incomplete {
    /// Whether the headline lacks anything.
    pub fn is_incomplete(&self) -> bool {
        self.errors > 0 || self.missing > 0 || self.interrupted
    }

    /// `; incomplete: 1 error and 96 missing, scored zero`, or nothing when complete: what a
    /// headline's `n` is followed by.
    pub fn note(&self) -> String {
        self.describe()
            .map_or_else(String::new, |words| format!("; {words}"))
    }

    /// `incomplete: 1 error and 96 missing, scored zero`; `None` when complete.
    pub fn describe(&self) -> Option<String> {
        if !self.is_incomplete() {
            return None;
        }
        let mut scored_zero = Vec::new();
        if self.errors > 0 {
            scored_zero.push(crate::base::output::counted(self.errors, "error", "errors"));
        }
        if self.missing > 0 {
            scored_zero.push(format!("{} missing", self.missing));
        }
        let mut parts = Vec::new();
        if self.interrupted {
            parts.push("interrupted".to_owned());
        }
        if !scored_zero.is_empty() {
            parts.push(format!("{}, scored zero", scored_zero.join(" and ")));
        }
        Some(format!("incomplete: {}", parts.join("; ")))
    }

    /// The exit status DESIGN.md fixes for a command whose headline this is, `n_answered` of its
    /// questions answered: 2 when incomplete (the figure lacks errors, missing questions or an
    /// interrupted run: run it again), 1 when complete but nothing was answered, else 0.
    pub fn exit_code(&self, n_answered: usize) -> u8 {
        if self.is_incomplete() {
            2
        } else if n_answered == 0 {
            1
        } else {
            0
        }
    }
}

/// Each question's mean scores over its attempts, then the mean over questions (`n` questions).
pub fn mean_scores(per_question: &[Vec<AnswerScore>]) -> Scores {
    Scores::mean(
        per_question
            .iter()
            .filter(|attempts| !attempts.is_empty())
            .map(|attempts| Scores::of(attempts.iter())),
    )
}

/// The mean cost of one finished question.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct PerQuestion {
    pub steps: f64,
    /// Model calls answered (a reply the cache gave counts; a call that failed does not).
    pub llm_calls: f64,
    /// HTTP requests sent to the model server, over the runs that record them: every one,
    /// retries, re-sends and failed ones included (what a server bills by); absent when no run
    /// records them (runs of earlier versions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<f64>,
    pub fallback_calls: f64,
    pub invalid_actions: f64,
    pub prompt_tokens: f64,
    /// Of `prompt_tokens`, read from the server's prompt cache; absent when no run records any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<f64>,
    /// Of `prompt_tokens`, written to the server's prompt cache; absent when no run records any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<f64>,
    pub completion_tokens: f64,
    /// Of `completion_tokens`, those the model wrote past a step's stop sequence, which the
    /// client cut off (a server with no `stop`: the Responses API): an **estimate**, from the
    /// characters cut ([`crate::llm::PastStop`]). Absent when no run cut any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub past_stop_tokens_estimated: Option<f64>,
}

/// The evaluation's result, printed on stdout (`--json`: this object).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub task: Task,
    /// The method every run used (`None` when the runs mix methods). Left out for `react`, as
    /// its summaries always were.
    #[serde(skip_serializing_if = "is_react_or_mixed")]
    pub method: Option<Method>,
    /// CoT-SC's vote share and the backoff rate, where the method has them.
    #[serde(flatten)]
    pub method_summary: MethodSummary,
    /// Means over the finished questions with a gold answer (`n` of them). Errors score zero.
    #[serde(flatten)]
    pub scores: Scores,
    /// FEVER: label accuracy (the exact match of the normalized label).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
    /// By HotpotQA `type` (bridge, comparison).
    pub by_type: BTreeMap<String, Scores>,
    /// By how runs stopped: finish, max_steps, repeated_action, error.
    pub by_stopped: BTreeMap<String, Scores>,
    pub per_question: PerQuestion,
    /// Questions the selection names.
    pub selected: usize,
    /// Selected questions with a run in the results file.
    pub done: usize,
    /// Of those, found there when this evaluation started.
    pub resumed: usize,
    /// Of `n`, the attempts that ended in an error (each scored zero).
    pub errors: usize,
    /// The headline lacks something: `errors`, or the evaluation was interrupted ([`Incomplete`]).
    pub incomplete: bool,
    /// Ctrl-C stopped the evaluation before every selected question was done.
    pub interrupted: bool,
    pub wall_seconds: f64,
    /// Questions run by this invocation per minute of wall time.
    pub questions_per_minute: f64,
    pub results: PathBuf,
    /// Trials' rows, or epochs' reductions, when questions were asked more than once.
    #[serde(flatten)]
    pub attempts: super::attempts::AttemptsSummary,
    /// What `--cache` did, over the runs that used it; absent when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSummary>,
    /// The runs' tokens by the model they asked (`None`: not recorded), for [`Summary::price`].
    #[serde(skip)]
    pub tokens_by_model: BTreeMap<Option<String>, ModelTokens>,
    /// What the runs cost at `--prices` ([`Summary::price`]); absent without a price file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostSummary>,
}

/// The runs of one model and their tokens, summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModelTokens {
    pub runs: usize,
    pub tokens: Tokens,
    /// Of `tokens`, those of replies a batch gave: billed at half the price (OpenAI's Batch API,
    /// Anthropic's Message Batches).
    pub batched: Tokens,
}

/// One run's part of what runs spent: the model it asked (`None`: not recorded), its usage as it
/// records it, and of that what batches' replies spent (billed at half the price).
#[derive(Debug, Clone, Copy)]
pub struct Spent<'a> {
    pub model: Option<&'a str>,
    pub usage: &'a Usage,
    pub batched: Usage,
}

impl<'a> Spent<'a> {
    /// What `run` spent, as it records it.
    pub fn of_run(run: &'a Run) -> Spent<'a> {
        Spent {
            model: run.model.as_deref(),
            usage: &run.usage,
            batched: run.batched_usage(),
        }
    }
}

/// The tokens of runs by the model they asked.
pub fn tokens_by_model<'a>(
    runs: impl IntoIterator<Item = Spent<'a>>,
) -> BTreeMap<Option<String>, ModelTokens> {
    let mut by_model: BTreeMap<Option<String>, ModelTokens> = BTreeMap::new();
    for spent in runs {
        let entry = by_model.entry(spent.model.map(str::to_owned)).or_default();
        entry.runs += 1;
        entry.tokens = entry.tokens.plus(Tokens::of(spent.usage));
        entry.batched = entry.batched.plus(Tokens::of(&spent.batched));
    }
    by_model
}

/// What runs spent — the one account `score`, `compare`, `report` and `replay` give (`eval` gives
/// its [`Summary::tokens_by_model`] the same way): the tokens by kind, in all and a run, and with
/// `--prices` their exact cost ([`CostSummary`]). `--json`: `"tokens"` and `"cost"`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Spend {
    pub tokens: TokenTotals,
    /// Absent without a price file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostSummary>,
    #[serde(skip)]
    by_model: BTreeMap<Option<String>, ModelTokens>,
}

/// Runs' tokens by kind, summed.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct TokenTotals {
    /// Runs counted.
    pub runs: usize,
    /// Of them, the runs that record any token (a server that reports no usage gives none).
    pub runs_with_tokens: usize,
    #[serde(flatten)]
    pub tokens: Tokens,
}

impl Spend {
    /// The spend of runs.
    pub fn of<'a>(runs: impl IntoIterator<Item = Spent<'a>>) -> Spend {
        let mut runs_with_tokens = 0;
        let by_model = tokens_by_model(runs.into_iter().inspect(|spent| {
            let usage = spent.usage;
            runs_with_tokens += usize::from(usage.prompt_tokens > 0 || usage.completion_tokens > 0);
        }));
        Spend::from_by_model(by_model, runs_with_tokens)
    }

    fn from_by_model(by_model: BTreeMap<Option<String>, ModelTokens>, runs_with_tokens: usize) -> Spend {
        let (runs, tokens) = by_model
            .values()
            .fold((0, Tokens::default()), |(runs, tokens), counted| {
                (runs + counted.runs, tokens.plus(counted.tokens))
            });
        Spend {
            tokens: TokenTotals {
                runs,
                runs_with_tokens,
                tokens,
            },
            cost: None,
            by_model,
        }
    }

    /// Prices the runs at `prices` (`--prices`): fills [`Spend::cost`].
    pub fn price(&mut self, prices: &PriceList) {
        self.cost = Some(CostSummary::of(&self.by_model, prices));
    }

    /// `tokens         3000 input (2400 cached, 0 cache write), 90 output (30 reasoning), over
    /// 3 runs`, or that the runs record none; then the cost line when priced.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        for (name, text) in self.lines() {
            writeln!(out, "{name:<15}{text}")?;
        }
        Ok(())
    }

    /// The account's lines, each `(name, text)`: `tokens`, and `cost` when priced.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let TokenTotals {
            runs,
            runs_with_tokens,
            tokens,
        } = self.tokens;
        let counted_runs = crate::base::output::counted(runs, "run", "runs");
        let tokens = if runs_with_tokens == 0 {
            format!("not recorded: none of the {counted_runs} records usage (its model server reported none)")
        } else {
            let without = if runs_with_tokens < runs {
                format!(" ({} record none)", runs - runs_with_tokens)
            } else {
                String::new()
            };
            format!(
                "{} input ({} cached, {} cache write), {} output ({} reasoning), over {counted_runs}{without}",
                tokens.input, tokens.cached_input, tokens.cache_write, tokens.output, tokens.reasoning,
            )
        };
        let mut lines = vec![("tokens", tokens)];
        if let Some(cost) = &self.cost {
            lines.push(("cost", cost.describe()));
        }
        lines
    }
}

/// What an evaluation's runs cost at the prices of a `--prices` file: exact sums of tokens times
/// prices, over the runs whose model the file prices.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct CostSummary {
    /// In dollars, exact (`$0.0010656`).
    pub total: String,
    /// The total over the priced runs, per priced run (an attempt: a question, or one of its
    /// trials or epochs), in dollars.
    pub per_run: f64,
    /// Runs priced.
    pub priced: usize,
    /// Models of runs the file has no price for (those runs count in no figure here).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced_models: Vec<String>,
}

impl CostSummary {
    /// The cost of the runs of `by_model` at `prices`: a cost is linear in the tokens, so pricing
    /// each model's sum is pricing each run. Runs without a recorded model are unpriced.
    pub fn of(by_model: &BTreeMap<Option<String>, ModelTokens>, prices: &PriceList) -> CostSummary {
        let mut total = Cost::default();
        let mut priced = 0;
        let mut unpriced_models = Vec::new();
        for (model, counted) in by_model {
            match model.as_deref().and_then(|model| prices.price(model)) {
                Some(price) => {
                    // A batch bills half of what the same tokens cost one request at a time.
                    let full = price.cost(counted.tokens);
                    let discount = price.cost(counted.batched).0 / 2;
                    total = total.plus(Cost(full.0.saturating_sub(discount)));
                    priced += counted.runs;
                }
                None => {
                    unpriced_models.push(model.clone().unwrap_or_else(|| "(no model recorded)".to_owned()))
                }
            }
        }
        CostSummary {
            total: total.to_string(),
            per_run: if priced == 0 {
                0.0
            } else {
                total.dollars() / priced as f64
            },
            priced,
            unpriced_models,
        }
    }

    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "cost           {}", self.describe())
    }

    /// `$0.000324 in all, $0.000108 a run, over 3 runs`, naming the models left unpriced.
    pub fn describe(&self) -> String {
        let unpriced = if self.unpriced_models.is_empty() {
            String::new()
        } else {
            format!("; no price for {}", self.unpriced_models.join(", "))
        };
        format!(
            "{} in all, ${:.6} a run, over {}{unpriced}",
            self.total,
            self.per_run,
            crate::base::output::counted(self.priced, "run", "runs")
        )
    }
}

/// The model calls of an evaluation's runs that went through `--cache`, those it answered and
/// the tokens they saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CacheSummary {
    pub calls: u64,
    pub hits: u64,
    pub saved: SavedTokens,
}

impl CacheSummary {
    /// The sum over `outcomes` that used the cache; `None` when none did.
    fn of(outcomes: &[Outcome]) -> Option<CacheSummary> {
        let mut total: Option<CacheSummary> = None;
        for cache_use in outcomes.iter().filter_map(|outcome| outcome.cache.as_ref()) {
            let total = total.get_or_insert_with(CacheSummary::default);
            // Saturating: a results file's counts are any `u64`.
            total.calls = total.calls.saturating_add(cache_use.calls);
            total.hits = total.hits.saturating_add(cache_use.hits.len() as u64);
            total.saved.prompt_tokens = total
                .saved
                .prompt_tokens
                .saturating_add(cache_use.saved.prompt_tokens);
            total.saved.completion_tokens = total
                .saved
                .completion_tokens
                .saturating_add(cache_use.saved.completion_tokens);
        }
        total
    }

    fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "cache          {} of {} LLM calls answered by the cache, {} prompt and {} completion tokens saved",
            self.hits, self.calls, self.saved.prompt_tokens, self.saved.completion_tokens
        )
    }
}

fn is_react_or_mixed(method: &Option<Method>) -> bool {
    method.is_none_or(|method| method == Method::React)
}

/// What the summary needs besides the outcomes.
#[derive(Debug, Clone)]
pub struct SummaryContext {
    pub task: Task,
    pub selected: usize,
    pub resumed: usize,
    pub interrupted: bool,
    pub wall_time: Duration,
    pub results: PathBuf,
}

impl Summary {
    /// Prices the runs at `prices` (`--prices`): fills [`Summary::cost`].
    pub fn price(&mut self, prices: &PriceList) {
        self.cost = Some(CostSummary::of(&self.tokens_by_model, prices));
    }

    /// Questions whose model wrote `Finish[...]` (this run or a resumed one).
    pub fn n_finished(&self) -> usize {
        self.by_stopped
            .get(crate::record::run::Stopped::Finish.as_str())
            .map_or(0, |scores| scores.n)
    }

    /// What the headline lacks: the errors it counts, and whether the evaluation was interrupted.
    pub fn incompleteness(&self) -> Incomplete {
        Incomplete {
            errors: self.errors,
            missing: 0,
            interrupted: self.interrupted,
        }
    }

    /// The exit code DESIGN.md fixes ([`Incomplete::exit_code`]): 2 when interrupted or when a
    /// question ended in an error (the headline is incomplete), 1 when questions ran but none was
    /// answered, else 0.
    pub fn exit_code(&self) -> u8 {
        self.incompleteness().exit_code(self.n_finished())
    }

    pub fn new(outcomes: &[Outcome], context: SummaryContext) -> Summary {
        let overall = Scores::of(outcomes.iter().filter_map(|outcome| outcome.score.as_ref()));
        let mut by_type: BTreeMap<String, Vec<&AnswerScore>> = BTreeMap::new();
        let mut by_stopped: BTreeMap<String, Vec<&AnswerScore>> = BTreeMap::new();
        for outcome in outcomes {
            let Some(score) = &outcome.score else { continue };
            if let Some(kind) = &outcome.kind {
                by_type.entry(kind.clone()).or_default().push(score);
            }
            by_stopped
                .entry(outcome.stopped.as_str().to_owned())
                .or_default()
                .push(score);
        }
        let group = |groups: BTreeMap<String, Vec<&AnswerScore>>| {
            groups
                .into_iter()
                .map(|(name, scores)| (name, Scores::of(scores.into_iter())))
                .collect()
        };
        let mut total = Usage::default();
        let mut n_steps = 0;
        let mut n_recording_requests = 0;
        let mut past_stop = None;
        for outcome in outcomes {
            total.add(&outcome.usage);
            past_stop = crate::llm::PastStop::sum(past_stop, outcome.past_stop);
            n_steps += outcome.n_steps;
            n_recording_requests += usize::from(outcome.usage.requests.is_some());
        }
        let mean = |sum: u64| {
            if outcomes.is_empty() {
                0.0
            } else {
                sum as f64 / outcomes.len() as f64
            }
        };
        let wall_seconds = context.wall_time.as_secs_f64();
        let n_run_now = outcomes.len() - context.resumed;
        let method = match outcomes.first() {
            Some(first) if outcomes.iter().all(|outcome| outcome.method == first.method) => {
                Some(first.method)
            }
            Some(_) => None,
            None => Some(Method::React),
        };
        let errors = outcomes
            .iter()
            .filter(|outcome| outcome.stopped == Stopped::Error)
            .count();
        Summary {
            task: context.task,
            method,
            method_summary: MethodSummary::of(outcomes, method),
            scores: overall,
            accuracy: (context.task == Task::Fever).then_some(overall.em),
            by_type: group(by_type),
            by_stopped: group(by_stopped),
            per_question: PerQuestion {
                steps: mean(n_steps as u64),
                llm_calls: mean(total.llm_calls),
                requests: total
                    .requests
                    .map(|requests| requests as f64 / n_recording_requests.max(1) as f64),
                fallback_calls: mean(total.fallback_calls),
                invalid_actions: mean(total.invalid_actions),
                prompt_tokens: mean(total.prompt_tokens),
                cached_tokens: (total.cached_tokens > 0).then(|| mean(total.cached_tokens)),
                cache_write_tokens: (total.cache_write_tokens > 0).then(|| mean(total.cache_write_tokens)),
                completion_tokens: mean(total.completion_tokens),
                past_stop_tokens_estimated: past_stop.map(|past| mean(past.tokens_estimated)),
            },
            selected: context.selected,
            done: outcomes.len(),
            resumed: context.resumed,
            errors,
            incomplete: errors > 0 || context.interrupted,
            interrupted: context.interrupted,
            wall_seconds,
            questions_per_minute: if wall_seconds > 0.0 {
                n_run_now as f64 * 60.0 / wall_seconds
            } else {
                0.0
            },
            results: context.results,
            attempts: super::attempts::AttemptsSummary::default(),
            cache: CacheSummary::of(outcomes),
            tokens_by_model: tokens_by_model(outcomes.iter().map(|outcome| Spent {
                model: outcome.model.as_deref(),
                usage: &outcome.usage,
                batched: outcome.batched,
            })),
            cost: None,
        }
    }

    /// The human-readable summary.
    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        let status = if self.interrupted { ", interrupted" } else { "" };
        let errors = crate::base::output::counted(self.errors, "error", "errors");
        writeln!(
            out,
            "questions      {} selected, {} done ({} resumed, {errors}){status}",
            self.selected, self.done, self.resumed
        )?;
        if let Some(method) = self.method.filter(|method| *method != Method::React) {
            writeln!(out, "method         {method}")?;
        }
        self.scores
            .write_headline(self.task, self.incompleteness(), out)?;
        self.attempts.write_text(out)?;
        if let Some(share) = self.method_summary.vote_share {
            writeln!(
                out,
                "vote share     {share:.4} (mean share of the samples the winning answer held)"
            )?;
        }
        if let (Some(mean), Some(share)) = (
            self.method_summary.samples_per_question,
            self.method_summary.samples_asked_share,
        ) {
            writeln!(
                out,
                "samples        {mean:.2} per question ({:.1}% of the N asked, `--sc-stop`)",
                100.0 * share
            )?;
        }
        if let Some(rate) = self.method_summary.backoff_rate {
            let reasons: Vec<String> = self
                .method_summary
                .backoffs
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect();
            let reasons = if reasons.is_empty() {
                String::new()
            } else {
                format!(": {}", reasons.join(", "))
            };
            writeln!(out, "backoff rate   {rate:.4} of the questions{reasons}")?;
        }
        for (title, groups) in [("by type", &self.by_type), ("by stop", &self.by_stopped)] {
            if groups.is_empty() {
                continue;
            }
            // FEVER is scored by label accuracy (the EM of the label): F1 means nothing there.
            match self.task {
                Task::Fever => writeln!(out, "{title:<18}{:>5}{:>10}", "n", "accuracy")?,
                Task::HotpotQa => writeln!(
                    out,
                    "{title:<18}{:>5}{:>8}{:>8}{:>8}{:>8}",
                    "n", "EM", "F1", "prec", "recall"
                )?,
            }
            for (name, scores) in groups {
                match self.task {
                    Task::Fever => writeln!(out, "  {name:<16}{:>5}{:>10.4}", scores.n, scores.em)?,
                    Task::HotpotQa => writeln!(
                        out,
                        "  {name:<16}{:>5}{:>8.4}{:>8.4}{:>8.4}{:>8.4}",
                        scores.n, scores.em, scores.f1, scores.prec, scores.recall
                    )?,
                }
            }
        }
        let per = &self.per_question;
        let requests = per
            .requests
            .map_or_else(String::new, |requests| format!(" ({requests:.2} requests sent)"));
        let prompt_cache = match (per.cached_tokens, per.cache_write_tokens) {
            (None, None) => String::new(),
            (cached, written) => format!(
                " ({:.0} read from the prompt cache, {:.0} written to it)",
                cached.unwrap_or(0.0),
                written.unwrap_or(0.0)
            ),
        };
        let past_stop = per.past_stop_tokens_estimated.map_or_else(String::new, |tokens| {
            format!(" ({tokens:.0} of them past the stop sequence, est.)")
        });
        writeln!(
            out,
            "per question   {:.2} steps, {:.2} LLM calls{requests}, {:.2} fallback calls, {:.2} invalid actions, {:.0} prompt tokens{prompt_cache}, {:.0} completion tokens{past_stop}",
            per.steps,
            per.llm_calls,
            per.fallback_calls,
            per.invalid_actions,
            per.prompt_tokens,
            per.completion_tokens
        )?;
        if let Some(cache) = &self.cache {
            cache.write_text(out)?;
        }
        if let Some(cost) = &self.cost {
            cost.write_text(out)?;
        }
        writeln!(
            out,
            "wall time      {:.1} s, {:.1} questions/minute",
            self.wall_seconds, self.questions_per_minute
        )?;
        writeln!(out, "results        {}", self.results.display())
    }
}
