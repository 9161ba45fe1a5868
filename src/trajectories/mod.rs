//! Trajectories: recorded runs rebuilt as their model saw them ([`rebuild`], also how `replay`
//! sets a run's method up again), written out as fine-tuning data ([`export`]) and drawn as
//! few-shot examples ([`fewshot_from`]). The filters both apply — which runs are worth learning
//! from ([`Keep`]) and which questions no example may come from ([`Excluded`]) — are here.

pub mod rebuild;
pub mod export;
pub mod fewshot_from;

use std::collections::HashMap;

use crate::base::metrics::normalize_answer;
use crate::record::run::Run;
use crate::trajectories::rebuild::Example;

/// Which runs are worth learning from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Keep {
    /// Right (EM 1; FEVER: the label) and ended by an answer: the default.
    Right,
    /// Ended by an answer whose F1 against the gold is at least this.
    MinF1(f64),
    /// Every run, right or wrong, finished or not (`--all`).
    All,
}

/// Questions no example may come from (the evaluation split: no leakage): by id, and by
/// normalised text (lower case, no punctuation or articles, as answers are compared).
#[derive(Debug, Clone, Default)]
pub struct Excluded {
    /// Each id, with its question's position in its file.
    ids: HashMap<String, usize>,
    /// Each normalised text, with its question's position in its file (none for `ask`'s).
    questions: HashMap<String, Option<usize>>,
}

/// Which question a run asks: its id, else its normalised text (a run of `ask`).
pub(crate) fn question_key(run: &Run) -> String {
    run.id.clone().unwrap_or_else(|| normalize_answer(&run.question))
}

impl Excluded {
    /// A question of a file: its id (unless it is only the record's position, as in a file
    /// without ids: another such file's question at that position is another question) and its text.
    pub fn insert(&mut self, id: &str, position: usize, question: &str) {
        if id != position.to_string() {
            self.ids.insert(id.to_owned(), position);
        }
        self.questions.insert(normalize_answer(question), Some(position));
    }

    /// A question with no id (the one `ask` asks).
    pub fn insert_question(&mut self, question: &str) {
        self.questions.insert(normalize_answer(question), None);
    }

    /// Whether the run asks one of these questions, by its id or its text.
    pub fn contains(&self, run: &Run) -> bool {
        run.id.as_ref().is_some_and(|id| self.ids.contains_key(id))
            || self.questions.contains_key(&normalize_answer(&run.question))
    }

    /// Where in its file the question the run asks is, by its id or its text.
    pub fn position_of(&self, run: &Run) -> Option<usize> {
        run.id
            .as_ref()
            .and_then(|id| self.ids.get(id).copied())
            .or_else(|| {
                self.questions
                    .get(&normalize_answer(&run.question))
                    .copied()
                    .flatten()
            })
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.questions.is_empty()
    }
}

/// Whether an example that ended with an answer is right enough to keep.
pub(crate) fn is_kept(keep: Keep, example: &Example) -> bool {
    match (keep, &example.score) {
        (Keep::All, _) => true,
        (Keep::Right, Some(score)) => score.em,
        (Keep::MinF1(min), Some(score)) => score.f1 >= min,
        (_, None) => false,
    }
}
