//! One evaluation, read: [`read_evaluation`] reads several results files (or directories of them)
//! as one evaluation — the shards of `eval --shard` joined by question id and attempt, checked to
//! belong together, with what is missing ([`Evaluation::gaps`]). `score`, `compare`, `report`,
//! `merge` and the Python module's `read_results` read through it; [`read_all_runs`] is
//! `export`'s and `--fewshot-from`'s reading: an evaluation's runs, then single run files.
//!
//! Runs are keyed by (question id, [`Attempt`]): a question may hold one line per trial or epoch.
//! The same key in two files is one run read twice when both ask the same question and give the
//! same answer (kept once, counted as a duplicate); otherwise the files disagree and are refused,
//! both named. Within one file nothing is merged: a file is read as `eval` wrote it. Files made
//! with other settings (model, method, profile, docstore and its snapshot, few-shot examples), or
//! shards of other splits, are refused naming both. Shard records say which shards and which
//! questions of the selection no file holds.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;

use crate::base::task::Task;
use crate::record::files::{FilesError, RunsError, Wanted, read_runs, recorded_paths};
use crate::record::recorded::RecordedRun;
use crate::record::results::{ResultsError, parse_run_lines};
use crate::record::run::settings::{
    LineContradiction, NotOneEvaluation, SettingRows, SettingsSource, check_same, in_field_order,
};
use crate::record::run::{Attempt, ShardRecord};
use crate::record::shard::{Shard, shard_of};

/// How many missing shards or question positions a message lists before `…`.
const LISTED: usize = 8;

/// Several results files read as one evaluation.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The files read, in the order read (a directory's `.jsonl` files in name order).
    pub files: Vec<PathBuf>,
    /// The runs, each (id, attempt) once: a sharded evaluation in its selection's order (attempt,
    /// then the question's position), else in the order the files and their lines were read.
    pub runs: Vec<RecordedRun>,
    /// Runs read twice (the same question and attempt, the same answer, in two files): kept once.
    pub duplicates: usize,
    /// What the shard records say is there and missing (a sharded evaluation).
    pub shards: Option<ShardCoverage>,
    /// Settings that lines written by earlier versions do not record, so were not compared.
    pub unknown_settings: Vec<&'static str>,
    /// Files whose last line is cut short (a write in progress, or interrupted), with that line's
    /// number: the line is left out, and said so.
    pub torn_lines: Vec<(PathBuf, usize)>,
}

/// A sharded evaluation's coverage: the split, and what no file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardCoverage {
    /// How many shards the selection was split into.
    pub count: u32,
    /// How many questions the selection held.
    pub selected: usize,
    /// Shards no file holds a run of.
    pub missing_shards: Vec<u32>,
    /// How many positions of the selection no run answers: questions not run (yet).
    pub n_missing_positions: usize,
    /// The first of those positions (from 0), [`LISTED`] at most.
    pub first_missing_positions: Vec<usize>,
}

/// The most shards a record may name: more than any job array runs (Slurm's largest is 4M
/// tasks only in theory; Kubernetes' Indexed Jobs stop at 100,000).
pub const MAX_SHARDS: u32 = 1 << 20;
/// The most questions a shard record may say the selection held (the largest question sets
/// hold a few million).
pub const MAX_SELECTED: usize = 1 << 26;

#[derive(Debug, thiserror::Error)]
pub enum EvaluationError {
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error(transparent)]
    Files(#[from] FilesError),
    #[error(transparent)]
    Runs(#[from] RunsError),
    #[error(
        "question `{}` ({}) is in two files that disagree on its {}: {}",
        .0.id,
        .0.attempt,
        .0.field,
        .0
    )]
    Conflict(Box<Disagreement>),
    #[error(
        "the files are not one evaluation: their runs differ in {}: {}; merge only the shards of one evaluation",
        .0.field,
        .0
    )]
    MixedSettings(Box<Disagreement>),
    #[error(transparent)]
    NotOneEvaluation(Box<NotOneEvaluation>),
    #[error(transparent)]
    LineContradiction(#[from] Box<LineContradiction>),
    #[error(
        "results file `{}`, line {line}: shard record {record} is impossible (index ≥ count, position ≥ selected, more than 1,048,576 shards or more than 67,108,864 questions)",
        path.display()
    )]
    BadShard {
        path: PathBuf,
        line: usize,
        record: String,
    },
    #[error(
        "results file `{}`, line {line}: question `{id}` says shard {recorded}, but its id belongs to shard {belongs}/{count}: the line was not written by that shard",
        path.display(),
        count = recorded.count
    )]
    WrongShard {
        path: PathBuf,
        line: usize,
        id: String,
        recorded: Shard,
        belongs: u32,
    },
}

