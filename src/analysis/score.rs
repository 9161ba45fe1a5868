//! `score`: the official HotpotQA answer metric of a predictions file (or of an evaluation's
//! shards, read as one) against a gold question file, as `hotpot_evaluate_v1.py` computes it —
//! every gold question counts, a missing prediction scores zero.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::analysis::attempts::{AttemptScore, AttemptsSummary, Seen, headline};
use crate::analysis::prices::PriceList;
use crate::analysis::summary::{Incomplete, Scores, Spend, Spent, mean_scores};
use crate::base::json::type_name;
use crate::base::metrics::AnswerScore;
use crate::base::task::Task;
use crate::record::evaluation::{EvaluationError, read_evaluation};
use crate::record::questions::{QuestionFile, QuestionFileError};
use crate::record::results::ResultsError;
use crate::record::run::{Attempt, Stopped, Usage};

/// The answer metric over a gold file (`--json`: `{"n", "em", "f1", "prec", "recall", "missing",
/// "errors", "incomplete", "tokens_recorded"}`, and `accuracy` for FEVER, `tokens` and `cost` for
/// `eval` results).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreReport {
    #[serde(skip)]
    pub task: Task,
    /// Means over every gold question.
    #[serde(flatten)]
    pub scores: Scores,
    /// FEVER: label accuracy (the exact match of the normalized label), as `eval` reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
    /// Gold questions without a prediction (scored zero).
    pub missing: usize,
    /// The first few of them.
    #[serde(skip)]
    pub missing_examples: Vec<String>,
    /// Predictions the headline counts whose run ended in an error (scored as their answer, none:
    /// zero); an official predictions file holds none.
    pub errors: usize,
    /// The first few of their questions.
    #[serde(skip)]
    pub error_examples: Vec<String>,
    /// The headline counts errors or missing predictions ([`Incomplete`]).
    pub incomplete: bool,
    /// Trials' rows, or epochs' reductions, when the results asked questions more than once.
    #[serde(flatten)]
    pub attempts: AttemptsSummary,
    /// Sharded predictions: the shards no file holds (left out when none is missing).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_shards: Vec<u32>,
    /// What the predictions lack or held twice, one sentence each (several files or shards).
    #[serde(skip)]
    pub gaps: Vec<String>,
    /// Whether the predictions record tokens: `eval` results do, an official predictions file
    /// (answers only) does not, and then `tokens` and `cost` are absent.
    pub tokens_recorded: bool,
    /// What every run read spent (`tokens`, and `cost` with `--prices`); `None` for an official
    /// predictions file.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub spend: Option<Spend>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error("cannot read predictions file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("predictions file `{}`: `answer.{id}` is {found}, expected a string", path.display())]
    AnswerType {
        path: PathBuf,
        id: String,
        found: &'static str,
    },
    #[error("predictions file `{}` is neither an official `{{\"answer\": {{id: text}}}}` object nor `eval` results", path.display())]
    Format {
        path: PathBuf,
        #[source]
        source: EvaluationError,
    },
    #[error(transparent)]
    Merge(#[from] EvaluationError),
    #[error(transparent)]
    Gold(#[from] QuestionFileError),
    #[error("gold file `{}`: question `{id}` has no answer to score against", path.display())]
    NoGold { path: PathBuf, id: String },
}

/// One prediction: a question's answer in one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub id: String,
    pub attempt: Attempt,
    pub answer: String,
    /// Its run ended in an error (results only: an official predictions file says nothing of it).
    pub error: bool,
    /// The model its run asked, the run's usage and of that what batches' replies spent (results
    /// only).
    pub spent: Option<(Option<String>, Usage, Usage)>,
}

/// Predictions (every attempt of a question one of its own), and what the evaluation they came
/// from lacks.
#[derive(Debug, Default)]
pub struct Predictions {
    pub predictions: Vec<Prediction>,
    pub missing_shards: Vec<u32>,
    pub gaps: Vec<String>,
}

