//! `Attempts`: how many times an evaluation asks each question — once, in Reflexion's trials
//! (trial k+1 asks only what is not yet right), or in independent epochs — and what repeated
//! attempts add up to: right so far by trial; mean EM/F1 with their standard error, the
//! strict-majority EM and the unbiased pass@k over epochs.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::base::method::Reflect;
use crate::base::metrics::normalize_answer;
use crate::record::run::Attempt;

/// How many times each question is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Attempts {
    /// Once (no `--trials`, no `--epochs`).
    #[default]
    Once,
    /// Reflexion's protocol (`--trials K --reflect S`): trial 1 asks every question, trial k+1
    /// only those no trial has answered right yet, up to `trials`.
    Trials { trials: u32, reflect: Reflect },
    /// Every question `epochs` times, independently (`--epochs K`).
    Epochs(u32),
}

impl Attempts {
    /// Whether `attempt` is one this evaluation makes (the kind, not the number).
    pub fn makes(self, attempt: Attempt) -> bool {
        matches!(
            (self, attempt),
            (Attempts::Once, Attempt::Only)
                | (Attempts::Trials { .. }, Attempt::Trial(_))
                | (Attempts::Epochs(_), Attempt::Epoch(_))
        )
    }

    /// The attempts' kind in words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Attempts::Once => "one attempt a question",
            Attempts::Trials { .. } => "trials (`--trials`)",
            Attempts::Epochs(_) => "epochs (`--epochs`)",
        }
    }
}

/// The kind of attempts `attempt` belongs to, in words, for messages.
pub fn describe(attempt: Attempt) -> &'static str {
    match attempt {
        Attempt::Only => Attempts::Once.describe(),
        Attempt::Trial(_) => "trials (`--trials`)",
        Attempt::Epoch(_) => "epochs (`--epochs`)",
    }
}

/// One attempt at a question, scored.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptScore {
    pub id: String,
    pub attempt: Attempt,
    pub em: bool,
    pub f1: f64,
    /// The answer given, if any.
    pub answer: Option<String>,
}

/// One trial's row: the questions it asked, how many it answered right, and how many are right
/// after it (Reflexion's "correct after trial k": right in this trial or an earlier one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TrialRow {
    pub trial: u32,
    pub ran: usize,
    pub right: usize,
    pub right_so_far: usize,
}

/// What independent epochs add up to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochStats {
    /// The most epochs a question had.
    pub epochs: u32,
    /// The questions every figure is over (as the headline's `n`), with no run or not.
    pub n_questions: usize,
    /// The attempts made of them (an attempt not made counts as wrong).
    pub n_attempts: usize,
    /// The mean over questions of each question's mean EM over its epochs.
    pub mean_em: f64,
    /// Its standard error over questions (`null` under two questions).
    pub mean_em_stderr: Option<f64>,
    pub mean_f1: f64,
    pub mean_f1_stderr: Option<f64>,
    /// The EM of each question's strict-majority answer (more than half its epochs gave it,
    /// once normalised); no strict majority is no answer, scored zero.
    pub majority_em: f64,
    /// Unbiased pass@k (Chen et al. 2021) for k = 1, 2, 4, 8, … up to the epochs, and the epochs.
    pub pass_at: PassAt,
}

/// pass@k by k, in the order of k; serialised as an object with string keys.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PassAt(pub Vec<(u32, f64)>);

impl Serialize for PassAt {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, value) in &self.0 {
            map.serialize_entry(&k.to_string(), value)?;
        }
        map.end()
    }
}