/// Two lines that should agree and do not.
#[derive(Debug)]
pub struct Disagreement {
    /// The question (a conflict; empty for mixed settings).
    pub id: String,
    /// The attempt (a conflict).
    pub attempt: AttemptName,
    /// What differs: `answer`, `model`, `shards`, ...
    pub field: &'static str,
    pub first: PathBuf,
    pub first_line: usize,
    /// As messages show it (quoted where it is text).
    pub first_value: String,
    pub second: PathBuf,
    pub second_line: usize,
    pub second_value: String,
}

/// `` `first` line 3 has X, `second` line 9 has Y ``.
impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` line {} has {}, `{}` line {} has {}",
            self.first.display(),
            self.first_line,
            self.first_value,
            self.second.display(),
            self.second_line,
            self.second_value
        )
    }
}

/// An attempt as messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptName(pub Attempt);

impl fmt::Display for AttemptName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Attempt::Only => f.write_str("its only attempt"),
            attempt => attempt.fmt(f),
        }
    }
}

/// Reads `paths` (results files, directories of them at any depth, comma lists: [`crate::record::files::recorded_files`])
/// as one evaluation: runs merged by (question id, attempt), duplicates kept once, disagreements,
/// mixed settings and misplaced shard lines refused naming the files, missing shards and
/// questions counted.
pub fn read_evaluation(paths: &[PathBuf]) -> Result<Evaluation, EvaluationError> {
    let files = recorded_paths(paths, Wanted::Results)?;
    let mut runs: Vec<RecordedRun> = Vec::new();
    // Where each (id, attempt) was first read: its index in `runs`, and its file's index.
    let mut first_read: HashMap<(String, Attempt), (usize, usize)> = HashMap::new();
    let mut duplicates = 0;
    let mut settings = SameSettings::default();
    let mut torn_lines = Vec::new();
    for (file_idx, path) in files.iter().enumerate() {
        let bytes = std::fs::read(path).map_err(|source| ResultsError::Read {
            path: path.clone(),
            source,
        })?;
        let lines = parse_run_lines(&bytes, path)?;
        if lines.torn_bytes > 0 {
            let line = memchr::memchr_iter(b'\n', &bytes[..lines.valid_len]).count() + 1;
            torn_lines.push((path.clone(), line));
        }
        for evaluated in lines.runs {
            let Some(id) = evaluated.run.id.clone() else {
                return Err(ResultsError::MissingId {
                    path: path.clone(),
                    line: evaluated.line(),
                }
                .into());
            };
            let key = (id, evaluated.run.attempt());
            // Every line read, a duplicate too, is of the first line's evaluation.
            settings.check(&evaluated)?;
            match first_read.get(&key) {
                // Within one file, the file is as `eval` wrote it: its readers judge it.
                Some(&(_, first_file)) if first_file == file_idx => runs.push(evaluated),
                Some(&(first_idx, _)) => {
                    same_run(&runs[first_idx], &evaluated)?;
                    duplicates += 1;
                }
                None => {
                    first_read.insert(key, (runs.len(), file_idx));
                    runs.push(evaluated);
                }
            }
        }
    }
    let unknown_settings = in_field_order(&settings.unknown);
    let shards = shard_coverage(&runs)?;
    if shards.is_some() {
        // The selection's order, whichever order the shards were read in.
        runs.sort_by_key(|evaluated| {
            (
                evaluated.run.attempt(),
                evaluated.run.shard.map_or(0, |record| record.position),
            )
        });
    }
    Ok(Evaluation {
        files,
        runs,
        duplicates,
        shards,
        unknown_settings,
        torn_lines,
    })
}

/// Runs read for `export` and `--fewshot-from`: one evaluation's, then single run files'.
#[derive(Debug, Clone)]
pub struct RunsRead {
    /// The evaluation's runs (its order), then the other files' runs (theirs).
    pub runs: Vec<RecordedRun>,
    /// What the evaluation lacks or held twice ([`Evaluation::gaps`]): the caller says so.
    pub gaps: Vec<String>,
}

/// The runs of `paths` (files, directories, comma lists), each with where it was read: results
/// files (`*.jsonl`) are one evaluation, read as [`read_evaluation`] reads them (shards merged, a
/// question answered two ways or files of other settings refused); other run files (`ask
/// --record`'s `*.json`) are read one by one, after the evaluation's runs.
pub fn read_all_runs(paths: &[PathBuf]) -> Result<RunsRead, EvaluationError> {
    let (results, others): (Vec<PathBuf>, Vec<PathBuf>) = recorded_paths(paths, Wanted::Runs)?
        .into_iter()
        .partition(|file| file.extension().is_some_and(|ext| ext == "jsonl"));
    let mut read = RunsRead {
        runs: Vec::new(),
        gaps: Vec::new(),
    };
    if !results.is_empty() {
        let evaluation = read_evaluation(&results)?;
        read.gaps = evaluation.gaps();
        read.runs = evaluation.runs;
    }
    for file in others {
        read.runs.extend(read_runs(&file)?);
    }
    Ok(read)
}

