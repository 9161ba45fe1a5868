//! `ContextIndex`: the search of [`PageIndex`](crate::docstore::index::PageIndex) over a handful of pages (a question's ten context
//! paragraphs), computed directly from the pages instead of through a tantivy index, so that a
//! question's docstore opens in microseconds rather than the milliseconds a tantivy segment takes.
//!
//! It is `PageIndex`'s search over an in-memory index (`TitleMatch::Loose`), step for step: the same
//! title match (normalised, then folded, then without punctuation), the same ranked search (tantivy's
//! own BM25 weights — `Bm25Weight`, the encoded field norms — over titles ×3 and text, summed in
//! the clause order tantivy sums them, a constant 2 for a title word one edit from an unknown word,
//! the 20 best by score then page order, re-ranked by title similarity; with 20 pages or fewer, the
//! pages no word matched too, by title similarity alone when it is high) and the same disambiguation
//! entries. The differential property test in `tests.rs` holds the two equal, observation for
//! observation.

use std::collections::HashMap;
use std::convert::Infallible;

use futures::future::BoxFuture;
use tantivy::Score;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::Bm25Weight;
use tantivy::tokenizer::{MAX_TOKEN_LEN, TextAnalyzer};

use crate::base::profile::Profile;
use crate::docstore::index::IndexedPage;
use crate::docstore::index::analyzer;
use crate::docstore::index::title::{
    folded_title, is_possible_title, mediawiki_title, title_key, title_similarity,
};
use crate::docstore::page::{DISAMBIGUATION_ENTRIES, Reader, SIMILAR_TITLES, SearchOutcome, SearchStep};
use crate::docstore::{Docstore, DocstoreError};

// The ranking's constants, as `index/search.rs` has them (the differential test fails if the two
// part).
/// How many ranked candidates are re-ranked by title similarity.
const CANDIDATES: usize = 20;
/// A title word counts this much more than a word of the text.
const TITLE_BOOST: Score = 3.0;
/// The score a title word one edit away from an unknown query word adds.
const FUZZY_BOOST: Score = 2.0;
/// Words shorter than this are never matched fuzzily.
const FUZZY_MIN_CHARS: usize = 4;
/// How alike a title no word matched must be to join the Similar list of a few pages.
const UNSCORED_MIN_SIMILARITY: f64 = 0.3;

/// One tokenized field of every page: each word's pages with its count there, each page's
/// encoded length, the words in all.
#[derive(Debug, Default)]
struct Field {
    postings: HashMap<String, Vec<(usize, u32)>>,
    fieldnorm_ids: Vec<u8>,
    total_tokens: u64,
}

impl Field {
    /// Adds the next page's values (tantivy's `wiki` analyzer, one value at a time).
    fn add_page<'a>(&mut self, analyzer: &mut TextAnalyzer, values: impl IntoIterator<Item = &'a str>) {
        let page_idx = self.fieldnorm_ids.len();
        let mut tokens: u32 = 0;
        for value in values {
            let mut stream = analyzer.token_stream(value);
            while let Some(token) = stream.next() {
                if token.text.len() > MAX_TOKEN_LEN {
                    continue;
                }
                tokens += 1;
                match self.postings.get_mut(&token.text) {
                    Some(pages) => match pages.last_mut() {
                        Some((last, count)) if *last == page_idx => *count += 1,
                        _ => pages.push((page_idx, 1)),
                    },
                    None => {
                        self.postings.insert(token.text.clone(), vec![(page_idx, 1)]);
                    }
                }
            }
        }
        self.total_tokens += u64::from(tokens);
        self.fieldnorm_ids.push(FieldNormReader::fieldnorm_to_id(tokens));
    }

    fn doc_freq(&self, word: &str) -> usize {
        self.postings.get(word).map_or(0, Vec::len)
    }

    /// Adds each matching page's BM25 score for `word`, boosted, to `scores`.
    fn score(&self, word: &str, boost: Score, n_pages: usize, scores: &mut [Option<Score>]) {
        let Some(pages) = self.postings.get(word) else {
            return;
        };
        let average_fieldnorm = self.total_tokens as Score / n_pages as Score;
        let weight =
            Bm25Weight::for_one_term(pages.len() as u64, n_pages as u64, average_fieldnorm).boost_by(boost);
        for &(page_idx, count) in pages {
            let score = weight.score(self.fieldnorm_ids[page_idx], count);
            add(&mut scores[page_idx], score);
        }
    }
}

