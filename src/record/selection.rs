//! `Selection`: which questions of a file an evaluation runs — a named subset, an ids file, a limit.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::base::task::Task;
use crate::record::questions::{Contexts, Question, QuestionFile, QuestionFileError, RecordFilter};
use crate::record::shard::{Shard, ShardPlan};

/// The ReAct notebook's 500 dev indices (`random.Random(233).shuffle`), in its order.
const PAPER500: &str = include_str!("../../data/paper500.json");
/// Reflexion's 100 HotpotQA dev questions, in its sample's order.
const REFLEXION100: &str = include_str!("../../data/reflexion100.json");

/// A named subset of a dataset split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subset {
    /// The 500 HotpotQA dev questions the ReAct paper scores, in the notebook's order.
    Paper500,
    /// The 100 HotpotQA dev questions of Reflexion's HotpotQA runs, in its sample's order.
    Reflexion100,
}

impl Subset {
    /// The dataset positions of the subset, in the order the reference runs them.
    pub fn positions(self) -> Vec<usize> {
        #[derive(serde::Deserialize)]
        struct Indices {
            idxs: Vec<usize>,
        }
        let json = match self {
            Subset::Paper500 => PAPER500,
            Subset::Reflexion100 => REFLEXION100,
        };
        // invariant: both index files are compiled in (`include_str!`), and a test reads each
        let indices: Indices = serde_json::from_str(json).expect("the bundled subset indices are valid JSON");
        indices.idxs
    }

    /// Whether the subset names questions of `task`'s dev set: the ReAct notebooks draw their 500
    /// from HotpotQA's and FEVER's alike; Reflexion ran HotpotQA only.
    pub fn is_of(self, task: Task) -> bool {
        match self {
            Subset::Paper500 => true,
            Subset::Reflexion100 => task == Task::HotpotQa,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Subset::Paper500 => "paper500",
            Subset::Reflexion100 => "reflexion100",
        }
    }
}

impl fmt::Display for Subset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Subset {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "paper500" => Ok(Subset::Paper500),
            "reflexion100" => Ok(Subset::Reflexion100),
            other => Err(format!(
                "unknown subset `{other}`, expected `paper500` or `reflexion100`"
            )),
        }
    }
}

/// Which questions to run, applied in this order: subset, ids, limit, then the shard.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub subset: Option<Subset>,
    /// A file of question ids, one a line (`#` comments and blank lines ignored).
    pub ids: Option<PathBuf>,
    /// Run at most this many (the first ones after the other filters).
    pub limit: Option<usize>,
    /// Only this shard's part of what the other filters selected (`--shard I/N`).
    pub shard: Option<Shard>,
}

#[derive(Debug, thiserror::Error)]
pub enum SelectionError {
    #[error(transparent)]
    Questions(#[from] QuestionFileError),
    #[error("cannot read ids file `{}`", path.display())]
    ReadIds {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ids file `{}` names {n_unknown} ids that are not in `{}`, e.g. {examples}", ids.display(), questions.display())]
    UnknownIds {
        ids: PathBuf,
        questions: PathBuf,
        n_unknown: usize,
        examples: String,
    },
    #[error(
        "subset `{subset}` needs {}, but `{}` lacks {n_missing} of its questions (e.g. position {example}); {}",
        complete_file(*task).0,
        questions.display(),
        complete_file(*task).1
    )]
    IncompleteSubset {
        subset: Subset,
        task: Task,
        questions: PathBuf,
        n_missing: usize,
        example: usize,
    },
    #[error(
        "subset `{subset}` is of HotpotQA's dev questions, and `{}` is a {task} question file: choose the questions with `--ids` or `--limit`",
        questions.display()
    )]
    SubsetOfOtherTask {
        subset: Subset,
        task: Task,
        questions: PathBuf,
    },
    #[error(
        "shard {shard} holds none of the {selected} selected questions of `{}`: split them into fewer shards",
        questions.display()
    )]
    EmptyShard {
        shard: Shard,
        selected: usize,
        questions: PathBuf,
    },
}

