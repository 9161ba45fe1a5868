//! `resume`: what an evaluation keeps of the results file it appends to. Every stored run must
//! be of this evaluation ([`SettingRows`]: the same settings, the same shard, the same questions
//! under its ids), else the command is refused before any model call and the file is left as it
//! was; a file that holds no finished run pins nothing: its error runs are set aside beside it and
//! the evaluation starts afresh. Errors are not results: a run whose failure may fix itself is
//! asked again, one that will not is kept until `--retry-errors`; a trial asked again takes every
//! later trial of its question with it, so those are asked again in order.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::{EvalConfig, EvalError, Resume, abbreviated};
use crate::record::questions::Question;
use crate::record::recorded::RecordedRun;
use crate::record::results::{ResultsFile, StoredRuns};
use crate::record::run::settings::{EvalSettings, SettingRows, SettingsSource, check_same, in_field_order};
use crate::record::run::{Attempt, Run, RunErrorKind, Stopped};
use crate::record::shard::{self, ShardPlan};

/// What the results file holds for this evaluation once it is ready to take more runs.
#[derive(Debug, Default)]
pub struct Resumed {
    /// The runs kept: finished ones, and errors that are not asked again.
    pub runs: Vec<Run>,
    /// Runs dropped from the file so that their attempts are asked again.
    pub n_asked_again: usize,
    /// Where runs of another evaluation that finished nothing were moved.
    pub set_aside: Option<PathBuf>,
    /// Settings older lines do not record, so were not compared.
    pub unknown: Vec<&'static str>,
    /// The selection the file's runs were made for, when this evaluation widens it.
    pub widened_from: Option<String>,
}

/// Checks the stored runs against this evaluation and drops those to ask again.
pub(super) fn resume(
    results: &mut ResultsFile,
    mut stored: StoredRuns,
    settings: &EvalSettings,
    plan: Option<&ShardPlan>,
    questions: &[Question],
    config: &EvalConfig,
) -> Result<Resumed, EvalError> {
    let mut resumed = Resumed::default();
    let current = SettingRows::of_settings(settings, plan.is_some());
    let finished_any = stored.runs.iter().any(|line| !is_error(&line.run));
    let asked: HashMap<&str, &str> = questions
        .iter()
        .map(|question| (question.id.as_str(), question.question.as_str()))
        .collect();
    let mut unknown = BTreeSet::new();
    for line in &stored.runs {
        let checked = check_line(line, &current, plan, &asked, config);
        match checked {
            Ok(fields) => unknown.extend(fields),
            Err(_) if !finished_any => {
                // Nothing finished: the right command goes on, and the errors are kept aside.
                let aside = aside_path(&config.results);
                results.set_aside(&mut stored, &aside)?;
                resumed.set_aside = Some(aside);
                return Ok(resumed);
            }
            Err(error) => return Err(error),
        }
    }
    resumed.unknown = in_field_order(&unknown);
    if plan.is_none() {
        resumed.widened_from = stored
            .runs
            .iter()
            .filter_map(|line| line.run.evaluation.as_ref())
            .map(|recorded| recorded.selection.to_string())
            .find(|selection| *selection != settings.selection.to_string());
    }
    let again = asked_again(&stored.runs, config.resume);
    resumed.n_asked_again = results.drop_runs(&mut stored, |line| again.contains(&line.run))?;
    resumed.runs = stored.runs.into_iter().map(|line| line.run).collect();
    Ok(resumed)
}

fn is_error(run: &Run) -> bool {
    run.how_stopped() == Stopped::Error
}

/// One stored line against this evaluation: its settings, its shard, its question.
fn check_line(
    line: &RecordedRun,
    current: &SettingRows,
    plan: Option<&ShardPlan>,
    asked: &HashMap<&str, &str>,
    config: &EvalConfig,
) -> Result<Vec<&'static str>, EvalError> {
    // The questions first: another question file under the same ids is named by its question.
    if let Some(id) = line.run.id.as_deref()
        && let Some(&question) = asked.get(id)
        && question != line.run.question
    {
        return Err(EvalError::OtherQuestions {
            results: config.results.clone(),
            questions: config.questions.clone(),
            id: id.to_owned(),
            stored: abbreviated(&line.run.question),
            asked: abbreviated(question),
        });
    }
    shard::check_resume(std::slice::from_ref(&line.run), plan, &config.results)?;
    let source = SettingsSource::Line {
        file: config.results.clone(),
        line: line.line(),
    };
    let unknown = check_same(
        (&SettingRows::of_run(&line.run, source.clone())?, source),
        (current, SettingsSource::ThisCommand),
    )
    .map_err(|difference| EvalError::OtherEvaluation {
        results: config.results.clone(),
        difference,
    })?;
    Ok(unknown)
}

/// The stored runs to ask again: errors that may fix themselves (all errors with
/// `--retry-errors`), and every trial of a question after a trial asked again.
fn asked_again(runs: &[RecordedRun], resume: Resume) -> AskedAgain {
    let mut first_trial: HashMap<String, u32> = HashMap::new();
    let mut attempts = BTreeSet::new();
    for line in runs {
        let run = &line.run;
        let again = is_error(run)
            && (resume == Resume::RetryErrors || run.error_kind == Some(RunErrorKind::Transient));
        let Some(id) = run.id.clone().filter(|_| again) else {
            continue;
        };
        if let Attempt::Trial(trial) = run.attempt() {
            let first = first_trial.entry(id.clone()).or_insert(trial);
            *first = (*first).min(trial);
        }
        attempts.insert((id, run.attempt()));
    }
    AskedAgain {
        attempts,
        first_trial,
    }
}

/// Which stored runs are asked again.
struct AskedAgain {
    attempts: BTreeSet<(String, Attempt)>,
    /// Each question's earliest trial asked again: it and every later trial go.
    first_trial: HashMap<String, u32>,
}

impl AskedAgain {
    fn contains(&self, run: &Run) -> bool {
        let Some(id) = &run.id else { return false };
        if let Attempt::Trial(trial) = run.attempt()
            && self.first_trial.get(id).is_some_and(|first| trial >= *first)
        {
            return true;
        }
        self.attempts.contains(&(id.clone(), run.attempt()))
    }
}

/// Where the runs of a file set aside go: beside it, named so that no reader of results files
/// (`*.jsonl`) takes them for a shard: `X.jsonl.set-aside`, then `.set-aside-2`, ….
fn aside_path(results: &Path) -> PathBuf {
    let mut name = results.as_os_str().to_owned();
    name.push(".set-aside");
    let first = PathBuf::from(&name);
    if !first.exists() {
        return first;
    }
    (2..)
        .map(|n| {
            let mut numbered = name.clone();
            numbered.push(format!("-{n}"));
            PathBuf::from(numbered)
        })
        .find(|path| !path.exists())
        // invariant: the range is unbounded, and finitely many files exist
        .expect("some numbered name is free")
}
