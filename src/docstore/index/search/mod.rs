//! `PageIndex`: Wikipedia's search over a tantivy index — an exact title opens its page (MediaWiki's
//! "Go": normalised, then case-insensitive, then without punctuation), anything else gives the
//! ranked, typo-tolerant list of similar titles.
//!
//! The ranking is deterministic: BM25 over titles (boosted) and text, plus the title words one
//! edit away from each query word (transpositions included), ties to the page earlier in the
//! dump; the best candidates are then re-ranked by how alike their titles are to the entity.
//!
//! Fast at Wikipedia's scale: every clause is a plain term query, so tantivy's block-max WAND
//! skips the postings that cannot reach the candidates, and ties need no fast field: an index
//! is one segment whose document ids follow the dump ([`super::build::merge_into_one_segment`]).

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::columnar::{Column, StrColumn};
use tantivy::directory::error::OpenReadError;
use tantivy::query::{
    BooleanQuery, BoostQuery, EnableScoring, FuzzyTermQuery, Occur, Query, RangeQuery, TermQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::Token;
use tantivy::{
    DocAddress, DocId, DocSet, Index, IndexReader, Order, ReloadPolicy, Searcher, TERMINATED,
    TantivyDocument, TantivyError, Term,
};

use super::IndexError;
use super::manifest::{INDEX_FORMAT_V2, Manifest, read_error};
use super::neighbours::{NEIGHBOUR_TABLE_FORMAT, NEIGHBOURS_FILE, NeighbourTable, one_edit_apart};
use super::read_only::ReadOnlyDirectory;
use super::schema::{Digest, IndexedPage, WikiSchema, analyzer};
use super::title::{folded_title, is_possible_title, mediawiki_title, title_key, title_similarity};
use super::title_table::{TITLES_FILE, TitleTable};
use crate::docstore::page::{DISAMBIGUATION_ENTRIES, SIMILAR_TITLES};

/// How many ranked candidates are re-ranked by title similarity.
const CANDIDATES: usize = 20;
/// A title word counts this much more than a word of the text.
const TITLE_BOOST: f32 = 3.0;
/// A title word one edit away from a query word counts this much more than a word of the text.
const FUZZY_BOOST: f32 = 2.0;
/// Words shorter than this bring in no neighbours (a dump's index).
const FUZZY_MIN_CHARS: usize = 2;
/// The most title words one edit away that a query word brings in: the most frequent ones.
const FUZZY_NEIGHBOURS: usize = 16;
/// Words shorter than this are never matched fuzzily (the small docstores: too many neighbours).
const UNKNOWN_FUZZY_MIN_CHARS: usize = 4;
/// How alike (`title_similarity`) the title of a page no query word matched must be for the page
/// to join the Similar list of a small docstore: over the 100 contexts of
/// `corpus::tests::a_misspelt_title_is_among_the_similar_titles`, 0.3 keeps every misspelt title
/// and adds 89 titles to 1,988 misses where any likeness at all (above 0) adds 4,313.
const UNSCORED_MIN_SIMILARITY: f64 = 0.3;
/// A word of the text held by more than one page in `COMMON_SHARE` (and by more than
/// [`COMMON_MIN_PAGES`]) is not searched in the text: its BM25 weight is tiny, its postings
/// the longest of the index (`the`, `of`, `in`). Titles are searched for it all the same.
const COMMON_SHARE: u64 = 10;
const COMMON_MIN_PAGES: u64 = 10_000;
/// A title word held by more than one page in `LEADING_SHARE` (and by more than
/// [`LEADING_MIN_PAGES`]), or a word of the text, is frequent: a query with one searches through
/// its rarest title words ([`Candidates::Led`]); a query without one is a plain union, cheap as
/// its postings are short.
const LEADING_SHARE: u64 = 200;
const LEADING_MIN_PAGES: u64 = 1_000;
/// How many titles the title words that lead a search may hold between them ([`Candidates::Led`]):
/// each candidate costs a few seeks into the long postings. At 5.2 M pages 500 kept the 99th
/// percentile of one-typo searches under 2.5 ms on both generators' dumps, and more of their
/// titles among the five than before (1,000 and 3,000: as many found, the tail 1.1–2.5× longer);
/// the title one edit from the entity is a candidate whatever leads.
const LEAD_BUDGET: u64 = 500;
/// The most words an entity may have for the titles one edit from it to be looked for: each of
/// its words is a place the edit may be, and each place costs a title built and looked up. A
/// title of more words is not one a model names with a typo (tantivy keeps title lengths exactly
/// only below this many words, [`led`]'s `LONG_TITLE`), and with the bound the search's work is
/// linear in the entity's length.
const ONE_EDIT_MAX_WORDS: usize = 40;
/// Memory of the writer that builds an in-memory index (tantivy's minimum).
const IN_MEMORY_BUDGET: usize = super::build::MIN_MEMORY_PER_THREAD;

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchHit {
    /// The page whose title the entity names.
    Page(IndexedPage),
    /// The most similar titles, best first (empty when nothing matches).
    Similar(Vec<String>),
}

/// Which titles open a page without the ranked search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TitleMatch {
    /// Wikipedia's "Go": the MediaWiki-normalised title, then ignoring case (a dump's index).
    Wikipedia,
    /// Also ignoring punctuation (`VIVA: UK and Ireland` opens `Viva (UK and Ireland)`): the small
    /// in-memory docstores, whose few pages a model names loosely.
    Loose,
}

/// How the ranked search reaches titles one edit away from a query word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuzzyTitles {
    /// Every query word of [`FUZZY_MIN_CHARS`] or more brings in the [`FUZZY_NEIGHBOURS`] most
    /// frequent title words one edit away, each a term query (a dump's index: a typo in a word that
    /// many titles share still reaches its title, and block-max WAND prunes plain terms).
    FrequentNeighbours,
    /// A word no title holds, of [`UNKNOWN_FUZZY_MIN_CHARS`] or more, adds a flat bonus to every
    /// title one edit away (the small in-memory docstores, as they have always searched;
    /// `corpus::ContextIndex` computes the same); and with at most [`CANDIDATES`] pages, the pages
    /// no word matched join the Similar list by title likeness alone
    /// ([`PageIndex::add_unscored_pages`]).
    UnknownWords,
}