/// What the attempts of an evaluation add up to, beside its headline (`--json`: `trials`, or
/// `mean_em`, `majority_em`, `pass_at` and their kin).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct AttemptsSummary {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<TrialRow>,
    /// The questions the trials' rows are over (as the headline's `n`), run or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trials_n: Option<usize>,
    /// Questions with no attempt at all (counted as wrong under every figure).
    #[serde(skip_serializing_if = "is_zero")]
    pub no_answer: usize,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<EpochStats>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl AttemptsSummary {
    /// Sums up `scores` (every attempt of every question, any order) over `questions`, the
    /// questions the headline counts: the trial rows when they are trials, the epoch statistics
    /// when they are epochs; nothing for single attempts. A question with no attempt, or fewer
    /// epochs than the others, counts its missing attempts as wrong, so every figure is over the
    /// same questions.
    pub fn of(scores: &[AttemptScore], questions: &[&str]) -> AttemptsSummary {
        let trials: Vec<&AttemptScore> = scores
            .iter()
            .filter(|score| matches!(score.attempt, Attempt::Trial(_)))
            .collect();
        let epochs: Vec<&AttemptScore> = scores
            .iter()
            .filter(|score| matches!(score.attempt, Attempt::Epoch(_)))
            .collect();
        let attempted: std::collections::HashSet<&str> =
            scores.iter().map(|score| score.id.as_str()).collect();
        let no_answer = questions.iter().filter(|id| !attempted.contains(*id)).count();
        if trials.is_empty() && epochs.is_empty() {
            return AttemptsSummary::default();
        }
        AttemptsSummary {
            trials_n: (!trials.is_empty()).then_some(questions.len()),
            trials: trial_rows(&trials),
            no_answer,
            epochs: (!epochs.is_empty()).then(|| epoch_stats(&epochs, questions)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.trials.is_empty() && self.epochs.is_none()
    }

    /// The summary's lines for people.
    pub fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        if let Some(n) = self.trials_n {
            writeln!(
                out,
                "trials         over n = {}{}",
                crate::base::output::counted(n, "question", "questions"),
                self.no_answer_text()
            )?;
            writeln!(out, "               trial    ran  right  right so far")?;
            for row in &self.trials {
                writeln!(
                    out,
                    "               {:>5}  {:>5}  {:>5}  {:>12}",
                    row.trial, row.ran, row.right, row.right_so_far
                )?;
            }
        }
        if let Some(epochs) = &self.epochs {
            let stderr = |value: Option<f64>| value.map_or_else(String::new, |se| format!(" ± {se:.4}"));
            writeln!(
                out,
                "epochs         {} over n = {} ({} made){}",
                crate::base::output::counted(epochs.epochs as usize, "epoch", "epochs"),
                crate::base::output::counted(epochs.n_questions, "question", "questions"),
                crate::base::output::counted(epochs.n_attempts, "attempt", "attempts"),
                self.no_answer_text()
            )?;
            writeln!(
                out,
                "               mean EM {:.4}{}  mean F1 {:.4}{}  majority EM {:.4}",
                epochs.mean_em,
                stderr(epochs.mean_em_stderr),
                epochs.mean_f1,
                stderr(epochs.mean_f1_stderr),
                epochs.majority_em
            )?;
            let pass: Vec<String> = epochs
                .pass_at
                .0
                .iter()
                .map(|(k, value)| format!("pass@{k} {value:.4}"))
                .collect();
            writeln!(out, "               {}", pass.join("  "))?;
        }
        Ok(())
    }
}

impl AttemptsSummary {
    fn no_answer_text(&self) -> String {
        match self.no_answer {
            0 => String::new(),
            n => format!(", {n} with no run (counted wrong)"),
        }
    }
}

/// The rows of trials 1 to the last one any question reached.
fn trial_rows(scores: &[&AttemptScore]) -> Vec<TrialRow> {
    let last = scores
        .iter()
        .filter_map(|score| match score.attempt {
            Attempt::Trial(k) => Some(k),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    // The first trial each question was right in.
    let mut right_in: HashMap<&str, u32> = HashMap::new();
    for score in scores {
        if let (Attempt::Trial(k), true) = (score.attempt, score.em) {
            let first = right_in.entry(score.id.as_str()).or_insert(k);
            *first = (*first).min(k);
        }
    }
    (1..=last)
        .map(|trial| {
            let this: Vec<&&AttemptScore> = scores
                .iter()
                .filter(|score| score.attempt == Attempt::Trial(trial))
                .collect();
            TrialRow {
                trial,
                ran: this.len(),
                right: this.iter().filter(|score| score.em).count(),
                right_so_far: right_in.values().filter(|&&first| first <= trial).count(),
            }
        })
        .collect()
}

/// Attempts grouped by their question: the one grouping `eval`, `score`, `compare` and `report`
/// make. The ids in the order first met; each id's items in the order given.
#[derive(Debug)]
pub struct ByQuestion<'a, T> {
    pub order: Vec<&'a str>,
    pub groups: HashMap<&'a str, Vec<&'a T>>,
}

impl<'a, T> ByQuestion<'a, T> {
    pub fn of(items: impl IntoIterator<Item = &'a T>, id: impl Fn(&'a T) -> &'a str) -> ByQuestion<'a, T> {
        let mut grouped = ByQuestion {
            order: Vec::new(),
            groups: HashMap::new(),
        };
        for item in items {
            let key = id(item);
            grouped
                .groups
                .entry(key)
                .or_insert_with(|| {
                    grouped.order.push(key);
                    Vec::new()
                })
                .push(item);
        }
        grouped
    }
}

/// Each of `questions`' epochs, in `questions`' order (none for a question with no run).
fn by_question<'a>(scores: &[&'a AttemptScore], questions: &[&str]) -> Vec<Vec<&'a AttemptScore>> {
    let mut grouped = ByQuestion::of(scores.iter().copied(), |score| score.id.as_str());
    questions
        .iter()
        .map(|id| grouped.groups.remove(*id).unwrap_or_default())
        .collect()
}

