//! `PageIndex::top_pages`: the index's BM25 ranking as a retriever — the `k` best pages for a
//! query with their scores, for the retrieval endpoints of `serve` (DSPy's ColBERT client,
//! Search-R1's `/retrieve`).
//!
//! The query is the one the Similar list of `Search[...]` starts from (BM25 over titles, boosted,
//! and text; a fuzzy title term for each word no title holds; ties to the page earlier in the
//! dump); the Similar list then re-ranks its 20 best by title likeness, which a retriever does
//! not: a retriever wants passages about the query, not titles that look like it.

use std::cmp::Reverse;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, FuzzyTermQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{SegmentReader, TantivyDocument, Term};

use super::{FUZZY_BOOST, FUZZY_MIN_CHARS, PageIndex, TITLE_BOOST, search_error};
use crate::docstore::index::IndexError;
use crate::docstore::index::schema::{IndexedPage, analyzer};

/// One retrieved page: where it stands in the dump, its BM25 score and the page itself.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedPage {
    /// The page's position in the dump: a stable id within the snapshot.
    pub ordinal: u64,
    pub score: f32,
    pub page: IndexedPage,
}

impl PageIndex {
    /// The `k` pages that best match `query`, best first (ties to the page earlier in the dump);
    /// empty when no word of the query is indexed.
    pub fn top_pages(&self, query: &str, k: usize) -> Result<Vec<RankedPage>, IndexError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let mut words: Vec<String> = Vec::new();
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(query);
        while let Some(token) = stream.next() {
            if !words.contains(&token.text) {
                words.push(token.text.clone());
            }
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for word in &words {
            let title_term = Term::from_field_text(self.schema.title, word);
            let text_term = Term::from_field_text(self.schema.text, word);
            let known = searcher.doc_freq(&title_term).map_err(search_error)? > 0;
            clauses.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(title_term.clone(), IndexRecordOption::WithFreqs)),
                    TITLE_BOOST,
                )),
            ));
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(text_term, IndexRecordOption::WithFreqs)),
            ));
            if !known && word.chars().count() >= FUZZY_MIN_CHARS {
                clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(
                        Box::new(FuzzyTermQuery::new(title_term, 1, true)),
                        FUZZY_BOOST,
                    )),
                ));
            }
        }
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let collector = TopDocs::with_limit(k).tweak_score(|segment: &SegmentReader| {
            let ordinals = segment
                .fast_fields()
                .u64("ordinal")
                .ok()
                .map(|column| column.first_or_default_col(0));
            move |doc, score| {
                (
                    score,
                    Reverse(ordinals.as_ref().map_or(0, |column| column.get_val(doc))),
                )
            }
        });
        let found = searcher
            .search(&BooleanQuery::new(clauses), &collector)
            .map_err(search_error)?;
        let mut pages = Vec::with_capacity(found.len());
        for ((score, Reverse(ordinal)), address) in found {
            let document: TantivyDocument = searcher.doc(address).map_err(search_error)?;
            pages.push(RankedPage {
                ordinal,
                score,
                page: self.schema.page(&document),
            });
        }
        Ok(pages)
    }
}
