//! Offline docstores: a fixed set of pages instead of Wikipedia, so an evaluation needs no network.
//!
//! - [`DistractorSource`]: each question's own context paragraphs (HotpotQA's distractor setting).
//! - [`CorpusSource`]: the pages of a file — JSON Lines `{"title", "text"}` (or `"sentences"`), or
//!   the contexts of a HotpotQA file (official, Hugging Face or JSON Lines), pooled.
//!
//! `Search[entity]` opens the page whose title matches exactly, ignoring case and punctuation;
//! otherwise it answers `Could not find X. Similar: [...]` with the titles most like the entity.
//! `Lookup` has the same cursor as on Wikipedia.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use super::page::{Page, Reader};
use super::python::repr_list;
use super::{ContextParagraph, Docstore, DocstoreError, DocstoreSource};
use crate::profile::Profile;

/// How many titles a miss offers.
const SIMILAR_TITLES: usize = 5;

/// A set of pages, searchable by title.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    pages: Vec<Page>,
    /// Normalised title → the first page with it.
    index: HashMap<String, usize>,
    /// Each page's normalised title, for ranking.
    keys: Vec<String>,
}

/// What a search of a corpus found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorpusHit<'c> {
    Page(&'c Page),
    /// The most similar titles, best first (empty for an empty corpus).
    Similar(Vec<String>),
}

impl Corpus {
    pub fn new(pages: impl IntoIterator<Item = Page>) -> Corpus {
        let mut corpus = Corpus::default();
        for page in pages {
            corpus.push(page);
        }
        corpus
    }

    /// A question's context paragraphs, each a page.
    pub fn from_context(context: &[ContextParagraph]) -> Corpus {
        Corpus::new(
            context
                .iter()
                .map(|paragraph| Page::from_sentences(paragraph.title.clone(), paragraph.sentences.clone())),
        )
    }

    fn push(&mut self, page: Page) {
        let key = normalize_title(&page.title);
        let idx = self.pages.len();
        self.index.entry(key.clone()).or_insert(idx);
        self.keys.push(key);
        self.pages.push(page);
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    pub fn pages(&self) -> &[Page] {
        &self.pages
    }

    /// The page titled `entity` (case and punctuation ignored), else the most similar titles.
    pub fn search(&self, entity: &str) -> CorpusHit<'_> {
        let key = normalize_title(entity);
        if let Some(&idx) = self.index.get(&key) {
            return CorpusHit::Page(&self.pages[idx]);
        }
        let mut ranked: Vec<(f64, usize)> = self
            .keys
            .iter()
            .enumerate()
            .map(|(idx, title)| (title_similarity(&key, title), idx))
            .collect();
        // Best first; equal scores keep the corpus order.
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut titles: Vec<String> = Vec::new();
        for (_, idx) in ranked {
            let title = &self.pages[idx].title;
            if !titles.contains(title) {
                titles.push(title.clone());
            }
            if titles.len() == SIMILAR_TITLES {
                break;
            }
        }
        CorpusHit::Similar(titles)
    }

    /// Loads a corpus file: JSON Lines of `{"title", "text"}` / `{"title", "sentences"}` pages, or
    /// a HotpotQA question file (a JSON array or JSON Lines of records with a `context`, official
    /// `[title, sentences]` pairs or the Hugging Face `{title: [...], sentences: [[...]]}`), whose
    /// paragraphs are pooled (a title seen twice keeps its first paragraph).
    pub fn load(path: &Path) -> Result<Corpus, DocstoreError> {
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
        if loader.corpus.is_empty() {
            return Err(error("the file".to_owned(), "holds no pages".to_owned()));
        }
        Ok(loader.corpus)
    }
}

/// Pools records into a corpus, skipping titles already seen.
#[derive(Default)]
struct Loader {
    corpus: Corpus,
}

impl Loader {
    fn add(&mut self, page: Page) {
        if self.corpus.index.contains_key(&normalize_title(&page.title)) {
            return;
        }
        self.corpus.push(page);
    }