fn epoch_stats(scores: &[&AttemptScore], questions: &[&str]) -> EpochStats {
    let groups = by_question(scores, questions);
    let most = groups.iter().map(Vec::len).max().unwrap_or(0);
    // Each question over `most` attempts: the ones not made are wrong, with no answer.
    let em_means: Vec<f64> = groups
        .iter()
        .map(|attempts| attempts.iter().filter(|score| score.em).count() as f64 / most.max(1) as f64)
        .collect();
    let f1_means: Vec<f64> = groups
        .iter()
        .map(|attempts| attempts.iter().map(|score| score.f1).sum::<f64>() / most.max(1) as f64)
        .collect();
    let pass_at = pass_ks(most)
        .into_iter()
        .map(|k| {
            let values = groups
                .iter()
                .map(|attempts| pass_at_k(most, attempts.iter().filter(|score| score.em).count(), k));
            (k as u32, mean(values))
        })
        .collect();
    EpochStats {
        epochs: most as u32,
        n_questions: questions.len(),
        n_attempts: scores.len(),
        mean_em: mean(em_means.iter().copied()),
        mean_em_stderr: standard_error(&em_means),
        mean_f1: mean(f1_means.iter().copied()),
        mean_f1_stderr: standard_error(&f1_means),
        majority_em: mean(groups.iter().map(|attempts| {
            let mut answers: Vec<(Option<&str>, bool)> = attempts
                .iter()
                .map(|score| (score.answer.as_deref(), score.em))
                .collect();
            answers.resize(most, (None, false));
            f64::from(u8::from(strict_majority(&answers).is_some_and(|(_, em)| em)))
        })),
        pass_at: PassAt(pass_at),
    }
}

/// The mean, 0 for nothing.
fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(sum, n), value| (sum + value, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The standard error of the mean of `values` (sample standard deviation over √n).
fn standard_error(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = mean(values.iter().copied());
    let variance = values.iter().map(|value| (value - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((variance / n as f64).sqrt())
}

/// The k that pass@k is given for, with `n` attempts: 1, 2, 4, 8, … up to `n`, and `n`.
pub fn pass_ks(n: usize) -> Vec<usize> {
    let mut ks: Vec<usize> = std::iter::successors(Some(1usize), |k| k.checked_mul(2))
        .take_while(|&k| k <= n)
        .collect();
    if n > 0 && ks.last() != Some(&n) {
        ks.push(n);
    }
    ks
}

/// Unbiased pass@k of a question with `n` attempts, `c` of them right: `1 - C(n-c, k) / C(n, k)`,
/// as the product `1 - Π_{i=n-c+1..n} (1 - k/i)` (Chen et al. 2021), which never overflows.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> f64 {
    if n - c < k {
        return 1.0;
    }
    1.0 - ((n - c + 1)..=n)
        .map(|i| 1.0 - k as f64 / i as f64)
        .product::<f64>()
}

/// The strict majority of `answers` (each with its EM): the normalised answer more than half of
/// them gave (attempts without an answer count in the half but do not vote), with its EM, and
/// the index of its first giver.
pub fn strict_majority(answers: &[(Option<&str>, bool)]) -> Option<(usize, bool)> {
    let mut counts: BTreeMap<String, (usize, usize, bool)> = BTreeMap::new();
    for (idx, (answer, em)) in answers.iter().enumerate() {
        let Some(answer) = answer.filter(|answer| !answer.trim().is_empty()) else {
            continue;
        };
        let entry = counts.entry(normalize_answer(answer)).or_insert((0, idx, *em));
        entry.0 += 1;
    }
    counts
        .into_values()
        .find(|(count, _, _)| count * 2 > answers.len())
        .map(|(_, first, em)| (first, em))
}

/// How a question's several attempts become one answer, to pair it with another file's
/// (`compare`, `report`): `final`, `--trial N`, `majority`, `pass@K`, `mean`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reduce {
    /// Trials: the state after the last trial (right in any, else the last); epochs: the strict
    /// majority.
    #[default]
    Final,
    /// The state after trial N (right in a trial up to N, else trial N's, else the latest before).
    Trial(u32),
    /// The strict-majority answer (none: no answer).
    Majority,
    /// Right when one of the first K attempts is: that one, else the K-th.
    PassAt(u32),
    /// EM and F1 averaged over the attempts; right when most attempts are.
    Mean,
}

impl std::fmt::Display for Reduce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reduce::Final => f.write_str("final"),
            Reduce::Trial(n) => write!(f, "trial {n}"),
            Reduce::Majority => f.write_str("majority"),
            Reduce::PassAt(k) => write!(f, "pass@{k}"),
            Reduce::Mean => f.write_str("mean"),
        }
    }
}