/// The separators of an index's stored body (the text never holds them: pages are sanitized).
const PARAGRAPH_SEPARATOR: &str = "\u{1e}";
const SENTENCE_SEPARATOR: &str = "\u{1f}";

/// A stored field's parts: none when it is empty.
fn split_stored<'a>(stored: &'a str, separator: &str) -> Vec<&'a str> {
    if stored.is_empty() {
        Vec::new()
    } else {
        stored.split(separator).collect()
    }
}

/// Sums as tantivy's union does: from zero, clause by clause.
fn add(total: &mut Option<Score>, score: Score) {
    *total = Some(total.unwrap_or(0.0) + score);
}

/// Whether `a` and `b` are at most one edit apart (insertion, deletion, substitution or the
/// transposition of two neighbours), counted in characters: tantivy's fuzzy term of distance 1.
fn within_one_edit(a: &[char], b: &[char]) -> bool {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a_rest, b_rest) = (&a[prefix..], &b[prefix..]);
    match (a_rest.len(), b_rest.len()) {
        (0, 0) => true,
        (n, m) if n == m => {
            a_rest[1..] == b_rest[1..]
                || (n >= 2 && a_rest[0] == b_rest[1] && a_rest[1] == b_rest[0] && a_rest[2..] == b_rest[2..])
        }
        (n, m) if n == m + 1 => a_rest[1..] == *b_rest,
        (n, m) if m == n + 1 => *a_rest == b_rest[1..],
        _ => false,
    }
}

/// A few pages searched as an in-memory [`PageIndex`](crate::docstore::index::PageIndex) searches them.
#[derive(Debug)]
pub struct ContextIndex {
    pages: Vec<IndexedPage>,
    /// Per page: its MediaWiki title, folded title and title key (what the title match compares).
    exact: Vec<String>,
    folded: Vec<String>,
    keys: Vec<String>,
    title: Field,
    text: Field,
    /// The title words with their characters, for the fuzzy match.
    title_words: Vec<(String, Vec<char>)>,
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextHit {
    /// The page whose title the entity names (as the index stores it).
    Page(IndexedPage),
    /// The most similar titles, best first.
    Similar(Vec<String>),
}

impl ContextIndex {
    pub fn new(pages: Vec<IndexedPage>) -> ContextIndex {
        let mut analyzer = analyzer();
        let mut title = Field::default();
        let mut text = Field::default();
        for page in &pages {
            title.add_page(&mut analyzer, [page.title.as_str()]);
            text.add_page(
                &mut analyzer,
                page.paragraphs.iter().flatten().map(String::as_str),
            );
        }
        let mut title_words: Vec<(String, Vec<char>)> = title
            .postings
            .keys()
            .map(|word| (word.clone(), word.chars().collect()))
            .collect();
        title_words.sort();
        ContextIndex {
            exact: pages.iter().map(|page| mediawiki_title(&page.title)).collect(),
            folded: pages.iter().map(|page| folded_title(&page.title)).collect(),
            keys: pages.iter().map(|page| title_key(&page.title)).collect(),
            pages,
            title,
            text,
            title_words,
        }
    }

    /// `Search[entity]`: the page titled `entity`, else the titles most like it.
    pub fn search(&self, entity: &str) -> ContextHit {
        match self.title_match(entity) {
            Some(page_idx) => ContextHit::Page(self.stored(page_idx)),
            None => ContextHit::Similar(self.ranked_titles(entity, SIMILAR_TITLES)),
        }
    }