/// Reads predictions: one official `{"answer": {id: text}, ...}` file, or `eval` results JSON
/// Lines — one file, or several (and directories) read as one evaluation.
pub fn read_predictions(paths: &[PathBuf]) -> Result<Predictions, ScoreError> {
    let results = match paths {
        [path] if !path.is_dir() && !crate::record::files::is_list(path) => match read_official(path)? {
            Some(answers) => {
                return Ok(Predictions {
                    predictions: answers
                        .into_iter()
                        .map(|(id, answer)| Prediction {
                            id,
                            attempt: Attempt::Only,
                            answer,
                            error: false,
                            spent: None,
                        })
                        .collect(),
                    ..Predictions::default()
                });
            }
            None => read_evaluation(paths).map_err(|source| match source {
                // A question file is named as one, not as predictions of another format.
                EvaluationError::Results(ResultsError::QuestionFile { .. }) => ScoreError::Merge(source),
                source => ScoreError::Format {
                    path: path.clone(),
                    source,
                },
            })?,
        },
        _ => read_evaluation(paths)?,
    };
    Ok(Predictions {
        gaps: results.gaps(),
        missing_shards: results
            .shards
            .map(|coverage| coverage.missing_shards)
            .unwrap_or_default(),
        predictions: results
            .runs
            .into_iter()
            .map(|evaluated| Prediction {
                attempt: evaluated.run.attempt(),
                id: evaluated.id().to_owned(),
                error: evaluated.run.how_stopped() == Stopped::Error,
                spent: Some((
                    evaluated.run.model.clone(),
                    evaluated.run.usage,
                    evaluated.run.batched_usage(),
                )),
                answer: evaluated.run.answer.unwrap_or_default(),
            })
            .collect(),
    })
}

/// The answers of an official predictions file; `None` when it is not one.
fn read_official(path: &Path) -> Result<Option<HashMap<String, String>>, ScoreError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScoreError::Read {
        path: path.to_owned(),
        source,
    })?;
    if let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(&text)
        && let Some(Value::Object(answers)) = object.remove("answer")
    {
        return answers
            .into_iter()
            .map(|(id, answer)| match answer {
                Value::String(answer) => Ok((id, answer)),
                other => Err(ScoreError::AnswerType {
                    path: path.to_owned(),
                    id,
                    found: type_name(&other),
                }),
            })
            .collect::<Result<_, _>>()
            .map(Some);
    }
    Ok(None)
}

/// Scores `predictions` against every question of `gold`. A question asked more than once counts
/// once in the headline: trials by their final state (right in any trial, else the last), epochs
/// by the mean over epochs; the attempts' own figures come beside it.
pub fn score(predictions: &Path, gold: &Path) -> Result<ScoreReport, ScoreError> {
    score_evaluation(&[predictions.to_owned()], gold)
}