impl std::str::FromStr for Reduce {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "final" => Ok(Reduce::Final),
            "majority" => Ok(Reduce::Majority),
            "mean" => Ok(Reduce::Mean),
            _ => s
                .strip_prefix("pass@")
                .and_then(|k| k.parse::<u32>().ok())
                .filter(|&k| k > 0)
                .map(Reduce::PassAt)
                .ok_or_else(|| {
                    format!(
                        "unknown reduction `{s}`: expected `final`, `majority`, `mean` or `pass@K` (K ≥ 1)"
                    )
                }),
        }
    }
}

/// One attempt as a reduction sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen<'a> {
    pub attempt: Attempt,
    pub em: bool,
    pub f1: f64,
    pub answer: Option<&'a str>,
}

/// A question's attempts reduced to one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reduced {
    /// This attempt (an index into the attempts given).
    Attempt(usize),
    /// No strict majority: no answer (shown with this attempt's question and gold).
    NoAnswer(usize),
    /// The means over the attempts (shown with the first attempt's question and gold).
    Mean { first: usize, em: f64, f1: f64 },
}

impl Reduce {
    /// Reduces one question's attempts (at least one); `None` when the reduction keeps none of
    /// them (`--trial N` of a question that started after trial N: never happens in a trials file).
    pub fn reduce(self, attempts: &[Seen<'_>]) -> Option<Reduced> {
        let number = |seen: &Seen<'_>| match seen.attempt {
            Attempt::Only => 0,
            Attempt::Trial(k) | Attempt::Epoch(k) => k,
        };
        let is_epochs = attempts
            .iter()
            .any(|seen| matches!(seen.attempt, Attempt::Epoch(_)));
        let mut order: Vec<usize> = (0..attempts.len()).collect();
        order.sort_by_key(|&idx| number(&attempts[idx]));
        // The first right among `kept` (in attempt order), else the last of them; a single run
        // given twice is not two attempts: its later line overrides the earlier.
        let right_else_last = |kept: &[usize]| {
            kept.iter()
                .copied()
                .find(|&idx| attempts[idx].em && attempts[idx].attempt != Attempt::Only)
                .or(kept.last().copied())
                .map(Reduced::Attempt)
        };
        match self {
            Reduce::Final if is_epochs => Reduce::Majority.reduce(attempts),
            Reduce::Final => right_else_last(&order),
            Reduce::Trial(n) => {
                let kept: Vec<usize> = order
                    .into_iter()
                    .filter(|&idx| number(&attempts[idx]) <= n)
                    .collect();
                right_else_last(&kept)
            }
            Reduce::PassAt(k) => {
                let kept: Vec<usize> = order.into_iter().take(k as usize).collect();
                right_else_last(&kept)
            }
            Reduce::Majority => {
                let answers: Vec<(Option<&str>, bool)> = order
                    .iter()
                    .map(|&idx| (attempts[idx].answer, attempts[idx].em))
                    .collect();
                Some(match strict_majority(&answers) {
                    Some((first, _)) => Reduced::Attempt(order[first]),
                    None => Reduced::NoAnswer(order[0]),
                })
            }
            Reduce::Mean => {
                let n = attempts.len() as f64;
                Some(Reduced::Mean {
                    first: order[0],
                    em: attempts.iter().filter(|seen| seen.em).count() as f64 / n,
                    f1: attempts.iter().map(|seen| seen.f1).sum::<f64>() / n,
                })
            }
        }
    }

