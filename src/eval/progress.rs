//! `Progress`: how an evaluation shows its progress — events to a view the caller draws (the
//! binary's bar), plain progress lines for batch logs, or nothing — and the notes it writes.

use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agent::trace::LogOutput;
use crate::analysis::summary::Outcome;
use crate::base::metrics::AnswerScore;
use crate::record::run::Stopped;

use super::EvalConfig;

/// What an evaluation tells a view of its progress, round by round (a round: the questions of
/// one attempt, or of one trial). The binary draws it as a bar on a terminal.
pub trait ProgressView: Send + Sync {
    /// A round of `n_questions` starts.
    fn started(&self, n_questions: usize);
    /// `done` of the round's questions are finished; `scores`: their running mean EM and F1, when
    /// some have a gold answer. The first call after [`ProgressView::started`] counts at once the
    /// runs resumed from the results file: a rate or an ETA counts only the calls after it.
    fn advanced(&self, done: usize, scores: Option<(f64, f64)>);
    /// A note for the user (a question's error, what resuming did), a line of its own.
    fn note(&self, message: &str);
    /// The round is over (done, stopped or interrupted).
    fn finished(&self);
}

/// How progress is shown.
#[derive(Clone)]
pub enum Progress {
    /// Events to the caller's view (a bar, on a terminal); notes go to it too.
    View(Arc<dyn ProgressView>),
    /// A plain line this often (batch logs): done/total, EM/F1 so far, questions/minute, ETA.
    Lines {
        every: Duration,
    },
    Hidden,
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Progress::View(_) => f.write_str("View"),
            Progress::Lines { every } => f.debug_struct("Lines").field("every", every).finish(),
            Progress::Hidden => f.write_str("Hidden"),
        }
    }
}

/// How often a batch log gets a progress line.
pub const PROGRESS_LINE_EVERY: Duration = Duration::from_secs(10);

/// A round's progress as the configuration asks it shown, and notes.
pub(super) struct ProgressReporter {
    view: Option<Arc<dyn ProgressView>>,
    /// Whether the view was told a round started and not yet that it finished.
    in_round: Cell<bool>,
    /// How often [`ProgressReporter::line`] is due (`Progress::Lines`).
    line_every: Option<Duration>,
    log: LogOutput,
    n_questions: usize,
    /// When the questions to run started: the rate and ETA count only them.
    run_started: Cell<Instant>,
}

impl ProgressReporter {
    /// A round of `n_questions`.
    pub(super) fn new(config: &EvalConfig, n_questions: usize) -> ProgressReporter {
        let mut reporter = ProgressReporter::notes(config);
        reporter.n_questions = n_questions;
        reporter.line_every = match config.progress {
            Progress::Lines { every } => Some(every.max(Duration::from_millis(1))),
            Progress::View(_) | Progress::Hidden => None,
        };
        if let Some(view) = &reporter.view {
            view.started(n_questions);
            reporter.in_round.set(true);
        }
        reporter
    }

    /// A reporter of notes only, outside a round.
    pub(super) fn notes(config: &EvalConfig) -> ProgressReporter {
        ProgressReporter {
            view: match &config.progress {
                Progress::View(view) => Some(view.clone()),
                Progress::Lines { .. } | Progress::Hidden => None,
            },
            in_round: Cell::new(false),
            line_every: None,
            log: config.log.clone(),
            n_questions: 0,
            run_started: Cell::new(Instant::now()),
        }
    }

    pub(super) fn advance(&self, outcomes: &[Outcome]) {
        if let Some(view) = &self.view {
            view.advanced(outcomes.len(), running_scores(outcomes));
        }
    }

    /// The rate and ETA of progress lines count only questions run from now, not the resumed ones.
    pub(super) fn restart_eta(&self) {
        self.run_started.set(Instant::now());
    }

    /// Ticks when a progress line is due; never without `Progress::Lines`.
    pub(super) fn ticks(&self) -> ProgressTicks {
        ProgressTicks(self.line_every.map(|every| {
            let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval
        }))
    }

    /// A plain progress line: done/total, EM/F1 so far and the errors they count, questions per
    /// minute, ETA.
    pub(super) fn line(&self, outcomes: &[Outcome], resumed: usize) {
        let mut line = format!("progress {}/{}", outcomes.len(), self.n_questions);
        if let Some((em, f1)) = running_scores(outcomes) {
            line.push_str(&format!(", EM {em:.3} F1 {f1:.3}"));
        }
        // The errors the running figures count as wrong, so they are never read without them.
        let n_errors = outcomes
            .iter()
            .filter(|outcome| outcome.stopped == Stopped::Error)
            .count();
        if n_errors > 0 {
            line.push_str(&format!(
                " ({} scored zero)",
                crate::base::output::counted(n_errors, "error", "errors")
            ));
        }
        let n_run_now = outcomes.len().saturating_sub(resumed);
        let minutes = self.run_started.get().elapsed().as_secs_f64() / 60.0;
        if n_run_now > 0 && minutes > 0.0 {
            let per_minute = n_run_now as f64 / minutes;
            let left = self.n_questions.saturating_sub(outcomes.len()) as f64;
            line.push_str(&format!(
                ", {per_minute:.1} questions/min, ETA {}",
                format_eta(Duration::from_secs_f64((left / per_minute * 60.0).min(1e9)))
            ));
        }
        self.log.line(&line);
    }

    pub(super) fn note(&self, message: &str) {
        match &self.view {
            Some(view) => view.note(message),
            None => self.log.line(message),
        }
    }

    pub(super) fn finish(&self) {
        if let Some(view) = &self.view
            && self.in_round.replace(false)
        {
            view.finished();
        }
    }
}

/// An evaluation that ends early (an error) ends its round too.
impl Drop for ProgressReporter {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Mean EM and F1 of the outcomes that have a gold answer, if any has.
fn running_scores(outcomes: &[Outcome]) -> Option<(f64, f64)> {
    let scores: Vec<&AnswerScore> = outcomes
        .iter()
        .filter_map(|outcome| outcome.score.as_ref())
        .collect();
    if scores.is_empty() {
        return None;
    }
    let n = scores.len() as f64;
    let em = scores.iter().filter(|score| score.em).count() as f64 / n;
    let f1 = scores.iter().map(|score| score.f1).sum::<f64>() / n;
    Some((em, f1))
}

/// `1h02m`, `4m05s`, `12s`.
fn format_eta(eta: Duration) -> String {
    let secs = eta.as_secs();
    match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

/// The progress-line clock: an interval, or a tick that never comes.
pub(super) struct ProgressTicks(Option<tokio::time::Interval>);

impl ProgressTicks {
    pub(super) async fn tick(&mut self) {
        match &mut self.0 {
            Some(interval) => {
                interval.tick().await;
            }
            None => std::future::pending().await,
        }
    }
}