    /// The first page titled `entity`: normalised, then ignoring case, then punctuation. A title
    /// longer than tantivy's longest term is not indexed, so never matched.
    fn title_match(&self, entity: &str) -> Option<usize> {
        if !is_possible_title(entity) {
            return None;
        }
        let exact = mediawiki_title(entity);
        let folded = folded_title(&exact);
        let key = title_key(&exact);
        [(&self.exact, &exact), (&self.folded, &folded), (&self.keys, &key)]
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .find_map(|(titles, value)| {
                titles
                    .iter()
                    .position(|title| title == value && title.len() <= MAX_TOKEN_LEN)
            })
    }

    /// The page as an index gives it back, through its stored form: an empty paragraph list
    /// reads as none, and only a disambiguation page keeps its links.
    fn stored(&self, page_idx: usize) -> IndexedPage {
        let page = &self.pages[page_idx];
        let body: Vec<String> = page
            .paragraphs
            .iter()
            .map(|sentences| sentences.join(SENTENCE_SEPARATOR))
            .collect();
        let links = if page.is_disambiguation() {
            page.links.join(SENTENCE_SEPARATOR)
        } else {
            String::new()
        };
        IndexedPage {
            title: page.title.clone(),
            paragraphs: split_stored(&body.join(PARAGRAPH_SEPARATOR), PARAGRAPH_SEPARATOR)
                .into_iter()
                .map(|paragraph| paragraph.split(SENTENCE_SEPARATOR).map(str::to_owned).collect())
                .collect(),
            sentences: page.sentences,
            links: split_stored(&links, SENTENCE_SEPARATOR)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        }
    }

    /// The `limit` best titles for `entity`, without repeats.
    fn ranked_titles(&self, entity: &str, limit: usize) -> Vec<String> {
        let mut words: Vec<String> = Vec::new();
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(entity);
        while let Some(token) = stream.next() {
            if !words.contains(&token.text) {
                words.push(token.text.clone());
            }
        }
        let n_pages = self.pages.len();
        if words.is_empty() || n_pages == 0 {
            return Vec::new();
        }
        let mut scores: Vec<Option<Score>> = vec![None; n_pages];
        for word in &words {
            self.title.score(word, TITLE_BOOST, n_pages, &mut scores);
            self.text.score(word, 1.0, n_pages, &mut scores);
            let chars: Vec<char> = word.chars().collect();
            if self.title.doc_freq(word) == 0 && chars.len() >= FUZZY_MIN_CHARS {
                let mut matched = vec![false; n_pages];
                for (title_word, title_chars) in &self.title_words {
                    if within_one_edit(&chars, title_chars) {
                        for &(page_idx, _) in &self.title.postings[title_word] {
                            matched[page_idx] = true;
                        }
                    }
                }
                for (page_idx, matched) in matched.into_iter().enumerate() {
                    if matched {
                        add(&mut scores[page_idx], FUZZY_BOOST);
                    }
                }
            }
        }
        // The best candidates by score, ties to the earlier page.
        let mut candidates: Vec<(Score, usize)> = scores
            .iter()
            .enumerate()
            .filter_map(|(page_idx, score)| score.map(|score| (score, page_idx)))
            .collect();
        candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        candidates.truncate(CANDIDATES);
        let best = candidates
            .first()
            .map_or(0.0, |&(best, _)| best)
            .max(f32::MIN_POSITIVE);
        let key = title_key(entity);
        let mut ranked: Vec<(f64, usize, &str)> = candidates
            .iter()
            .map(|&(score, page_idx)| {
                let title = self.pages[page_idx].title.as_str();
                let rank = f64::from(score / best) + title_similarity(&key, &title_key(title));
                (rank, page_idx, title)
            })
            .collect();
        // A docstore of a few pages offers every title like the entity, matched by a word or not
        // (a glued or short word matches none), as `PageIndex::add_unscored_pages` does.
        if n_pages <= CANDIDATES {
            for (page_idx, score) in scores.iter().enumerate() {
                let title = self.pages[page_idx].title.as_str();
                let similarity = title_similarity(&key, &title_key(title));
                if score.is_none() && similarity > UNSCORED_MIN_SIMILARITY {
                    ranked.push((similarity, page_idx, title));
                }
            }
        }
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut titles: Vec<String> = Vec::new();
        for (_, _, title) in ranked {
            if !titles.iter().any(|seen| seen == title) {
                titles.push(title.to_owned());
            }
            if titles.len() == limit {
                break;
            }
        }
        titles
    }