    /// One record: a page, or a question whose context is pooled.
    fn record(&mut self, record: &Value) -> Result<(), String> {
        let object = record.as_object().ok_or("expected a JSON object")?;
        if let Some(context) = object.get("context") {
            for paragraph in context_paragraphs(context)? {
                self.add(Page::from_sentences(paragraph.title, paragraph.sentences));
            }
            return Ok(());
        }
        let title = object
            .get("title")
            .ok_or("expected a `title` (a page) or a `context` (a HotpotQA question)")?
            .as_str()
            .ok_or("`title` must be a string")?
            .to_owned();
        let page = match (object.get("text"), object.get("sentences")) {
            (Some(text), _) => {
                let text = text.as_str().ok_or("`text` must be a string")?;
                let paragraphs = text
                    .split('\n')
                    .map(str::trim)
                    .filter(|paragraph| !paragraph.is_empty())
                    .map(str::to_owned)
                    .collect();
                Page::new(title, paragraphs)
            }
            (None, Some(sentences)) => Page::from_sentences(title, strings(sentences, "sentences")?),
            (None, None) => return Err("a page needs `text` or `sentences`".to_owned()),
        };
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

/// Lowercase letters and digits, words separated by one space: `"Arthur's  Magazine!"` →
/// `arthurs magazine`. Apostrophes join (`arthur's` → `arthurs`); other punctuation separates.
pub fn normalize_title(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    let mut pending_space = false;
    for c in title.chars() {
        if c.is_alphanumeric() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.extend(c.to_lowercase());
        } else if !matches!(c, '\'' | '’' | '‘' | '`' | '.') {
            pending_space = true;
        }
    }
    out
}

/// How alike two normalised titles are, in `[0, 2]`: the Dice coefficient of their character
/// bigrams plus the share of the query's words found in the title.
fn title_similarity(query: &str, title: &str) -> f64 {
    let bigrams = |text: &str| -> Vec<(char, char)> {
        let chars: Vec<char> = text.chars().collect();
        let mut pairs: Vec<(char, char)> = chars.windows(2).map(|pair| (pair[0], pair[1])).collect();
        pairs.sort_unstable();
        pairs
    };
    let (a, b) = (bigrams(query), bigrams(title));
    let dice = if a.is_empty() && b.is_empty() {
        0.0
    } else {
        // Multiset intersection of the sorted bigram lists.
        let (mut i, mut j, mut common) = (0, 0, 0usize);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    common += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        2.0 * common as f64 / (a.len() + b.len()) as f64
    };
    let words: Vec<&str> = query.split(' ').filter(|word| !word.is_empty()).collect();
    let title_words: Vec<&str> = title.split(' ').collect();
    let overlap = if words.is_empty() {
        0.0
    } else {
        words.iter().filter(|word| title_words.contains(word)).count() as f64 / words.len() as f64
    };
    dice + overlap
}

/// One question's explorer over a corpus.
pub struct CorpusExplorer {
    corpus: Arc<Corpus>,
    reader: Reader,
}

impl CorpusExplorer {
    pub fn new(corpus: Arc<Corpus>, profile: Profile) -> CorpusExplorer {
        CorpusExplorer {
            corpus,
            reader: Reader::new(profile),
        }
    }

    /// `Search[entity]`, synchronously.
    pub fn search_now(&mut self, entity: &str) -> String {
        let profile = self.reader.profile();
        match self.corpus.search(entity) {
            CorpusHit::Page(page) => self.reader.open(page.clone()),
            CorpusHit::Similar(titles) => {
                self.reader.missed();
                if titles.is_empty() && profile == Profile::Default {
                    format!("Could not find {entity}. No similar pages.")
                } else {
                    format!("Could not find {entity}. Similar: {}.", repr_list(&titles))
                }
            }
        }
    }
}

impl Docstore for CorpusExplorer {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        let observation = self.search_now(entity);
        Box::pin(async move { Ok(observation) })
    }

    fn lookup(&mut self, keyword: &str) -> String {
        self.reader.lookup(keyword)
    }
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
}

impl DocstoreSource for DistractorSource {
    fn open(&self, context: &[ContextParagraph]) -> Box<dyn Docstore> {
        Box::new(CorpusExplorer::new(
            Arc::new(Corpus::from_context(context)),
            self.profile,
        ))
    }
}

/// Opens every question's explorer over one shared corpus.
#[derive(Debug, Clone)]
pub struct CorpusSource {
    corpus: Arc<Corpus>,
    profile: Profile,
}

impl CorpusSource {
    pub fn new(corpus: Arc<Corpus>, profile: Profile) -> CorpusSource {
        CorpusSource { corpus, profile }
    }

    /// Loads `path` (see [`Corpus::load`]).
    pub fn load(path: &Path, profile: Profile) -> Result<CorpusSource, DocstoreError> {
        Ok(CorpusSource::new(Arc::new(Corpus::load(path)?), profile))
    }
}

impl DocstoreSource for CorpusSource {
    fn open(&self, _context: &[ContextParagraph]) -> Box<dyn Docstore> {
        Box::new(CorpusExplorer::new(self.corpus.clone(), self.profile))
    }
}

#[cfg(test)]
mod tests;