    /// The attempts the reduction looks at (what the question cost under it): all of them, the
    /// trials up to N, or the first K.
    pub fn considered(self, attempts: &[Seen<'_>]) -> Vec<usize> {
        let number = |idx: &usize| match attempts[*idx].attempt {
            Attempt::Only => 0,
            Attempt::Trial(k) | Attempt::Epoch(k) => k,
        };
        let mut order: Vec<usize> = (0..attempts.len()).collect();
        order.sort_by_key(number);
        match self {
            Reduce::Trial(n) => order.into_iter().filter(|idx| number(idx) <= n).collect(),
            Reduce::PassAt(k) => order.into_iter().take(k as usize).collect(),
            Reduce::Final | Reduce::Majority | Reduce::Mean => order,
        }
    }

    /// What the reduction keeps, in words, for a file whose attempts are like `attempt` (trials
    /// or epochs).
    pub fn describe(self, attempt: Attempt) -> String {
        let epochs = matches!(attempt, Attempt::Epoch(_));
        match (self, epochs) {
            (Reduce::Final, false) => "final state of its trials (right in any)".to_owned(),
            (Reduce::Final | Reduce::Majority, true) => {
                "strict majority of its epochs (none: no answer)".to_owned()
            }
            (Reduce::Majority, false) => "strict majority of its trials (none: no answer)".to_owned(),
            (Reduce::Trial(n), _) => format!("state after trial {n}"),
            (Reduce::PassAt(k), _) => format!("pass@{k}: right when one of the first {k} attempts is"),
            (Reduce::Mean, _) => "mean EM and F1 over its attempts (right when most are)".to_owned(),
        }
    }
}

/// What each question counts for in an evaluation's headline (`eval`, `score`), in the order of
/// `per_question` (each question's attempts, with what the caller scores them by): trials and
/// single runs their final state ([`Reduce::Final`]: right in any trial, else the last; of a
/// single run given twice, the later line); epochs every attempt, each question padded with
/// `wrong` to as many attempts as the most any question had, as [`EpochStats`] counts them. A
/// question with no attempt counts as wrong (`wrong` once, or as many times as the epochs).
pub fn headline<T: Clone>(per_question: &[Vec<(Seen<'_>, T)>], wrong: &T) -> Vec<Vec<T>> {
    let is_epochs = per_question
        .iter()
        .flatten()
        .any(|(seen, _)| matches!(seen.attempt, Attempt::Epoch(_)));
    if is_epochs {
        let most = per_question.iter().map(Vec::len).max().unwrap_or(0).max(1);
        return per_question
            .iter()
            .map(|attempts| {
                let mut scores: Vec<T> = attempts.iter().map(|(_, score)| score.clone()).collect();
                scores.resize(most, wrong.clone());
                scores
            })
            .collect();
    }
    per_question
        .iter()
        .map(|attempts| {
            let seen: Vec<Seen<'_>> = attempts.iter().map(|(seen, _)| *seen).collect();
            let chosen = match Reduce::Final.reduce(&seen) {
                Some(Reduced::Attempt(idx)) => attempts[idx].1.clone(),
                _ => wrong.clone(),
            };
            vec![chosen]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(id: &str, attempt: Attempt, em: bool, answer: &str) -> AttemptScore {
        AttemptScore {
            id: id.into(),
            attempt,
            em,
            f1: if em { 1.0 } else { 0.0 },
            answer: (!answer.is_empty()).then(|| answer.to_owned()),
        }
    }

    #[test]
    fn reductions_pick_by_hand() {
        let seen = |attempt, em, answer| Seen {
            attempt,
            em,
            f1: if em { 1.0 } else { 0.5 },
            answer: Some(answer),
        };
        // Given out of order: trials 3, 1, 2; right in trial 2.
        let trials = [
            seen(Attempt::Trial(3), false, "c"),
            seen(Attempt::Trial(1), false, "a"),
            seen(Attempt::Trial(2), true, "b"),
        ];
        assert_eq!(Reduce::Final.reduce(&trials), Some(Reduced::Attempt(2)));
        assert_eq!(Reduce::Trial(1).reduce(&trials), Some(Reduced::Attempt(1)));
        assert_eq!(Reduce::Trial(2).reduce(&trials), Some(Reduced::Attempt(2)));
        assert_eq!(Reduce::PassAt(1).reduce(&trials), Some(Reduced::Attempt(1)));
        let epochs = [
            seen(Attempt::Epoch(1), false, "x"),
            seen(Attempt::Epoch(2), true, "gold"),
            seen(Attempt::Epoch(3), false, "X"),
        ];
        assert_eq!(Reduce::Final.reduce(&epochs), Some(Reduced::Attempt(0)));
        assert_eq!(Reduce::PassAt(2).reduce(&epochs), Some(Reduced::Attempt(1)));
        let Some(Reduced::Mean { first: 0, em, f1 }) = Reduce::Mean.reduce(&epochs) else {
            panic!("mean")
        };
        assert!((em - 1.0 / 3.0).abs() < 1e-12 && (f1 - 2.0 / 3.0).abs() < 1e-12);
        let split = [
            seen(Attempt::Epoch(1), false, "x"),
            seen(Attempt::Epoch(2), true, "y"),
        ];
        assert_eq!(Reduce::Majority.reduce(&split), Some(Reduced::NoAnswer(0)));
        assert_eq!("pass@4".parse(), Ok(Reduce::PassAt(4)));
        assert!("pass@0".parse::<Reduce>().is_err() && "best".parse::<Reduce>().is_err());
    }

    #[test]
    fn pass_at_k_is_chens_estimator() {
        // n = 5, c = 2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@4 = 1 (3 < 4).
        assert!((pass_at_k(5, 2, 1) - 0.4).abs() < 1e-12);
        assert!((pass_at_k(5, 2, 2) - 0.7).abs() < 1e-12);
        assert_eq!(pass_at_k(5, 2, 4), 1.0);
        assert_eq!(pass_at_k(5, 0, 5), 0.0);
        assert_eq!(pass_ks(5), vec![1, 2, 4, 5]);
        assert_eq!(pass_ks(8), vec![1, 2, 4, 8]);
        assert_eq!(pass_ks(1), vec![1]);
    }

    #[test]
    fn a_majority_must_be_strict() {
        assert_eq!(
            strict_majority(&[
                (Some("Paris"), true),
                (Some("the paris"), true),
                (Some("Rome"), false)
            ]),
            Some((0, true))
        );
        // Two of four is no strict majority; answerless attempts count but do not vote.
        assert_eq!(
            strict_majority(&[
                (Some("a"), true),
                (Some("a"), true),
                (Some("b"), false),
                (None, false)
            ]),
            None
        );
        assert_eq!(
            strict_majority(&[(None, false), (None, false), (Some("b"), false)]),
            None
        );
    }

    #[test]
    fn trials_count_right_so_far() {
        let scores = vec![
            score("q1", Attempt::Trial(1), true, "x"),
            score("q2", Attempt::Trial(1), false, "y"),
            score("q3", Attempt::Trial(1), false, "z"),
            score("q2", Attempt::Trial(2), true, "y2"),
            score("q3", Attempt::Trial(2), false, "z2"),
            score("q3", Attempt::Trial(3), false, "z3"),
        ];
        let summary = AttemptsSummary::of(&scores, &["q1", "q2", "q3"]);
        assert_eq!(summary.trials_n, Some(3));
        assert_eq!(
            summary.trials,
            vec![
                TrialRow {
                    trial: 1,
                    ran: 3,
                    right: 1,
                    right_so_far: 1
                },
                TrialRow {
                    trial: 2,
                    ran: 2,
                    right: 1,
                    right_so_far: 2
                },
                TrialRow {
                    trial: 3,
                    ran: 1,
                    right: 0,
                    right_so_far: 2
                },
            ]
        );
        assert!(summary.epochs.is_none());
    }

    #[test]
    fn epochs_reduce_by_hand() {
        // q1: right, right, wrong (majority right); q2: wrong, right, wrong (majority "b", wrong).
        let scores = vec![
            score("q1", Attempt::Epoch(1), true, "a"),
            score("q1", Attempt::Epoch(2), true, "A"),
            score("q1", Attempt::Epoch(3), false, "c"),
            score("q2", Attempt::Epoch(1), false, "b"),
            score("q2", Attempt::Epoch(2), true, "gold"),
            score("q2", Attempt::Epoch(3), false, "b"),
        ];
        let epochs = AttemptsSummary::of(&scores, &["q1", "q2"]).epochs.unwrap();
        assert_eq!(epochs.epochs, 3);
        assert!((epochs.mean_em - 0.5).abs() < 1e-12);
        // Question means 2/3 and 1/3: sd = √((1/6)² · 2 / 1) = 0.2357; over √2: 0.1667.
        assert!((epochs.mean_em_stderr.unwrap() - 1.0 / 6.0).abs() < 1e-12);
        assert_eq!(epochs.majority_em, 0.5);
        // pass@1 = mean(2/3, 1/3) = 0.5; pass@2: q1 1 - C(1,2)/C(3,2) = 1, q2 1 - C(2,2)/C(3,2) = 2/3.
        let pass: Vec<(u32, f64)> = epochs.pass_at.0.clone();
        assert_eq!(pass.iter().map(|(k, _)| *k).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert!((pass[0].1 - 0.5).abs() < 1e-12);
        assert!((pass[1].1 - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
        assert!((pass[2].1 - 1.0).abs() < 1e-12);
        let json = serde_json::to_value(AttemptsSummary::of(&scores, &["q1", "q2"])).unwrap();
        assert_eq!(json["pass_at"]["2"], serde_json::json!(pass[1].1));
        assert!(json.get("trials").is_none());
    }

    /// The headline's rule, the one `eval` and `score` count by: trials their final state (right
    /// in any, else the last), a single run given twice its later line, epochs every attempt
    /// padded to the most any question had, a question with no attempt wrong.
    #[test]
    fn the_headline_counts_final_states_and_pads_epochs() {
        let seen = |attempt, em| Seen {
            attempt,
            em,
            f1: 0.0,
            answer: None,
        };
        let trials = vec![
            vec![
                (seen(Attempt::Trial(1), false), "t1"),
                (seen(Attempt::Trial(2), true), "t2"),
                (seen(Attempt::Trial(3), false), "t3"),
            ],
            vec![
                (seen(Attempt::Trial(2), false), "u2"),
                (seen(Attempt::Trial(1), false), "u1"),
            ],
            Vec::new(),
        ];
        assert_eq!(
            headline(&trials, &"wrong"),
            [vec!["t2"], vec!["u2"], vec!["wrong"]]
        );
        let single = vec![vec![
            (seen(Attempt::Only, true), "first"),
            (seen(Attempt::Only, false), "later"),
        ]];
        assert_eq!(headline(&single, &"wrong"), [vec!["later"]]);
        let epochs = vec![
            vec![
                (seen(Attempt::Epoch(1), true), "a1"),
                (seen(Attempt::Epoch(2), false), "a2"),
            ],
            vec![(seen(Attempt::Epoch(1), true), "b1")],
            Vec::new(),
        ];
        assert_eq!(
            headline(&epochs, &"wrong"),
            [vec!["a1", "a2"], vec!["b1", "wrong"], vec!["wrong", "wrong"]]
        );
    }

    /// A question with no run counts as wrong under every epoch figure, as in the headline: the
    /// figures are over the same questions.
    #[test]
    fn a_question_with_no_run_counts_under_every_figure() {
        let scores = vec![
            score("q1", Attempt::Epoch(1), true, "a"),
            score("q1", Attempt::Epoch(2), true, "a"),
            score("q2", Attempt::Epoch(1), true, "b"),
            score("q2", Attempt::Epoch(2), false, "c"),
        ];
        let summary = AttemptsSummary::of(&scores, &["q1", "q2", "q3"]);
        let epochs = summary.epochs.clone().unwrap();
        assert_eq!(
            (epochs.n_questions, epochs.n_attempts, summary.no_answer),
            (3, 4, 1)
        );
        // q1 1, q2 1/2, q3 0.
        assert!((epochs.mean_em - 0.5).abs() < 1e-12);
        assert!((epochs.majority_em - 1.0 / 3.0).abs() < 1e-12);
        assert!((epochs.pass_at.0[0].1 - 0.5).abs() < 1e-12);
        // pass@2: q1 1, q2 1, q3 0.
        assert!((epochs.pass_at.0[1].1 - 2.0 / 3.0).abs() < 1e-12);
    }
}
