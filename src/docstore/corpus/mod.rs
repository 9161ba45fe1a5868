//! The small offline docstores: a fixed set of pages instead of Wikipedia, searched like the
//! offline Wikipedia ([`super::index`]), so an evaluation needs no network.
//!
//! - [`DistractorSource`]: each question's own context paragraphs (HotpotQA's distractor setting),
//!   searched by a [`ContextIndex`]: `PageIndex`'s search computed straight from ten pages, with
//!   no tantivy index to build per question.
//! - [`CorpusSource`]: the pages of a file — JSON Lines `{"title", "text"}` (or `"sentences"`), or
//!   the contexts of a HotpotQA file (official, Hugging Face or JSON Lines), pooled, in an
//!   in-memory `PageIndex`.
//!
//! `Search[entity]` opens the page whose title matches (ignoring case, then punctuation);
//! otherwise it answers `Could not find X. Similar: [...]` with the titles most like the entity.
//! `Lookup` has the same cursor as on Wikipedia.

use std::collections::HashSet;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::index::title::title_key;
use super::index::{IndexExplorer, IndexSource, IndexedPage, PageIndex};

mod context_index;

use super::{ContextParagraph, Docstore, DocstoreError, DocstoreInfo, DocstoreSource};
use crate::base::profile::Profile;
pub use context_index::{ContextExplorer, ContextHit, ContextIndex};

/// A question's context paragraphs, each a page.
pub fn context_pages(context: &[ContextParagraph]) -> Vec<IndexedPage> {
    context
        .iter()
        .map(|paragraph| IndexedPage::split(paragraph.title.clone(), vec![paragraph.sentences.clone()]))
        .collect()
}

/// Loads the pages of a corpus file: JSON Lines of `{"title", "text"}` / `{"title", "sentences"}`
/// pages, or a HotpotQA question file (a JSON array or JSON Lines of records with a `context`,
/// official `[title, sentences]` pairs or the Hugging Face `{title: [...], sentences: [[...]]}`),
/// whose paragraphs are pooled. A title seen twice (ignoring case and punctuation) keeps its first
/// page.
pub fn load_pages(path: &Path) -> Result<Vec<IndexedPage>, DocstoreError> {
    let text = std::fs::read_to_string(path).map_err(|source| DocstoreError::CorpusFile {
        path: path.to_owned(),
        source,
    })?;
    let error = |record: String, message: String| DocstoreError::Corpus {
        path: path.to_owned(),
        record,
        message,
    };
    let mut loader = Loader::default();
    if text.trim_start().starts_with('[') {
        let records: Vec<Value> = serde_json::from_str(&text)
            .map_err(|json| error(format!("line {}", json.line()), format!("not valid JSON: {json}")))?;
        for (idx, record) in records.iter().enumerate() {
            loader
                .record(record)
                .map_err(|message| error(format!("record {}", idx + 1), message))?;
        }
    } else {
        for (idx, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let record: Value = serde_json::from_str(line)
                .map_err(|json| error(format!("line {}", idx + 1), format!("not valid JSON: {json}")))?;
            loader
                .record(&record)
                .map_err(|message| error(format!("line {}", idx + 1), message))?;
        }
    }
    if loader.pages.is_empty() {
        return Err(error("the file".to_owned(), "holds no pages".to_owned()));
    }
    Ok(loader.pages)
}

/// Pools records into pages, skipping titles already seen.
#[derive(Default)]
struct Loader {
    pages: Vec<IndexedPage>,
    seen: HashSet<String>,
}

impl Loader {
    fn add(&mut self, page: IndexedPage) {
        if self.seen.insert(title_key(&page.title)) {
            self.pages.push(page);
        }
    }

    /// One record: a page, or a question whose context is pooled.
    fn record(&mut self, record: &Value) -> Result<(), String> {
        let object = record.as_object().ok_or("expected a JSON object")?;
        if let Some(context) = object.get("context") {
            for page in context_pages(&context_paragraphs(context)?) {
                self.add(page);
            }
            return Ok(());
        }
        if !object.contains_key("title") {
            return Err("expected a `title` (a page) or a `context` (a HotpotQA question)".to_owned());
        }
        let page = super::index::jsonl_page(record.clone())?;
        self.add(page);
        Ok(())
    }
}