/// Which pages the ranked search considers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Candidates {
    /// Every page that any clause matches (the retriever).
    All,
    /// When some clause is frequent, the pages that the query's rarest title words hold (up to
    /// [`LEAD_BUDGET`] titles' worth of postings; the neighbours of a word no title holds
    /// stand in for it) and the titles one edit from the entity (the Similar list); the other
    /// clauses add to their scores.
    Led,
}

/// One clause of the ranked search.
enum Clause {
    /// A word (of the title, boosted, or the text).
    Term(TermClause),
    /// The titles one edit away from a word no title holds, with a flat bonus
    /// ([`FuzzyTitles::UnknownWords`]).
    Fuzzy(Term),
}

impl Clause {
    fn query(self) -> Box<dyn Query> {
        match self {
            Clause::Term(TermClause { term, boost }) => {
                let query = Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                match boost == 1.0 {
                    true => query,
                    false => Box::new(BoostQuery::new(query, boost)),
                }
            }
            Clause::Fuzzy(term) => Box::new(BoostQuery::new(
                Box::new(FuzzyTermQuery::new(term, 1, true)),
                FUZZY_BOOST,
            )),
        }
    }
}

/// The ranked search's query, as it is searched.
enum RankedQuery {
    /// Every clause brings candidates: tantivy's union (block-max WAND), its best pages scored
    /// again by the one rule ([`led::exact_scores`]) when its clauses are all terms (a dump's
    /// index; the small docstores' flat bonuses are scored as `ContextIndex` scores them).
    Union(BooleanQuery, Option<Vec<TermClause>>),
    /// The leading clauses bring the candidates, the others only add to their scores.
    Led(LedQuery),
}

impl RankedQuery {
    /// The `limit` best pages with their scores, best first, ties to the page earlier in the index.
    fn top(&self, searcher: &Searcher, limit: usize) -> tantivy::Result<Vec<(f32, DocAddress)>> {
        match self {
            RankedQuery::Union(query, None) => {
                searcher.search(query, &TopDocs::with_limit(limit).order_by_score())
            }
            RankedQuery::Union(query, Some(terms)) => {
                // tantivy's sums differ from the rule's in the last bit at most: the best pages
                // by the rule are among twice as many of its own.
                let found = searcher.search(query, &TopDocs::with_limit(2 * limit).order_by_score())?;
                let pages: Vec<DocAddress> = found.iter().map(|(_, address)| *address).collect();
                let scores = led::exact_scores(searcher, terms, &pages)?;
                let mut ranked: Vec<(f32, DocAddress)> = scores.into_iter().zip(pages).collect();
                ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                ranked.truncate(limit);
                Ok(ranked)
            }
            RankedQuery::Led(query) => query.top(searcher, limit),
        }
    }
}

/// An opened index: searches are synchronous and take a fraction of a millisecond.
pub struct PageIndex {
    reader: IndexReader,
    /// Each segment's title column (by segment ordinal), absent from indexes built without it.
    titles: Vec<Option<StrColumn>>,
    /// Each segment's column of dump positions (by segment ordinal).
    ordinals: Vec<Column<u64>>,
    /// A dump's folded titles (format v3), where the in-memory indexes and format v2 search
    /// their title terms.
    title_table: Option<TitleTable>,
    /// A dump's title words by their deletions: the neighbours of a query word without walking
    /// the term dictionary (absent from an index built before it).
    neighbour_table: Option<NeighbourTable>,
    schema: WikiSchema,
    pages: u64,
    snapshot: String,
    title_match: TitleMatch,
    fuzzy_titles: FuzzyTitles,
    /// [`LEAD_BUDGET`] (smaller in tests, to search a small index as a large one).
    lead_budget: u64,
    /// The work the searches did, in words and bytes of the entity examined (tests check that it
    /// grows linearly with the entity).
    #[cfg(test)]
    work: std::sync::atomic::AtomicU64,
}

