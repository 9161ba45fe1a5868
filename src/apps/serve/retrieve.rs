//! The ranked retrievals in the shapes their clients parse: DSPy's `ColBERTv2` client
//! (`/api/search`, as the wiki17 abstracts server answers) and Search-R1's retrieval client
//! (`/retrieve`). Both read [`PageIndex::top_pages`]; a hit's text is the page's title and the
//! first sentences a `Search[...]` of it shows under the served profile (cut at
//! [`OBSERVATION_CHARS`] in both profiles).

use serde::{Deserialize, Serialize};

use crate::base::profile::Profile;
use crate::base::text::cut_marked;
use crate::docstore::index::IndexedPage;
use crate::docstore::{OBSERVATION_CHARS, SUMMARY_SENTENCES, summary};
use crate::docstore::{index::IndexError, index::PageIndex};

/// The most hits one query may ask for (the ColBERT server's cap, which DSPy's client asserts).
pub const MAX_K: usize = 100;
/// Hits when `/api/search` is not given `k` (the ColBERT server's default).
pub const DEFAULT_K: usize = 10;
/// Hits when `/retrieve` is not given `topk` (Search-R1's default `retrieval_topk`).
pub const DEFAULT_TOPK: usize = 3;
/// The most queries one `/retrieve` request may hold.
pub const MAX_QUERIES: usize = 256;
/// The most hits one `/retrieve` request may ask for, its queries × `topk` (256 queries of
/// Search-R1's default 3 fit).
pub const MAX_HITS: usize = 1024;
/// The longest query, in bytes: an action's argument's limit (a query is a `Search` entity).
pub const MAX_QUERY_BYTES: usize = crate::base::limits::MAX_ARGUMENT_BYTES;

/// `{"query", "topk": [...]}`: what the ColBERT server answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColbertAnswer {
    pub query: String,
    pub topk: Vec<ColbertHit>,
}

/// One ColBERT hit: `text` is `Title | first sentences`; `prob` is the softmax of the scores.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ColbertHit {
    pub text: String,
    pub pid: u64,
    pub rank: usize,
    pub score: f64,
    pub prob: f64,
}

/// One Search-R1 document: `contents` is `"Title"\ntext`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct R1Document {
    pub id: String,
    pub contents: String,
}

/// A Search-R1 hit with its score.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct R1Scored {
    pub document: R1Document,
    pub score: f64,
}

/// `{"result": [[...] per query]}`: documents, or documents with scores.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum R1Result {
    Scored(Vec<R1Scored>),
    Documents(Vec<R1Document>),
}

/// What was wrong with a retrieval request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("`{field}` must be at least 1")]
    Zero { field: &'static str },
    #[error("query is {len} bytes, more than the {MAX_QUERY_BYTES} a query can be")]
    QueryTooLong { len: usize },
    #[error("{n} queries, more than the {MAX_QUERIES} one request can hold")]
    TooManyQueries { n: usize },
    #[error(
        "{n_queries} queries × topk {topk} ask for {} hits, more than the {MAX_HITS} one request can ask for: send fewer queries or a smaller topk",
        n_queries * topk
    )]
    TooManyHits { n_queries: usize, topk: usize },
}

/// How many hits to give: at least 1, at most [`MAX_K`] (more is cut to it, as the ColBERT
/// server does).
pub fn hits_wanted(k: Option<usize>, default: usize, field: &'static str) -> Result<usize, RequestError> {
    match k.unwrap_or(default) {
        0 => Err(RequestError::Zero { field }),
        k => Ok(k.min(MAX_K)),
    }
}

/// Checks one query's size.
pub fn check_query(query: &str) -> Result<(), RequestError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(RequestError::QueryTooLong { len: query.len() });
    }
    Ok(())
}

/// Checks a batch of queries, each to get `topk` hits: their number, the hits they ask for,
/// each one's size.
pub fn check_queries(queries: &[String], topk: usize) -> Result<(), RequestError> {
    if queries.len() > MAX_QUERIES {
        return Err(RequestError::TooManyQueries { n: queries.len() });
    }
    if queries.len().saturating_mul(topk) > MAX_HITS {
        return Err(RequestError::TooManyHits {
            n_queries: queries.len(),
            topk,
        });
    }
    queries.iter().try_for_each(|query| check_query(query))
}

/// The first sentences a search of the page shows under `profile`'s rules, cut at
/// [`OBSERVATION_CHARS`]. Sentences never span two paragraphs, so only the first paragraphs are
/// split: twice as many each time until they hold the sentences a search shows.
fn first_sentences(page: &IndexedPage, profile: Profile) -> String {
    let mut n_paragraphs = 1;
    loop {
        let first = IndexedPage {
            title: String::new(),
            paragraphs: page.paragraphs[..n_paragraphs.min(page.paragraphs.len())].to_vec(),
            sentences: page.sentences,
            links: Vec::new(),
        };
        let sentences = first.to_page().sentences(profile);
        if sentences.len() >= SUMMARY_SENTENCES || n_paragraphs >= page.paragraphs.len() {
            return cut_marked(&summary(&sentences), OBSERVATION_CHARS).into_owned();
        }
        n_paragraphs *= 2;
    }
}

/// The ColBERT answer for `query`.
pub fn colbert_search(
    index: &PageIndex,
    query: &str,
    k: usize,
    profile: Profile,
) -> Result<ColbertAnswer, IndexError> {
    let hits = index.top_pages(query, k)?;
    // The softmax of the scores, shifted by the best for stability.
    let best = hits.first().map_or(0.0, |hit| f64::from(hit.score));
    let weights: Vec<f64> = hits
        .iter()
        .map(|hit| (f64::from(hit.score) - best).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let topk = hits
        .iter()
        .zip(&weights)
        .enumerate()
        .map(|(idx, (hit, weight))| ColbertHit {
            text: format!("{} | {}", hit.page.title, first_sentences(&hit.page, profile)),
            pid: hit.ordinal,
            rank: idx + 1,
            score: f64::from(hit.score),
            prob: weight / total,
        })
        .collect();
    Ok(ColbertAnswer {
        query: query.to_owned(),
        topk,
    })
}

/// The Search-R1 answer for one query.
pub fn r1_retrieve(
    index: &PageIndex,
    query: &str,
    topk: usize,
    scores: bool,
    profile: Profile,
) -> Result<R1Result, IndexError> {
    let hits = index.top_pages(query, topk)?;
    let documents = hits.iter().map(|hit| {
        let document = R1Document {
            id: hit.ordinal.to_string(),
            contents: format!("\"{}\"\n{}", hit.page.title, first_sentences(&hit.page, profile)),
        };
        (document, f64::from(hit.score))
    });
    Ok(if scores {
        R1Result::Scored(
            documents
                .map(|(document, score)| R1Scored { document, score })
                .collect(),
        )
    } else {
        R1Result::Documents(documents.map(|(document, _)| document).collect())
    })
}