/// Scores predictions read from several files (an evaluation's shards, or directories of them)
/// against every question of `gold`.
pub fn score_evaluation(predictions: &[PathBuf], gold: &Path) -> Result<ScoreReport, ScoreError> {
    let Predictions {
        predictions,
        missing_shards,
        gaps,
    } = read_predictions(predictions)?;
    let gold_file = QuestionFile::read(gold)?;
    // What every run read spent, whatever question it answered: an official file records nothing.
    let spend = predictions
        .iter()
        .map(|prediction| {
            prediction.spent.as_ref().map(|(model, usage, batched)| Spent {
                model: model.as_deref(),
                usage,
                batched: *batched,
            })
        })
        .collect::<Option<Vec<_>>>()
        .filter(|spent| !spent.is_empty())
        .map(Spend::of);
    let by_id =
        crate::analysis::attempts::ByQuestion::of(&predictions, |prediction| prediction.id.as_str()).groups;
    // Each attempt's score, and whether its run ended in an error.
    let mut per_question: Vec<Vec<(Seen<'_>, (AnswerScore, bool))>> =
        Vec::with_capacity(gold_file.questions.len());
    let mut attempt_scores = Vec::new();
    let mut missing_examples = Vec::new();
    let mut missing = 0;
    for question in &gold_file.questions {
        let Some(gold_answer) = question.gold() else {
            return Err(ScoreError::NoGold {
                path: gold.to_owned(),
                id: question.id.clone(),
            });
        };
        let Some(attempts) = by_id.get(question.id.as_str()) else {
            missing += 1;
            if missing_examples.len() < 5 {
                missing_examples.push(question.id.clone());
            }
            per_question.push(Vec::new());
            continue;
        };
        let scored: Vec<(Seen<'_>, (AnswerScore, bool))> = attempts
            .iter()
            .map(|prediction| {
                let score = AnswerScore::new(&prediction.answer, gold_answer);
                let seen = Seen {
                    attempt: prediction.attempt,
                    em: score.em,
                    f1: score.f1,
                    answer: Some(prediction.answer.as_str()),
                };
                (seen, (score, prediction.error))
            })
            .collect();
        for ((seen, _), prediction) in scored.iter().zip(attempts) {
            attempt_scores.push(AttemptScore {
                id: prediction.id.clone(),
                attempt: seen.attempt,
                em: seen.em,
                f1: seen.f1,
                answer: Some(prediction.answer.clone()),
            });
        }
        per_question.push(scored);
    }
    // What each question counts for, a missing one wrong (epochs: every attempt not made), and
    // the errors among what it counts.
    let counted = headline(&per_question, &(AnswerScore::WRONG, false));
    let mut error_examples = Vec::new();
    let mut errors = 0;
    for (question, attempts) in gold_file.questions.iter().zip(&counted) {
        let n_errors = attempts.iter().filter(|(_, error)| *error).count();
        if n_errors > 0 && error_examples.len() < 5 {
            error_examples.push(question.id.clone());
        }
        errors += n_errors;
    }
    let per_question: Vec<Vec<AnswerScore>> = counted
        .into_iter()
        .map(|attempts| attempts.into_iter().map(|(score, _)| score).collect())
        .collect();
    let mean = mean_scores(&per_question);
    let ids: Vec<&str> = gold_file
        .questions
        .iter()
        .map(|question| question.id.as_str())
        .collect();
    Ok(ScoreReport {
        task: gold_file.task,
        scores: mean,
        accuracy: (gold_file.task == Task::Fever).then_some(mean.em),
        missing,
        missing_examples,
        errors,
        error_examples,
        incomplete: errors > 0 || missing > 0,
        attempts: AttemptsSummary::of(&attempt_scores, &ids),
        missing_shards,
        gaps,
        tokens_recorded: spend.is_some(),
        spend,
    })
}

impl ScoreReport {
    /// Prices the runs' tokens at `prices` (`--prices`); an official predictions file has none.
    pub fn price(&mut self, prices: &PriceList) {
        if let Some(spend) = &mut self.spend {
            spend.price(prices);
        }
    }

    /// What the headline lacks: the errors and the missing predictions it counts.
    pub fn incompleteness(&self) -> Incomplete {
        Incomplete {
            errors: self.errors,
            missing: self.missing,
            interrupted: false,
        }
    }

    /// The exit status: 1 when no gold question has a prediction (the predictions are of other
    /// questions), else as [`Incomplete::exit_code`] says: 2 when the headline counts an error or
    /// a missing prediction, 0 when every gold question has a finished run.
    pub fn exit_code(&self) -> u8 {
        if self.missing == self.scores.n {
            return 1;
        }
        self.incompleteness().exit_code(self.scores.n - self.missing)
    }

    pub fn write_text(&self, out: &mut dyn Write) -> io::Result<()> {
        self.scores
            .write_headline(self.task, self.incompleteness(), out)?;
        let examples = |ids: &[String]| {
            ids.iter()
                .map(|id| format!("`{id}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.errors > 0 {
            writeln!(
                out,
                "errors         {} ended in an error, scored zero (e.g. {}); `eval` asks again the ones that may fix themselves, `--retry-errors` the rest",
                crate::base::output::counted(self.errors, "run", "runs"),
                examples(&self.error_examples)
            )?;
        }
        if self.missing > 0 {
            writeln!(
                out,
                "missing        {}, scored zero (e.g. {})",
                crate::base::output::counted(self.missing, "prediction", "predictions"),
                examples(&self.missing_examples)
            )?;
        }
        self.attempts.write_text(out)?;
        match &self.spend {
            Some(spend) => spend.write_text(out),
            None => writeln!(
                out,
                "tokens         not recorded: official predictions hold answers only (score `eval` results for tokens and cost)"
            ),
        }
    }
}