/// A selected question another shard asks: what `--fewshot-from` keeps out of its draw.
#[derive(Debug, Clone)]
pub struct OtherQuestion {
    pub id: String,
    pub position: usize,
    pub question: String,
}

impl Selection {
    /// Reads the question file once and returns it with only the selected questions, in the
    /// selection's order. Questions the selection cannot pick are dropped as they are read, so
    /// memory follows the selection, not the file.
    /// A shard's part may be empty (a few questions, many shards).
    pub fn read(&self, path: &Path, contexts: Contexts) -> Result<QuestionFile, SelectionError> {
        self.read_with_plan(path, contexts).map(|(file, _, _)| file)
    }

    /// [`Selection::read`] for an evaluation: with a shard, its plan too (where each of its
    /// questions sits in the whole selection) and the other shards' questions (which
    /// `--fewshot-from` must not draw either: every shard draws the same examples), and a shard
    /// that holds none is refused.
    pub fn read_sharded(
        &self,
        path: &Path,
        contexts: Contexts,
    ) -> Result<(QuestionFile, Option<ShardPlan>, Vec<OtherQuestion>), SelectionError> {
        let (file, plan, others) = self.read_with_plan(path, contexts)?;
        if let Some(plan) = &plan
            && plan.is_empty()
            && plan.selected > 0
        {
            return Err(SelectionError::EmptyShard {
                shard: plan.shard,
                selected: plan.selected,
                questions: file.path.clone(),
            });
        }
        Ok((file, plan, others))
    }

    /// Every selected question is read (the partition needs the whole selection's order), then
    /// only the shard's are kept.
    fn read_with_plan(
        &self,
        path: &Path,
        contexts: Contexts,
    ) -> Result<(QuestionFile, Option<ShardPlan>, Vec<OtherQuestion>), SelectionError> {
        let mut file = self.read_selection(path, contexts)?;
        let Some(shard) = self.shard else {
            return Ok((file, None, Vec::new()));
        };
        let plan = ShardPlan::new(shard, file.questions.iter().map(|question| question.id.as_str()));
        let (mine, others): (Vec<Question>, Vec<Question>) = std::mem::take(&mut file.questions)
            .into_iter()
            .partition(|question| plan.holds(&question.id));
        file.questions = mine;
        let others = others
            .into_iter()
            .map(|question| OtherQuestion {
                id: question.id,
                position: question.position,
                question: question.question,
            })
            .collect();
        Ok((file, Some(plan), others))
    }

    fn read_selection(&self, path: &Path, contexts: Contexts) -> Result<QuestionFile, SelectionError> {
        let wanted = self.wanted_ids()?;
        let positions = self.subset.map(|subset| subset.positions());
        let filter = RecordFilter {
            positions: positions
                .as_ref()
                .map(|positions| positions.iter().copied().collect()),
            // Under a subset every record of it is kept, so a missing position can be told
            // from an unwanted id; the ids then narrow the subset.
            ids: match (&positions, &wanted) {
                (None, Some(wanted)) => Some(wanted.iter().cloned().collect()),
                _ => None,
            },
            // The limit applies in the selection's order, known at read time only without a subset or ids.
            max_kept: match (&positions, &wanted) {
                (None, None) => self.limit,
                _ => None,
            },
            contexts,
        };
        let mut file = QuestionFile::read_filtered(path, &filter)?;
        let questions = std::mem::take(&mut file.questions);
        file.questions = self.pick(&file.path, file.task, questions, positions, wanted)?;
        Ok(file)
    }

    fn wanted_ids(&self) -> Result<Option<Vec<String>>, SelectionError> {
        self.ids.as_deref().map(read_ids).transpose()
    }