/// Refuses two reads of one (id, attempt) that ask or answer differently.
fn same_run(first: &RecordedRun, second: &RecordedRun) -> Result<(), EvaluationError> {
    let answer = |evaluated: &RecordedRun| match &evaluated.run.answer {
        Some(answer) => format!("{answer:?}"),
        None => "no answer".to_owned(),
    };
    let differs = if first.run.question != second.run.question {
        Some((
            "question",
            format!("{:?}", first.run.question),
            format!("{:?}", second.run.question),
        ))
    } else if first.run.answer != second.run.answer {
        Some(("answer", answer(first), answer(second)))
    } else {
        None
    };
    match differs {
        Some((field, first_value, second_value)) => Err(EvaluationError::Conflict(Box::new(Disagreement {
            id: first.id().to_owned(),
            attempt: AttemptName(first.run.attempt()),
            field,
            first: first.place.file.to_path_buf(),
            first_line: first.line(),
            first_value,
            second: second.place.file.to_path_buf(),
            second_line: second.line(),
            second_value,
        }))),
        None => Ok(()),
    }
}

/// The first line's settings, which every other line read must share ([`SettingRows`]), and the
/// settings some line does not record (older lines).
#[derive(Default)]
struct SameSettings {
    first: Option<(SettingRows, SettingsSource)>,
    unknown: BTreeSet<&'static str>,
}

impl SameSettings {
    fn check(&mut self, evaluated: &RecordedRun) -> Result<(), EvaluationError> {
        let comparable = SettingRows::of_run(&evaluated.run, evaluated.source())?;
        let Some((first, source)) = &self.first else {
            self.first = Some((comparable, evaluated.source()));
            return Ok(());
        };
        let found = check_same((first, source.clone()), (&comparable, evaluated.source()))
            .map_err(EvaluationError::NotOneEvaluation)?;
        self.unknown.extend(found);
        Ok(())
    }
}

impl RecordedRun {
    /// Its file and line, as a settings difference names them.
    fn source(&self) -> SettingsSource {
        SettingsSource::Line {
            file: self.place.file.to_path_buf(),
            line: self.line(),
        }
    }
}

/// The split as messages show it: `shard 1/4 of 100 selected questions`, or unsharded.
fn split_name(record: Option<ShardRecord>) -> String {
    match record {
        Some(record) => format!(
            "shard {}/{} of {} selected questions",
            record.index, record.count, record.selected
        ),
        None => "no shard".to_owned(),
    }
}