impl PageIndex {
    /// Opens the index built at `dir` (memory-mapped, read-only: nothing is written, no lock is
    /// taken) and its manifest.
    pub fn open(dir: &Path) -> Result<(PageIndex, Manifest), IndexError> {
        let manifest = Manifest::read(dir)?;
        let tantivy_error = |source| match source {
            // A file of the index this user may not read: say who can fix it.
            TantivyError::OpenReadError(OpenReadError::IoError { io_error, filepath })
                if io_error.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                let source = std::io::Error::new(io_error.kind(), io_error.to_string());
                read_error(dir, &dir.join(filepath), source)
            }
            source => IndexError::Tantivy {
                dir: dir.to_owned(),
                source,
            },
        };
        let directory = ReadOnlyDirectory::open(dir).map_err(|error| tantivy_error(error.into()))?;
        let title_table = match manifest.format.as_str() {
            INDEX_FORMAT_V2 => None,
            _ => Some(
                TitleTable::open(&directory)
                    .map_err(|source| read_error(dir, &dir.join(TITLES_FILE), source))?,
            ),
        };
        // A table of a layout this release does not know is left alone: the automaton finds the
        // same neighbours.
        let neighbour_table = match manifest.neighbour_table.as_deref() {
            Some(NEIGHBOUR_TABLE_FORMAT) => Some(
                NeighbourTable::open(&directory)
                    .map_err(|source| read_error(dir, &dir.join(NEIGHBOURS_FILE), source))?,
            ),
            _ => None,
        };
        let index = Index::open(directory).map_err(tantivy_error)?;
        let mut index = PageIndex::from_index(
            index,
            manifest.snapshot.clone(),
            TitleMatch::Wikipedia,
            FuzzyTitles::FrequentNeighbours,
            title_table,
        )
        .map_err(tantivy_error)?;
        if let Some(table) = neighbour_table {
            index.neighbour_table = Some(
                index
                    .checked_neighbours(table)
                    .map_err(|source| read_error(dir, &dir.join(NEIGHBOURS_FILE), source))?,
            );
        }
        Ok((index, manifest))
    }

    /// An index of `pages` in memory (a corpus file, a question's context), in their order; its
    /// snapshot id starts with `label`.
    pub fn in_memory(
        pages: impl IntoIterator<Item = IndexedPage>,
        label: &str,
    ) -> Result<PageIndex, IndexError> {
        let in_memory = |source| IndexError::Tantivy {
            dir: "(in memory)".into(),
            source,
        };
        let (schema, fields) = WikiSchema::new();
        let index = Index::builder()
            .schema(schema)
            .settings(WikiSchema::settings())
            .create_in_ram()
            .map_err(in_memory)?;
        WikiSchema::register_tokenizer(&index);
        let mut writer = index
            .writer_with_num_threads::<TantivyDocument>(1, IN_MEMORY_BUDGET)
            .map_err(in_memory)?;
        let mut digest = Digest::default();
        for (ordinal, page) in pages.into_iter().enumerate() {
            digest.add(ordinal as u64, &page);
            writer
                .add_document(fields.document(&page, ordinal as u64))
                .map_err(in_memory)?;
        }
        writer.commit().map_err(in_memory)?;
        super::build::merge_into_one_segment(&mut writer).map_err(in_memory)?;
        writer.wait_merging_threads().map_err(in_memory)?;
        PageIndex::from_index(
            index,
            digest.snapshot(label),
            TitleMatch::Loose,
            FuzzyTitles::UnknownWords,
            None,
        )
        .map_err(in_memory)
    }

    fn from_index(
        index: Index,
        snapshot: String,
        title_match: TitleMatch,
        fuzzy_titles: FuzzyTitles,
        title_table: Option<TitleTable>,
    ) -> tantivy::Result<PageIndex> {
        WikiSchema::register_tokenizer(&index);
        let schema = WikiSchema::of(&index)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        let searcher = reader.searcher();
        let pages = searcher.num_docs();
        if title_table.is_some() && searcher.segment_readers().len() != 1 {
            return Err(TantivyError::InternalError(format!(
                "a title table belongs to an index of one segment, this one has {}",
                searcher.segment_readers().len()
            )));
        }
        // Indexes built before the title column read their titles from the stored documents.
        let title_column = index.schema().get_field_entry(schema.title).is_fast();
        let titles = searcher
            .segment_readers()
            .iter()
            .map(|segment| match title_column {
                true => segment.fast_fields().str("title"),
                false => Ok(None),
            })
            .collect::<tantivy::Result<_>>()?;
        let ordinals = searcher
            .segment_readers()
            .iter()
            .map(|segment| segment.fast_fields().u64("ordinal"))
            .collect::<tantivy::Result<_>>()?;
        Ok(PageIndex {
            reader,
            titles,
            ordinals,
            title_table,
            neighbour_table: None,
            schema,
            pages,
            snapshot,
            title_match,
            fuzzy_titles,
            lead_budget: LEAD_BUDGET,
            #[cfg(test)]
            work: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// `table`, if it was built from this index's title words (one segment, as many terms).
    fn checked_neighbours(&self, table: NeighbourTable) -> std::io::Result<NeighbourTable> {
        let searcher = self.reader.searcher();
        let terms = match searcher.segment_readers() {
            [segment] => segment
                .inverted_index(self.schema.title)
                .map_err(std::io::Error::other)?
                .terms()
                .num_terms() as u64,
            _ => u64::MAX,
        };
        if table.terms() != terms {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "a table of {} title words, the index has {terms}: build the index again",
                    table.terms()
                ),
            ));
        }
        Ok(table)
    }

    /// Counts `n` units of a search's work (a word of the entity, a title built from it), for
    /// the tests; nothing outside them.
    fn count_work(&self, n: u64) {
        #[cfg(test)]
        self.work.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        #[cfg(not(test))]
        let _ = n;
    }

    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// The snapshot id: the manifest's, or derived from the pages of an in-memory index.
    pub fn snapshot(&self) -> &str {
        &self.snapshot
    }

    /// `Search[entity]`: the page titled `entity`, else the titles most like it.
    pub fn search(&self, entity: &str) -> Result<SearchHit, IndexError> {
        let searcher = self.reader.searcher();
        if let Some(address) = self.title_match(&searcher, entity)? {
            return Ok(SearchHit::Page(self.page(&searcher, address)?));
        }
        Ok(SearchHit::Similar(self.ranked_titles(
            &searcher,
            entity,
            SIMILAR_TITLES,
        )?))
    }

    /// The page titled exactly `entity` (normalised, then ignoring case, then ignoring punctuation).
    fn title_match(&self, searcher: &Searcher, entity: &str) -> Result<Option<DocAddress>, IndexError> {
        if !is_possible_title(entity) {
            return Ok(None);
        }
        let exact = mediawiki_title(entity);
        if let Some(table) = &self.title_table {
            return self.title_in_table(searcher, table, &exact);
        }
        let mut candidates = vec![
            (self.schema.title_exact, exact.clone()),
            (self.schema.title_folded, folded_title(&exact)),
        ];
        if self.title_match == TitleMatch::Loose {
            candidates.push((self.schema.title_key, title_key(&exact)));
        }
        for (field, value) in candidates {
            if value.is_empty() {
                continue;
            }
            let query = TermQuery::new(Term::from_field_text(field, &value), IndexRecordOption::Basic);
            if let Some(address) = self.earliest_match(searcher, &query).map_err(search_error)? {
                return Ok(Some(address));
            }
        }
        Ok(None)
    }

    /// The page titled `exact` (MediaWiki-normalised), else one titled so ignoring case: the
    /// earliest in the dump, from the table's pages with its folded title.
    fn title_in_table(
        &self,
        searcher: &Searcher,
        table: &TitleTable,
        exact: &str,
    ) -> Result<Option<DocAddress>, IndexError> {
        let folded = table.titled(&folded_title(exact)).map_err(table_error)?;
        let address = |doc| DocAddress::new(0, doc);
        if let [only] = folded[..] {
            // The one page titled so ignoring case, whether or not the case is the entity's.
            return Ok(Some(address(only)));
        }
        for &doc in &folded {
            if mediawiki_title(&self.title(searcher, address(doc))?) == exact {
                return Ok(Some(address(doc)));
            }
        }
        Ok(folded.first().map(|&doc| address(doc)))
    }

    /// The page earliest in the dump that `query` matches, its position read from the columns
    /// opened with the index (a sorting collector would open them again for every search).
    fn earliest_match(&self, searcher: &Searcher, query: &TermQuery) -> tantivy::Result<Option<DocAddress>> {
        let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
        let mut earliest: Option<(u64, DocAddress)> = None;
        for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
            let mut scorer = weight.scorer(segment, 1.0)?;
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                let ordinal = self
                    .ordinals
                    .get(segment_ord)
                    .and_then(|ordinals| ordinals.first(doc))
                    .unwrap_or(u64::MAX);
                let address = DocAddress::new(segment_ord as u32, doc);
                if !segment.is_deleted(doc) && earliest.is_none_or(|(known, _)| ordinal < known) {
                    earliest = Some((ordinal, address));
                }
                doc = scorer.advance();
            }
        }
        Ok(earliest.map(|(_, address)| address))
    }

    /// The `limit` best titles for `entity`, without repeats.
    fn ranked_titles(
        &self,
        searcher: &Searcher,
        entity: &str,
        limit: usize,
    ) -> Result<Vec<String>, IndexError> {
        let Some(query) = self.ranked_query(searcher, entity, Candidates::Led)? else {
            return Ok(Vec::new());
        };
        // Ties go to the lower document id: the page earlier in the dump (one segment in dump
        // order). Plain scores let block-max WAND skip what cannot make the candidates.
        let candidates = query.top(searcher, CANDIDATES).map_err(search_error)?;
        let key = title_key(entity);
        let mut ranked = Vec::with_capacity(candidates.len());
        if let Some((best, _)) = candidates.first() {
            let best = best.max(f32::MIN_POSITIVE);
            for (score, address) in &candidates {
                let title = self.title(searcher, *address)?;
                let rank = f64::from(score / best) + title_similarity(&key, &title_key(&title));
                ranked.push((rank, *address, title));
            }
        }
        if self.fuzzy_titles == FuzzyTitles::UnknownWords && self.pages <= CANDIDATES as u64 {
            self.add_unscored_pages(searcher, &key, &candidates, &mut ranked)?;
        }
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut titles: Vec<String> = Vec::new();
        for (_, _, title) in ranked {
            if !titles.contains(&title) {
                titles.push(title);
            }
            if titles.len() == limit {
                break;
            }
        }
        Ok(titles)
    }

    /// A small in-memory docstore's pages that no word of the query matched (`scored` holds the
    /// others) and whose titles are alike enough to `key` ([`UNSCORED_MIN_SIMILARITY`]), each
    /// ranked by that likeness alone: a few pages offer every title like the entity, as Wikipedia
    /// would, though a glued word (`KentBaer`) or a short one (`Blc`) matches no title word.
    /// `ContextIndex` adds the same.
    fn add_unscored_pages(
        &self,
        searcher: &Searcher,
        key: &str,
        scored: &[(f32, DocAddress)],
        ranked: &mut Vec<(f64, DocAddress, String)>,
    ) -> Result<(), IndexError> {
        for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
            for doc in 0..segment.max_doc() {
                let address = DocAddress::new(segment_ord as u32, doc);
                if segment.is_deleted(doc) || scored.iter().any(|(_, known)| *known == address) {
                    continue;
                }
                let title = self.title(searcher, address)?;
                let similarity = title_similarity(key, &title_key(&title));
                if similarity > UNSCORED_MIN_SIMILARITY {
                    ranked.push((similarity, address, title));
                }
            }
        }
        Ok(())
    }

    /// The ranked search's query for `entity` (BM25 over titles, boosted, and text; the fuzzy
    /// title words of [`FuzzyTitles`]), or `None` when it has no word to search. The Similar list
    /// re-ranks its best candidates by title likeness; `top_pages` (a retriever) takes it as it is.
    ///
    /// Under [`Candidates::Led`] (a dump's index), when some clause is frequent (`the`, `in`, the
    /// neighbours of `ae`), only the query's rarest title words bring candidates, as many as hold
    /// [`LEAD_BUDGET`] titles between them (the neighbours of a word no title holds stand in for
    /// it; when none fits, the rarest title word leads), with the pages titled as the entity with
    /// one word replaced by one of its neighbours (the title a one-typo search means,
    /// [`PageIndex::one_edit_titles`]); every other clause, and the words of the text, only add to
    /// the score of a candidate ([`LedQuery`]). Each candidate keeps the score the plain union
    /// gives it, so the best twenty of the plain union that are candidates stay among the best
    /// twenty. The long postings are only read where a candidate is, and a search reads a
    /// bounded number of candidates however common the words of the query.
    fn ranked_query(
        &self,
        searcher: &Searcher,
        entity: &str,
        candidates: Candidates,
    ) -> Result<Option<RankedQuery>, IndexError> {
        // Every set below is hashed: the work is linear in the entity's words, however many.
        let mut words: Vec<String> = Vec::new();
        let mut known_words: HashSet<String> = HashSet::new();
        let mut tokens: Vec<Token> = Vec::new();
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(entity);
        while let Some(token) = stream.next() {
            self.count_work(1);
            if known_words.insert(token.text.clone()) {
                words.push(token.text.clone());
            }
            tokens.push(token.clone());
        }
        if words.is_empty() {
            return Ok(None);
        }
        let mut clauses: Vec<Clause> = Vec::new();
        let mut neighbours: Vec<(String, u64)> = Vec::new();
        let mut known_neighbours: HashSet<String> = HashSet::new();
        let frequent = |holding: u64| holding > LEADING_MIN_PAGES && holding * LEADING_SHARE > self.pages;
        let mut some_clause_frequent = false;
        // Each word's title words, its own and its neighbours', each with the titles holding it.
        let mut families: Vec<Vec<(String, u64)>> = Vec::new();
        for word in &words {
            let title_term = Term::from_field_text(self.schema.title, word);
            let text_term = Term::from_field_text(self.schema.text, word);
            let titles_holding = searcher.doc_freq(&title_term).map_err(search_error)?;
            clauses.push(Clause::Term(TermClause {
                term: title_term.clone(),
                boost: TITLE_BOOST,
            }));
            let pages_holding = searcher.doc_freq(&text_term).map_err(search_error)?;
            some_clause_frequent |= frequent(titles_holding) || frequent(pages_holding);
            if pages_holding <= COMMON_MIN_PAGES || pages_holding * COMMON_SHARE <= self.pages {
                clauses.push(Clause::Term(TermClause {
                    term: text_term,
                    boost: 1.0,
                }));
            }
            match self.fuzzy_titles {
                FuzzyTitles::FrequentNeighbours => {
                    let mut family = vec![(word.clone(), titles_holding)];
                    if word.chars().count() >= FUZZY_MIN_CHARS {
                        for (neighbour, holding) in self.title_neighbours(searcher, &title_term)? {
                            some_clause_frequent |= frequent(holding);
                            family.push((neighbour.clone(), holding));
                            self.count_work(1);
                            if !known_words.contains(&neighbour) && known_neighbours.insert(neighbour.clone())
                            {
                                neighbours.push((neighbour, holding));
                            }
                        }
                    }
                    families.push(family);
                }
                FuzzyTitles::UnknownWords => {
                    if titles_holding == 0 && word.chars().count() >= UNKNOWN_FUZZY_MIN_CHARS {
                        clauses.push(Clause::Fuzzy(title_term));
                    }
                }
            }
        }
        for (neighbour, _) in neighbours {
            let term = Term::from_field_text(self.schema.title, &neighbour);
            clauses.push(Clause::Term(TermClause {
                term,
                boost: FUZZY_BOOST,
            }));
        }
        if candidates == Candidates::All || !some_clause_frequent || families.is_empty() {
            let terms: Option<Vec<TermClause>> = match self.fuzzy_titles {
                FuzzyTitles::FrequentNeighbours => clauses
                    .iter()
                    .map(|clause| match clause {
                        Clause::Term(term) => Some(term.clone()),
                        Clause::Fuzzy(_) => None,
                    })
                    .collect(),
                FuzzyTitles::UnknownWords => None,
            };
            let all = clauses
                .into_iter()
                .map(|clause| (Occur::Should, clause.query()))
                .collect();
            return Ok(Some(RankedQuery::Union(BooleanQuery::new(all), terms)));
        }
        let leading_words = self.leading_words(&families);
        let one_edit = match &self.title_table {
            Some(table) if tokens.len() <= ONE_EDIT_MAX_WORDS => {
                self.one_edit_titles(searcher, table, entity, &tokens, &families, &leading_words)?
            }
            _ => Vec::new(),
        };
        let (mut leading, mut following) = (Vec::new(), Vec::new());
        for clause in clauses {
            if let Clause::Term(clause) = clause {
                self.count_work(1);
                let leads = clause.term.field() == self.schema.title
                    && clause
                        .term
                        .value()
                        .as_str()
                        .is_some_and(|word| leading_words.contains(word));
                match leads {
                    true => leading.push(clause),
                    false => following.push(clause),
                }
            }
        }
        Ok(Some(RankedQuery::Led(LedQuery {
            title: self.schema.title,
            leading,
            following,
            one_edit,
        })))
    }

    /// The title words that lead a [`LedQuery`], of `families` (by word of the query, the word
    /// first, then its neighbours, each with the titles holding it): the query's own title words,
    /// rarest first, as many as the budget allows, then their neighbours; when none fits, the
    /// rarest title word that some title holds.
    fn leading_words(&self, families: &[Vec<(String, u64)>]) -> HashSet<String> {
        let mut leading_words: HashSet<String> = HashSet::new();
        let mut total = 0;
        for neighbours in [false, true] {
            let mut pass: Vec<&(String, u64)> = families
                .iter()
                .flat_map(|family| match (neighbours, family[0].1) {
                    (false, _) => &family[..1],
                    // A word no title holds is a typo or unknown: its neighbours stand in for it.
                    (true, 0) => &family[1..],
                    (true, _) => &[],
                })
                .filter(|(_, holding)| *holding > 0)
                .collect();
            pass.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            for (word, holding) in pass {
                self.count_work(1);
                if total + holding <= self.lead_budget && !leading_words.contains(word) {
                    total += holding;
                    leading_words.insert(word.clone());
                }
            }
        }
        if leading_words.is_empty()
            && let Some((word, _)) = families
                .iter()
                .flatten()
                .filter(|(_, holding)| *holding > 0)
                .min_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)))
        {
            leading_words.insert(word.clone());
        }
        leading_words
    }

    /// The pages titled as `entity` with one of its words replaced by one of that word's title
    /// neighbours (`tokens`, the entity's; `families`: by word, the word first; a word too short for neighbours in the
    /// query gets them here) — the title a one-typo search means — that hold no word of `lead`
    /// (those are candidates already); at most [`CANDIDATES`].
    fn one_edit_titles(
        &self,
        searcher: &Searcher,
        table: &TitleTable,
        entity: &str,
        tokens: &[Token],
        families: &[Vec<(String, u64)>],
        lead: &HashSet<String>,
    ) -> Result<Vec<DocId>, IndexError> {
        let leads = |word: &str| lead.contains(word);
        let family_of: HashMap<&str, &Vec<(String, u64)>> = families
            .iter()
            .filter_map(|family| Some((family.first()?.0.as_str(), family)))
            .collect();
        // How many of the entity's words lead: another word than this one leads when more do
        // than this one's own.
        let n_leading = tokens.iter().filter(|token| leads(&token.text)).count();
        let mut found: Vec<DocId> = Vec::new();
        for token in tokens {
            self.count_work(1);
            let others_lead = n_leading > usize::from(leads(&token.text));
            let family = family_of.get(token.text.as_str()).copied();
            let (Some(family), Some(head), Some(tail), false) = (
                family,
                entity.get(..token.offset_from),
                entity.get(token.offset_to..),
                others_lead,
            ) else {
                continue;
            };
            // A word too short to bring in neighbours (`s` for `Is`) may still be the typo.
            let short = match family.len() {
                1 => {
                    self.title_neighbours(searcher, &Term::from_field_text(self.schema.title, &token.text))?
                }
                _ => Vec::new(),
            };
            let neighbours = family.iter().skip(1).chain(&short);
            for (neighbour, _) in neighbours.filter(|(neighbour, _)| !leads(neighbour)) {
                self.count_work(entity.len() as u64);
                let title = mediawiki_title(&format!("{head}{neighbour}{tail}"));
                for doc in table.titled(&folded_title(&title)).map_err(table_error)? {
                    if !found.contains(&doc) && found.len() < CANDIDATES {
                        found.push(doc);
                    }
                }
            }
        }
        Ok(found)
    }

    /// The title words one edit away from `term`'s word (itself excepted) with the number of
    /// titles holding each, the [`FUZZY_NEIGHBOURS`] held by the most titles first (ties in
    /// byte order).
    fn title_neighbours(&self, searcher: &Searcher, term: &Term) -> Result<Vec<(String, u64)>, IndexError> {
        let mut found = match &self.neighbour_table {
            Some(table) => self.neighbours_in_table(searcher, table, term)?,
            None => self.neighbours_by_automaton(searcher, term)?,
        };
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        Ok(found
            .into_iter()
            .take(FUZZY_NEIGHBOURS)
            .filter_map(|(holding, key)| Some((String::from_utf8(key).ok()?, holding)))
            .collect())
    }

    /// The title words one edit from `term`'s (itself excepted), each with the titles holding it,
    /// from the table of deletions: the words it lists under the word's keys, checked.
    fn neighbours_in_table(
        &self,
        searcher: &Searcher,
        table: &NeighbourTable,
        term: &Term,
    ) -> Result<Vec<(u64, Vec<u8>)>, IndexError> {
        let value = term.value();
        let Some(word) = value.as_str() else {
            return Ok(Vec::new());
        };
        // The table belongs to an index of one segment (checked when it opened).
        let inverted = searcher
            .segment_reader(0)
            .inverted_index(self.schema.title)
            .map_err(search_error)?;
        let dictionary = inverted.terms();
        let mut found = Vec::new();
        let mut key = Vec::new();
        for ordinal in table.candidates(word) {
            if !dictionary.ord_to_term(ordinal, &mut key).map_err(table_error)? {
                continue;
            }
            let Ok(candidate) = std::str::from_utf8(&key) else {
                continue;
            };
            if one_edit_apart(candidate, word)
                && let Some(info) = dictionary.get(&key).map_err(table_error)?
            {
                found.push((u64::from(info.doc_freq), key.clone()));
            }
        }
        Ok(found)
    }

    /// The same, from every segment's term dictionary walked with a Levenshtein automaton (an
    /// index built before the table).
    fn neighbours_by_automaton(
        &self,
        searcher: &Searcher,
        term: &Term,
    ) -> Result<Vec<(u64, Vec<u8>)>, IndexError> {
        let automaton = FuzzyTermQuery::new(term.clone(), 1, true)
            .automaton()
            .map_err(search_error)?;
        let word = term.serialized_value_bytes();
        let mut found: Vec<(u64, Vec<u8>)> = Vec::new();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(self.schema.title).map_err(search_error)?;
            let mut stream = inverted
                .terms()
                .search(&automaton)
                .into_stream()
                .map_err(|source| search_error(source.into()))?;
            while stream.advance() {
                if stream.key() != word {
                    let holding = u64::from(stream.value().doc_freq);
                    match found.iter_mut().find(|(_, key)| key == stream.key()) {
                        Some((doc_freq, _)) => *doc_freq += holding,
                        None => found.push((holding, stream.key().to_vec())),
                    }
                }
            }
        }
        Ok(found)
    }

    /// What a disambiguation page offers, in this order: the titles it links to that the index
    /// holds, the pages titled `{title} (...)`, then other titles holding every word of its
    /// title, best ranked first; without repeats or the page itself.
    pub fn disambiguation_entries(&self, page: &IndexedPage) -> Result<Vec<String>, IndexError> {
        let searcher = self.reader.searcher();
        let mut entries: Vec<String> = Vec::new();
        let offer = |title: String, entries: &mut Vec<String>| {
            if title != page.title && !entries.contains(&title) && entries.len() < DISAMBIGUATION_ENTRIES {
                entries.push(title);
            }
        };
        for link in &page.links {
            if self.title_match(&searcher, link)?.is_some() {
                offer(link.clone(), &mut entries);
            }
        }
        let base = page.title.trim_end_matches("(disambiguation)").trim();
        let prefix = format!("{} (", folded_title(base));
        let upper = format!("{} )", folded_title(base));
        if let Some(table) = &self.title_table {
            let docs = table.in_range(&prefix, &upper).map_err(table_error)?;
            for doc in docs.into_iter().take(DISAMBIGUATION_ENTRIES + 1) {
                offer(self.title(&searcher, DocAddress::new(0, doc))?, &mut entries);
            }
        } else {
            let query = RangeQuery::new(
                Bound::Included(Term::from_field_text(self.schema.title_folded, &prefix)),
                Bound::Excluded(Term::from_field_text(self.schema.title_folded, &upper)),
            );
            let found = searcher
                .search(
                    &query,
                    &TopDocs::with_limit(DISAMBIGUATION_ENTRIES + 1)
                        .order_by_u64_field("ordinal", Order::Asc),
                )
                .map_err(search_error)?;
            for (_, address) in found {
                let document: TantivyDocument = searcher.doc(address).map_err(search_error)?;
                offer(self.schema.title_of(&document), &mut entries);
            }
        }
        let base_key = title_key(base);
        let base_words: Vec<&str> = base_key.split(' ').filter(|word| !word.is_empty()).collect();
        for title in self.ranked_titles(&searcher, base, 3 * DISAMBIGUATION_ENTRIES)? {
            let key = title_key(&title);
            let words: Vec<&str> = key.split(' ').collect();
            if base_words.iter().all(|word| words.contains(word)) {
                offer(title, &mut entries);
            }
        }
        Ok(entries)
    }

    /// The title of the page at `address`: from the title column, else the stored document.
    fn title(&self, searcher: &Searcher, address: DocAddress) -> Result<String, IndexError> {
        if let Some(Some(titles)) = self.titles.get(address.segment_ord as usize)
            && let Some(ord) = titles.ords().first(address.doc_id)
        {
            let mut title = String::new();
            titles
                .ord_to_str(ord, &mut title)
                .map_err(|source| search_error(source.into()))?;
            return Ok(title);
        }
        let document: TantivyDocument = searcher.doc(address).map_err(search_error)?;
        Ok(self.schema.title_of(&document))
    }

    fn page(&self, searcher: &Searcher, address: DocAddress) -> Result<IndexedPage, IndexError> {
        let document: TantivyDocument = searcher.doc(address).map_err(search_error)?;
        Ok(self.schema.page(&document))
    }
}