    /// What a disambiguation page offers, as `PageIndex::disambiguation_entries` orders it: the
    /// titles it links to that are here, the pages titled `{title} (...)`, then other titles
    /// holding every word of its title; without repeats or the page itself.
    pub fn disambiguation_entries(&self, page: &IndexedPage) -> Vec<String> {
        let mut entries: Vec<String> = Vec::new();
        let offer = |title: &str, entries: &mut Vec<String>| {
            if title != page.title
                && !entries.iter().any(|entry| entry == title)
                && entries.len() < DISAMBIGUATION_ENTRIES
            {
                entries.push(title.to_owned());
            }
        };
        for link in &page.links {
            if self.title_match(link).is_some() {
                offer(link, &mut entries);
            }
        }
        let base = page.title.trim_end_matches("(disambiguation)").trim();
        let prefix = format!("{} (", folded_title(base));
        let upper = format!("{} )", folded_title(base));
        let within = self
            .folded
            .iter()
            .enumerate()
            .filter(|(_, folded)| {
                folded.len() <= MAX_TOKEN_LEN
                    && folded.as_bytes() >= prefix.as_bytes()
                    && folded.as_bytes() < upper.as_bytes()
            })
            .take(DISAMBIGUATION_ENTRIES + 1);
        for (page_idx, _) in within {
            offer(&self.pages[page_idx].title, &mut entries);
        }
        let base_key = title_key(base);
        let base_words: Vec<&str> = base_key.split(' ').filter(|word| !word.is_empty()).collect();
        for title in self.ranked_titles(base, 3 * DISAMBIGUATION_ENTRIES) {
            let key = title_key(&title);
            let words: Vec<&str> = key.split(' ').collect();
            if base_words.iter().all(|word| words.contains(word)) {
                offer(&title, &mut entries);
            }
        }
        entries
    }
}

/// One question's explorer over its [`ContextIndex`]: the open page and the Lookup cursor, as
/// `IndexExplorer` keeps them over an index.
pub struct ContextExplorer {
    index: ContextIndex,
    reader: Reader,
}

impl ContextExplorer {
    pub fn new(index: ContextIndex, profile: Profile) -> ContextExplorer {
        ContextExplorer {
            index,
            reader: Reader::new(profile),
        }
    }

    /// `Search[entity]`, synchronously; it cannot fail (a `Result` as `IndexExplorer::search_now`
    /// gives one).
    pub fn search_now(&mut self, entity: &str) -> Result<String, Infallible> {
        let mut query = entity.to_owned();
        for depth in 0.. {
            let outcome = self.outcome(&query);
            match self.reader.show(&query, outcome, depth) {
                SearchStep::Shown(observation) => return Ok(observation),
                SearchStep::SearchAgain(again) => query = again,
            }
        }
        // invariant: `Reader::show` asks for another search only at depth 0
        unreachable!("an unbounded range ends only by returning")
    }

    /// What a search found, as `IndexExplorer` reports it: a page that says `may refer to:` is a
    /// disambiguation page for the paper, a page that is one by its first paragraph or title offers
    /// its entries in the `default` profile.
    fn outcome(&self, query: &str) -> SearchOutcome {
        match self.index.search(query) {
            ContextHit::Page(page) => match self.reader.profile() {
                Profile::Paper if page.says_may_refer_to() => SearchOutcome::Disambiguation {
                    entries: Vec::new(),
                    page: page.to_page(),
                },
                Profile::Default if page.is_disambiguation() => SearchOutcome::Disambiguation {
                    entries: self.index.disambiguation_entries(&page),
                    page: page.to_page(),
                },
                _ => SearchOutcome::Article(page.to_page()),
            },
            ContextHit::Similar(titles) => SearchOutcome::Results(titles),
        }
    }
}

impl Docstore for ContextExplorer {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(async move {
            let Ok(observation) = self.search_now(entity);
            Ok(observation)
        })
    }

    fn lookup(&mut self, keyword: &str) -> String {
        self.reader.lookup(keyword)
    }
}

#[cfg(test)]
mod tests;