/// What the shard records hold and miss; refuses runs of two splits (another count, another
/// selection, sharded beside unsharded), impossible records, a run in a shard its id does not
/// belong to, and two questions at one position.
fn shard_coverage(runs: &[RecordedRun]) -> Result<Option<ShardCoverage>, EvaluationError> {
    let Some(first) = runs.iter().find(|evaluated| evaluated.run.shard.is_some()) else {
        return Ok(None);
    };
    // invariant: `first` was found for having a shard record
    let split = first.run.shard.expect("the first sharded run has a shard");
    let mixed = |evaluated: &RecordedRun, field, second_value| {
        EvaluationError::MixedSettings(Box::new(Disagreement {
            id: String::new(),
            attempt: AttemptName(Attempt::Only),
            field,
            first: first.place.file.to_path_buf(),
            first_line: first.line(),
            first_value: split_name(Some(split)),
            second: evaluated.place.file.to_path_buf(),
            second_line: evaluated.line(),
            second_value,
        }))
    };
    let mut present = HashSet::new();
    let mut at_position: HashMap<usize, &RecordedRun> = HashMap::new();
    for evaluated in runs {
        let Some(record) = evaluated.run.shard else {
            return Err(mixed(evaluated, "shards", split_name(None)));
        };
        if record.index >= record.count
            || record.position >= record.selected
            || record.count > MAX_SHARDS
            || record.selected > MAX_SELECTED
        {
            return Err(EvaluationError::BadShard {
                path: evaluated.place.file.to_path_buf(),
                line: evaluated.line(),
                record: format!(
                    "{{index {}, count {}, position {}, selected {}}}",
                    record.index, record.count, record.position, record.selected
                ),
            });
        }
        if (record.count, record.selected) != (split.count, split.selected) {
            return Err(mixed(evaluated, "shards", split_name(Some(record))));
        }
        let belongs = shard_of(evaluated.id(), record.count);
        if belongs != record.index {
            return Err(EvaluationError::WrongShard {
                path: evaluated.place.file.to_path_buf(),
                line: evaluated.line(),
                id: evaluated.id().to_owned(),
                recorded: Shard {
                    index: record.index,
                    count: record.count,
                },
                belongs,
            });
        }
        match at_position.get(&record.position) {
            Some(other) if other.id() != evaluated.id() => {
                return Err(mixed(
                    evaluated,
                    "selections",
                    format!(
                        "question `{}` at position {} where `{}` line {} has `{}`",
                        evaluated.id(),
                        record.position,
                        other.place.file.display(),
                        other.line(),
                        other.id()
                    ),
                ));
            }
            Some(_) => {}
            None => {
                at_position.insert(record.position, evaluated);
            }
        }
        present.insert(record.index);
    }
    Ok(Some(ShardCoverage {
        count: split.count,
        selected: split.selected,
        missing_shards: (0..split.count)
            .filter(|index| !present.contains(index))
            .collect(),
        n_missing_positions: split.selected - at_position.len(),
        first_missing_positions: (0..split.selected)
            .filter(|position| !at_position.contains_key(position))
            .take(LISTED + 1)
            .collect(),
    }))
}

impl Evaluation {
    /// The evaluation's task, as its runs record it (the question file's, since `eval` takes it
    /// from there; older runs': [`crate::record::run::Run::task`]): the one reading of it.
    pub fn task(&self) -> Task {
        task_of(self.runs.iter().map(|evaluated| evaluated.run.task()))
    }

    /// What the evaluation lacks or held twice, one sentence each: missing shards, questions of
    /// the selection no run answers, duplicates dropped. Empty when whole.
    pub fn gaps(&self) -> Vec<String> {
        let mut gaps: Vec<String> = self
            .torn_lines
            .iter()
            .map(|(path, line)| {
                format!(
                    "`{}`, line {line}: the last line is cut short (a write still in progress, or interrupted): left out",
                    path.display()
                )
            })
            .collect();
        if let Some(coverage) = &self.shards {
            if !coverage.missing_shards.is_empty() {
                gaps.push(format!(
                    "{} of {} shards missing: {} (no file holds a run of them)",
                    coverage.missing_shards.len(),
                    coverage.count,
                    listed(&coverage.missing_shards)
                ));
            }
            if coverage.n_missing_positions > 0 {
                gaps.push(format!(
                    "{} of {} selected questions missing (positions in the selection from 0: {}): not run, or not yet",
                    coverage.n_missing_positions,
                    coverage.selected,
                    listed(&coverage.first_missing_positions)
                ));
            }
        }
        if !self.unknown_settings.is_empty() {
            gaps.push(format!(
                "older lines, settings not compared: {}",
                self.unknown_settings.join(", ")
            ));
        }
        if self.duplicates > 0 {
            gaps.push(format!(
                "{} in two files with the same answer: each is kept once",
                crate::base::output::counted(self.duplicates, "run was", "runs were")
            ));
        }
        gaps
    }
}

/// The task of runs (or evaluations) read together: FEVER when every one is FEVER's (scored by
/// label accuracy), else HotpotQA.
pub fn task_of(tasks: impl IntoIterator<Item = Task>) -> Task {
    let mut tasks = tasks.into_iter();
    if tasks.all(|task| task == Task::Fever) {
        Task::Fever
    } else {
        Task::HotpotQa
    }
}

/// The first few numbers, comma-joined, `…` when there are more.
fn listed<T: fmt::Display>(numbers: &[T]) -> String {
    let mut text = numbers
        .iter()
        .take(LISTED)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if numbers.len() > LISTED {
        text.push_str(", …");
    }
    text
}