/// A HotpotQA `context`: official `[[title, [sentences]], ...]` or Hugging Face
/// `{"title": [...], "sentences": [[...], ...]}`.
pub fn context_paragraphs(context: &Value) -> Result<Vec<ContextParagraph>, String> {
    match context {
        Value::Array(pairs) => pairs
            .iter()
            .enumerate()
            .map(|(idx, pair)| match pair.as_array().map(Vec::as_slice) {
                Some([title, sentences]) => Ok(ContextParagraph {
                    title: title
                        .as_str()
                        .ok_or_else(|| format!("`context[{idx}][0]` must be a title string"))?
                        .to_owned(),
                    sentences: strings(sentences, &format!("context[{idx}][1]"))?,
                }),
                _ => Err(format!("`context[{idx}]` must be a [title, sentences] pair")),
            })
            .collect(),
        Value::Object(columns) => {
            let titles = strings(
                columns
                    .get("title")
                    .ok_or("`context` needs `title` and `sentences`")?,
                "context.title",
            )?;
            let sentences = columns
                .get("sentences")
                .and_then(Value::as_array)
                .ok_or("`context.sentences` must be a list of sentence lists")?;
            if sentences.len() != titles.len() {
                return Err(format!(
                    "`context` has {} titles but {} sentence lists",
                    titles.len(),
                    sentences.len()
                ));
            }
            titles
                .into_iter()
                .zip(sentences)
                .enumerate()
                .map(|(idx, (title, sentences))| {
                    Ok(ContextParagraph {
                        title,
                        sentences: strings(sentences, &format!("context.sentences[{idx}]"))?,
                    })
                })
                .collect()
        }
        _ => Err("`context` must be a list of [title, sentences] pairs or {title, sentences}".to_owned()),
    }
}

fn strings(value: &Value, field: &str) -> Result<Vec<String>, String> {
    let items = value
        .as_array()
        .ok_or_else(|| format!("`{field}` must be a list of strings"))?;
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("`{field}` must be a list of strings"))
        })
        .collect()
}

/// Opens each question's explorer over that question's own context paragraphs.
#[derive(Debug, Clone, Copy)]
pub struct DistractorSource {
    profile: Profile,
}

impl DistractorSource {
    pub fn new(profile: Profile) -> DistractorSource {
        DistractorSource { profile }
    }

    /// The explorer over `context`'s paragraphs: built in microseconds, it cannot fail.
    pub fn explorer(&self, context: &[ContextParagraph]) -> Result<ContextExplorer, Infallible> {
        Ok(ContextExplorer::new(
            ContextIndex::new(context_pages(context)),
            self.profile,
        ))
    }
}

impl DocstoreSource for DistractorSource {
    fn open(&self, context: &[ContextParagraph]) -> Box<dyn Docstore> {
        let Ok(explorer) = self.explorer(context);
        Box::new(explorer)
    }

    /// Every question has its own pages: no snapshot.
    fn info(&self) -> DocstoreInfo {
        DocstoreInfo {
            kind: "distractor".to_owned(),
            snapshot: None,
        }
    }
}

/// Opens every question's explorer over one corpus file's pages, indexed in memory.
#[derive(Clone)]
pub struct CorpusSource {
    source: IndexSource,
}

impl CorpusSource {
    /// Loads and indexes `path` (see [`load_pages`]).
    pub fn load(path: &Path, profile: Profile) -> Result<CorpusSource, DocstoreError> {
        let index = PageIndex::in_memory(load_pages(path)?, "corpus")?;
        Ok(CorpusSource {
            source: IndexSource::new(Arc::new(index), "corpus", profile),
        })
    }

    /// The same corpus under another profile.
    pub fn with_profile(&self, profile: Profile) -> CorpusSource {
        CorpusSource {
            source: self.source.with_profile(profile),
        }
    }

    pub fn explorer(&self) -> IndexExplorer {
        self.source.explorer()
    }
}

impl DocstoreSource for CorpusSource {
    fn open(&self, context: &[ContextParagraph]) -> Box<dyn Docstore> {
        self.source.open(context)
    }

    fn info(&self) -> DocstoreInfo {
        self.source.info()
    }
}

#[cfg(test)]
mod tests;