fn search_error(source: tantivy::TantivyError) -> IndexError {
    IndexError::Search { source }
}

fn table_error(source: std::io::Error) -> IndexError {
    search_error(source.into())
}

mod led;
mod retrieval;
use led::{LedQuery, TermClause};
pub use retrieval::RankedPage;

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::base::rng::SplitMix64;
    use crate::docstore::index::{BuildConfig, build};

    /// Every single-character edit of `word` over its own letters and a few others: each deletion,
    /// insertion, substitution and adjacent transposition.
    fn one_edit_variants(word: &str) -> Vec<String> {
        let chars: Vec<char> = word.chars().collect();
        let mut alphabet: Vec<char> = "aeinorst1é".chars().chain(chars.iter().copied()).collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        let mut variants = Vec::new();
        for at in 0..=chars.len() {
            let (head, tail) = chars.split_at(at);
            for &letter in &alphabet {
                variants.push(head.iter().chain([&letter]).chain(tail).collect());
                if let [_, rest @ ..] = tail {
                    variants.push(head.iter().chain([&letter]).chain(rest).collect());
                }
            }
            if let [_, rest @ ..] = tail {
                variants.push(head.iter().chain(rest).collect());
            }
            if let [a, b, rest @ ..] = tail {
                variants.push(head.iter().chain([b, a]).chain(rest).collect());
            }
        }
        variants
    }

    /// Words for the pages of [`frequent_words_index`]: a few that most titles hold, the rest
    /// rare.
    const COMMON_WORDS: [&str; 6] = ["the", "of", "in", "river", "county", "is"];

    fn rare_word(rng: &mut SplitMix64) -> String {
        const SYLLABLES: [&str; 16] = [
            "ka", "lo", "mi", "dra", "vel", "sor", "tun", "bri", "qua", "zen", "fo", "gri", "hal", "ne",
            "pu", "rys",
        ];
        (0..2 + rng.below(2))
            .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
            .collect()
    }

    /// An index of 3,000 generated pages, half of whose titles start with `The` (so that `the` is
    /// frequent and the Similar list searches through the rarest title words), with
    /// `extra` titles added at the end; built as `index build` builds a dump.
    fn frequent_words_index(extra: &[&str]) -> (tempfile::TempDir, PageIndex) {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = SplitMix64(7);
        let mut titles: Vec<String> = Vec::new();
        while titles.len() < 3_000 {
            let words = 1 + rng.below(3);
            let mut title: Vec<String> = (0..words)
                .map(|_| match rng.chance(0.3) {
                    true => COMMON_WORDS[rng.below(COMMON_WORDS.len())].to_owned(),
                    false => rare_word(&mut rng),
                })
                .collect();
            if rng.chance(0.5) {
                title.insert(0, "the".to_owned());
            }
            let mut title = title.join(" ");
            title[..1].make_ascii_uppercase();
            if !titles.contains(&title) {
                titles.push(title);
            }
        }
        titles.extend(extra.iter().map(|title| title.to_string()));
        let dump = dir.path().join("pages.jsonl");
        let mut lines = String::new();
        for title in &titles {
            let text: Vec<String> = (0..8).map(|_| rare_word(&mut rng)).collect();
            let page = serde_json::json!({"title": title, "text": format!("{title} is {}.", text.join(" "))});
            lines.push_str(&format!("{page}\n"));
        }
        std::fs::write(&dump, lines).unwrap();
        let out = dir.path().join("index");
        build(
            &BuildConfig::new(vec![dump], out.clone()),
            &AtomicBool::new(false),
        )
        .unwrap();
        let (index, _) = PageIndex::open(&out).unwrap();
        (dir, index)
    }

    /// The searcher's own answer to a led query: a required union of the leading clauses and an
    /// optional union of the others, ranked by tantivy's `TopDocs`, its pages' scores then the
    /// one rule's, to the bit.
    fn tantivy_top(searcher: &Searcher, query: &LedQuery, limit: usize) -> Vec<(f32, DocAddress)> {
        let union = |clauses: &[TermClause]| -> Vec<(Occur, Box<dyn Query>)> {
            clauses
                .iter()
                .map(|clause| (Occur::Should, Clause::Term(clause.clone()).query()))
                .collect()
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, Box::new(BooleanQuery::new(union(&query.leading))))];
        clauses.extend(union(&query.following));
        // Its pages scored by the one rule (tantivy's own sums differ in the last bit).
        let found = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(2 * limit).order_by_score(),
            )
            .unwrap();
        let pages: Vec<DocAddress> = found.iter().map(|(_, address)| *address).collect();
        let terms: Vec<TermClause> = query.leading.iter().chain(&query.following).cloned().collect();
        let scores = led::exact_scores(searcher, &terms, &pages).unwrap();
        let mut ranked: Vec<(f32, DocAddress)> = scores.into_iter().zip(pages).collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked.truncate(limit);
        ranked
    }

    /// The led search reads the long postings only where a candidate could still reach the best,
    /// and still ranks the candidates exactly as tantivy's union does — the same pages, the same
    /// scores, ties to the page earlier in the index — for every query that leads, at every size
    /// of list, whether or not the title bound or the floor cut a candidate short.
    #[test]
    fn the_led_search_ranks_its_candidates_as_tantivy_does() {
        let (_dir, mut index) = frequent_words_index(&[]);
        let searcher = index.reader.searcher();
        let mut rng = SplitMix64(11);
        let mut compared = 0;
        for budget in [0, 40, 400, LEAD_BUDGET] {
            index.lead_budget = budget;
            for _ in 0..150 {
                let words = 1 + rng.below(4);
                let entity: Vec<String> = (0..words)
                    .map(|_| match rng.chance(0.5) {
                        true => COMMON_WORDS[rng.below(COMMON_WORDS.len())].to_owned(),
                        false => rare_word(&mut rng),
                    })
                    .collect();
                let Some(RankedQuery::Led(mut query)) = index
                    .ranked_query(&searcher, &entity.join(" "), Candidates::Led)
                    .unwrap()
                else {
                    continue;
                };
                // tantivy's union has no pages named for the purpose.
                query.one_edit.clear();
                for limit in [1, 3, CANDIDATES] {
                    let led = query.top(&searcher, limit).unwrap();
                    assert_eq!(led, tantivy_top(&searcher, &query, limit), "{entity:?}, {limit}");
                    compared += usize::from(led.len() == limit);
                }
            }
        }
        assert!(compared > 200, "{compared} full lists compared");
    }

    /// A search's work is linear in the entity's length, however many of its words are typos of
    /// title words (issue 45: a 62 KB entity took 103 s, its words' neighbours each building a
    /// title of the whole entity, and each word compared with every other): 8 times the words, at
    /// most 16 times the work (quadratic work is 64 times).
    #[test]
    fn a_search_works_linearly_in_the_entity_length() {
        let (_dir, mut index) = frequent_words_index(&[]);
        // Only the rarest word leads: every other word's neighbours are tried as the typo.
        index.lead_budget = 0;
        let searcher = index.reader.searcher();
        let inverted = searcher
            .segment_reader(0)
            .inverted_index(index.schema.title)
            .unwrap();
        let mut stream = inverted.terms().stream().unwrap();
        let mut title_words = Vec::new();
        while stream.advance() {
            let word = String::from_utf8(stream.key().to_vec()).unwrap();
            if word.len() >= 5 {
                title_words.push(word);
            }
        }
        let mut rng = SplitMix64(5);
        // Typos of title words (a letter dropped), none of them a title word itself.
        let typos: Vec<String> = (0..800)
            .map(|_| {
                let word = &title_words[rng.below(title_words.len())];
                let at = 1 + rng.below(word.len() - 2);
                format!("{}{}", &word[..at], &word[at + 1..])
            })
            .collect();
        let work = |n_words: usize| {
            index.work.store(0, std::sync::atomic::Ordering::Relaxed);
            // `the`, a frequent title word, makes the search a led one.
            index
                .search(&format!("the {}", typos[..n_words].join(" ")))
                .unwrap();
            index.work.load(std::sync::atomic::Ordering::Relaxed)
        };
        let (short, long) = (work(100), work(800));
        assert!(short >= 100, "{short}");
        assert!(
            long <= 16 * short,
            "100 words: {short} units of work, 800 words: {long}"
        );
    }

    /// One ranking rule, whichever way a query is searched (docs/docstore.md): a page's score is
    /// the exact sum of its clauses' scores, ties to the page earlier in the index. Titles that
    /// are permutations of the same words tie exactly, so the led search and the plain union give
    /// every page they both rank the same score, to the bit, and tied pages in the same order
    /// (issue 45: 1,242 of 11,402 scores differed in the last bit, as each summed in its own
    /// order, and such titles came back in another order depending on the path).
    #[test]
    fn the_led_search_and_the_union_rank_by_one_rule() {
        let words = ["Kalodra", "Velsor", "Tunbri", "Quazen", "River"];
        let mut permutations: Vec<String> = Vec::new();
        for a in 0..words.len() {
            for b in 0..words.len() {
                for c in 0..words.len() {
                    if a != b && b != c && a != c {
                        permutations.push(format!("{} {} {}", words[a], words[b], words[c]));
                    }
                }
            }
        }
        let extra: Vec<&str> = permutations.iter().map(String::as_str).collect();
        let (_dir, index) = frequent_words_index(&extra);
        let searcher = index.reader.searcher();
        let mut compared = 0;
        for entity in [
            "The Kalodra Velsor River",
            "the Velsor Quazen river",
            "Tunbri Kalodra the river of",
            "Quazen Tunbri Velsor the",
            "the Kalodra Velsor Tunbri Quazen River",
        ] {
            let Some(RankedQuery::Led(mut led)) =
                index.ranked_query(&searcher, entity, Candidates::Led).unwrap()
            else {
                panic!("{entity:?} leads: `the` is frequent");
            };
            led.one_edit.clear();
            let union = index
                .ranked_query(&searcher, entity, Candidates::All)
                .unwrap()
                .unwrap();
            let led = led.top(&searcher, CANDIDATES).unwrap();
            let union = union.top(&searcher, CANDIDATES).unwrap();
            let in_union: Vec<&(f32, DocAddress)> = union
                .iter()
                .filter(|(_, address)| led.iter().any(|(_, known)| known == address))
                .collect();
            let in_led: Vec<&(f32, DocAddress)> = led
                .iter()
                .filter(|(_, address)| union.iter().any(|(_, known)| known == address))
                .collect();
            let bits = |list: &[&(f32, DocAddress)]| -> Vec<(u32, DocAddress)> {
                list.iter()
                    .map(|(score, address)| (score.to_bits(), *address))
                    .collect()
            };
            assert_eq!(bits(&in_led), bits(&in_union), "{entity:?}");
            compared += in_led.len();
        }
        assert!(compared >= 50, "{compared} pages compared");
    }

    /// A one-typo search finds the title it means though none of that title's words leads: the
    /// title one edit from the entity is a candidate whatever the budget lets lead.
    #[test]
    fn the_title_one_edit_away_is_a_candidate_whatever_leads() {
        let (_dir, mut index) = frequent_words_index(&["Kaplonds", "Kaplound Of The"]);
        // Only the rarest title word leads: `kaplonds` (as rare as `kaplound`, and first).
        index.lead_budget = 0;
        let SearchHit::Similar(titles) = index.search("Kaplond Of The").unwrap() else {
            panic!("no page is titled so");
        };
        assert!(titles.contains(&"Kaplound Of The".to_owned()), "{titles:?}");
    }

    /// The table of deletions gives every search the neighbours the automaton gives it — the same
    /// words, as many titles each, in the same order — for every title word of real titles and
    /// every word one edit from one (the typos a model makes), so an index with the table answers
    /// every search as one built before it.
    #[test]
    fn the_table_finds_the_neighbours_the_automaton_finds() {
        let dir = tempfile::tempdir().unwrap();
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/index/v2/hotpotqa-titles.jsonl");
        let out = dir.path().join("index");
        build(
            &BuildConfig::new(vec![fixture], out.clone()),
            &AtomicBool::new(false),
        )
        .unwrap();
        let (mut index, manifest) = PageIndex::open(&out).unwrap();
        assert_eq!(manifest.neighbour_table.as_deref(), Some(NEIGHBOUR_TABLE_FORMAT));
        let searcher = index.reader.searcher();
        let inverted = searcher
            .segment_reader(0)
            .inverted_index(index.schema.title)
            .unwrap();
        let mut stream = inverted.terms().stream().unwrap();
        let mut words = Vec::new();
        while stream.advance() {
            words.push(String::from_utf8(stream.key().to_vec()).unwrap());
        }
        assert!(words.len() > 100, "{}", words.len());
        let mut queries: Vec<String> = words.iter().flat_map(|word| one_edit_variants(word)).collect();
        queries.extend(words.iter().cloned());
        queries.sort();
        queries.dedup();
        let neighbours = |index: &PageIndex, queries: &[String]| -> Vec<Vec<(String, u64)>> {
            queries
                .iter()
                .map(|query| {
                    let term = Term::from_field_text(index.schema.title, query);
                    index.title_neighbours(&searcher, &term).unwrap()
                })
                .collect()
        };
        let by_table = neighbours(&index, &queries);
        assert!(index.neighbour_table.take().is_some());
        let by_automaton = neighbours(&index, &queries);
        let found: usize = by_automaton.iter().map(Vec::len).sum();
        assert!(
            found > queries.len(),
            "{found} neighbours for {} queries",
            queries.len()
        );
        for ((query, table), automaton) in queries.iter().zip(&by_table).zip(&by_automaton) {
            assert_eq!(table, automaton, "{query:?}");
        }
    }
}