    /// Subset, then ids, then limit, over `questions` (all the file's, or those a filter kept).
    fn pick(
        &self,
        path: &Path,
        task: Task,
        questions: Vec<Question>,
        positions: Option<Vec<usize>>,
        wanted: Option<Vec<String>>,
    ) -> Result<Vec<Question>, SelectionError> {
        let path = path.to_owned();
        if let Some(subset) = self.subset.filter(|subset| !subset.is_of(task)) {
            return Err(SelectionError::SubsetOfOtherTask {
                subset,
                task,
                questions: path,
            });
        }
        let mut questions = match (self.subset, positions) {
            (Some(subset), Some(positions)) => {
                let mut by_position: HashMap<usize, Question> = questions
                    .into_iter()
                    .map(|question| (question.position, question))
                    .collect();
                let missing: Vec<usize> = positions
                    .iter()
                    .copied()
                    .filter(|position| !by_position.contains_key(position))
                    .collect();
                if let Some(&example) = missing.first() {
                    return Err(SelectionError::IncompleteSubset {
                        subset,
                        task,
                        questions: path,
                        n_missing: missing.len(),
                        example,
                    });
                }
                positions
                    .iter()
                    .filter_map(|position| by_position.remove(position))
                    .collect()
            }
            _ => questions,
        };
        if let (Some(ids_path), Some(wanted)) = (&self.ids, wanted) {
            let present: HashSet<&str> = questions.iter().map(|question| question.id.as_str()).collect();
            let unknown: Vec<&String> = wanted
                .iter()
                .filter(|id| !present.contains(id.as_str()))
                .collect();
            if !unknown.is_empty() {
                let examples = unknown
                    .iter()
                    .take(3)
                    .map(|id| format!("`{id}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(SelectionError::UnknownIds {
                    ids: ids_path.clone(),
                    questions: path,
                    n_unknown: unknown.len(),
                    examples,
                });
            }
            let wanted: HashSet<String> = wanted.into_iter().collect();
            questions.retain(|question| wanted.contains(&question.id));
        }
        if let Some(limit) = self.limit {
            questions.truncate(limit);
        }
        Ok(questions)
    }
}

/// What a subset's positions index, and the file that holds them all, by the file's task: the
/// ReAct notebooks shuffle the first 7,405 records of HotpotQA's dev set and of FEVER's dev claims
/// alike.
fn complete_file(task: Task) -> (&'static str, &'static str) {
    match task {
        Task::HotpotQa => (
            "the HotpotQA dev set in official order",
            "use hotpot_dev_v1_simplified.json or hotpot_dev_distractor_v1.json",
        ),
        Task::Fever => (
            "FEVER's dev claims in their published order",
            "use the whole paper_dev.jsonl (9,999 claims)",
        ),
    }
}

fn read_ids(path: &Path) -> Result<Vec<String>, SelectionError> {
    let text = std::fs::read_to_string(path).map_err(|source| SelectionError::ReadIds {
        path: path.to_owned(),
        source,
    })?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper500_is_the_notebooks_shuffle() {
        let positions = Subset::Paper500.positions();
        assert_eq!(positions.len(), 500);
        assert_eq!(positions[..5], [3687, 6238, 5388, 3522, 3824]);
        assert_eq!(positions.iter().collect::<HashSet<_>>().len(), 500);
        assert!(positions.iter().all(|&position| position < 7405));
    }

    #[test]
    fn reflexion100_is_its_samples_rows() {
        let positions = Subset::Reflexion100.positions();
        assert_eq!(positions.len(), 100);
        assert_eq!(positions[..3], [4367, 1867, 3504]);
        assert_eq!(positions.iter().collect::<HashSet<_>>().len(), 100);
        assert!(positions.iter().all(|&position| position < 7405));
        assert_eq!("reflexion100".parse(), Ok(Subset::Reflexion100));
    }

    #[test]
    fn reflexion100_of_a_fever_file_is_refused_naming_it() {
        let fever = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fever/paper_dev.jsonl");
        let selection = Selection {
            subset: Some(Subset::Reflexion100),
            ..Selection::default()
        };
        let error = selection.read(&fever, Contexts::Unused).unwrap_err();
        assert!(
            matches!(
                error,
                SelectionError::SubsetOfOtherTask {
                    task: Task::Fever,
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error.to_string().contains("fixtures/fever/paper_dev.jsonl"),
            "{error}"
        );
    }
}
