//! `PageIndex::top_pages`: the index's BM25 ranking as a retriever — the `k` best pages for a
//! query with their scores, for the retrieval endpoints of `serve` (DSPy's ColBERT client,
//! Search-R1's `/retrieve`).
//!
//! The query is the one the Similar list of `Search[...]` starts from (`PageIndex::ranked_query`:
//! BM25 over titles, boosted, and text; fuzzy title words; ties to the page earlier in the dump);
//! the Similar list then re-ranks its 20 best by title likeness, which a retriever does not: a
//! retriever wants passages about the query, not titles that look like it.

use tantivy::TantivyDocument;

use super::{PageIndex, search_error};
use crate::docstore::index::IndexError;
use crate::docstore::index::IndexedPage;

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
        let Some(query) = self.ranked_query(&searcher, query, super::Candidates::All)? else {
            return Ok(Vec::new());
        };
        // Ties go to the lower document id: the page earlier in the dump (one segment in dump
        // order), as in the Similar list.
        let found = query.top(&searcher, k).map_err(search_error)?;
        let mut pages = Vec::with_capacity(found.len());
        for (score, address) in found {
            let ordinals = searcher
                .segment_reader(address.segment_ord)
                .fast_fields()
                .u64("ordinal")
                .map_err(search_error)?;
            let document: TantivyDocument = searcher.doc(address).map_err(search_error)?;
            pages.push(RankedPage {
                ordinal: ordinals.first(address.doc_id).unwrap_or_default(),
                score,
                page: self.schema.page(&document),
            });
        }
        Ok(pages)
    }
}
