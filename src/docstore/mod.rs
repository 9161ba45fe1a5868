//! `Docstore`: where Search and Lookup read from — one explorer per question, with its own cursor.

use futures::future::BoxFuture;

/// A per-question explorer: the current page and the Lookup cursor live here.
///
/// `search` and `lookup` return the observation the model reads; misses ("Could not find ...")
/// are observations too. `Err` is for infrastructure failures after retries.
pub trait Docstore: Send {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>>;

    fn lookup(&mut self, keyword: &str) -> String;
}

/// An infrastructure failure of a docstore.
#[derive(Debug, thiserror::Error)]
pub enum DocstoreError {
    #[error("no docstore is configured to run `{action}`")]
    NotConfigured { action: String },
}

/// A paragraph that comes with a question (HotpotQA's distractor setting): its title and sentences.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ContextParagraph {
    pub title: String,
    pub sentences: Vec<String>,
}

/// Opens a fresh explorer for each question: Wikipedia (shared client and cache underneath), or an
/// offline docstore built from the question's own context or a corpus file.
pub trait DocstoreSource: Send + Sync {
    fn open(&self, context: &[ContextParagraph]) -> Box<dyn Docstore>;
}
