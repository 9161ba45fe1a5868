//! The Similar list's search when some clause is frequent ([`super::Candidates::Led`]): the pages
//! the leading clauses hold, and the pages named for the purpose ([`LedQuery::one_edit`]), are
//! the candidates; every other clause is read only at a candidate that could still reach the
//! best — one seek into its postings, heaviest first — and not at all once it cannot.
//!
//! A candidate's bound is what it holds so far plus what the clauses not yet read could add: a
//! title clause holds a word of the title, so a title of three words, one held by a leading
//! clause, can add at most the two heaviest title clauses' scores at that length; a clause of
//! the text at most its best score. A candidate is dropped once its bound is below the floor:
//! the twentieth best whole score of the eighty candidates best on their leading clauses, then
//! the worst of the best twenty found.
//!
//! tantivy answers the same query (a required union of the leading clauses, an optional union of
//! the others) by refilling the optional union window by window: every posting of every long list
//! in a window of 4,096 documents is decoded wherever one candidate falls, which made the tail of
//! one-typo searches at Wikipedia's scale. Here each page's score follows the search's one ranking
//! rule (docs/docstore.md): the same BM25 weights as tantivy's, each clause's score an `f32` as
//! tantivy computes it, the page's score their exact sum (added in `f64`, where a few dozen `f32`
//! scores of BM25's range add without rounding, then rounded once to `f32`: the same whatever
//! order they are added in), and ties go to the page earlier in the index. The plain union's
//! candidates are scored again by the same rule ([`exact_scores`]), as tantivy's block-max WAND
//! adds a page's scores in an order that depends on the postings around it.

use std::sync::Arc;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings, TermInfo};
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{
    DocAddress, DocId, DocSet, InvertedIndexReader, Score, Searcher, SegmentReader, TERMINATED, Term,
};

/// A term query and how much it counts (tantivy's `BoostQuery` over a `TermQuery`).
#[derive(Debug, Clone)]
pub(super) struct TermClause {
    pub term: Term,
    pub boost: Score,
}

/// A query whose leading clauses bring every candidate and whose following clauses only add to
/// a candidate's score.
pub(super) struct LedQuery {
    /// The title field: every leading clause searches it.
    pub title: Field,
    pub leading: Vec<TermClause>,
    pub following: Vec<TermClause>,
    /// Pages of the first segment that are candidates whatever they hold (the titles one edit
    /// from the entity).
    pub one_edit: Vec<DocId>,
}

/// A title of this many words or more is not bounded by its length (tantivy keeps lengths
/// exactly only below it).
const LONG_TITLE: u32 = 40;

/// How many candidates, for each page asked for, [`LedQuery::probe`] scores whole.
const PROBED: usize = 4;

/// A following clause in one segment: its place in the query, its postings, its best score.
struct Following {
    index: usize,
    cursor: Cursor,
    max: f64,
}

/// A page some leading clause holds (or a page of [`LedQuery::one_edit`]).
struct Candidate {
    doc: DocId,
    /// The leading clauses' score: their exact sum ([`exact_sum`]'s rule).
    lead: f64,
    /// How many words of its title the leading clauses hold.
    words: u32,
}

/// Where one clause's postings are in one segment, and what scores them.
#[derive(Clone)]
struct Source {
    inverted: Arc<InvertedIndexReader>,
    info: TermInfo,
    fieldnorms: FieldNormReader,
    weight: Bm25Weight,
}

impl Source {
    /// Each clause's source in each segment (`None` where the segment lacks its term), its term
    /// looked up once; weighted as tantivy's `TermQuery` weighs it in `searcher`.
    fn look_up(searcher: &Searcher, clauses: &[TermClause]) -> tantivy::Result<Vec<Vec<Option<Source>>>> {
        let total_docs = searcher.total_num_docs()?;
        let mut average_lengths: Vec<(Field, Score)> = Vec::new();
        let segments = searcher.segment_readers();
        let mut sources: Vec<Vec<Option<Source>>> = vec![Vec::with_capacity(clauses.len()); segments.len()];
        for clause in clauses {
            let field = clause.term.field();
            let average_length = match average_lengths.iter().find(|(known, _)| *known == field) {
                Some((_, average)) => *average,
                None => {
                    let average = searcher.total_num_tokens(field)? as Score / total_docs as Score;
                    average_lengths.push((field, average));
                    average
                }
            };
            let mut found = Vec::with_capacity(segments.len());
            let mut doc_freq = 0;
            for segment in segments {
                let inverted = segment.inverted_index(field)?;
                let info = inverted.get_term_info(&clause.term)?;
                doc_freq += info.as_ref().map_or(0, |info| u64::from(info.doc_freq));
                found.push((inverted, info));
            }
            let weight =
                Bm25Weight::for_one_term(doc_freq, total_docs, average_length).boost_by(clause.boost);
            for ((segment, (inverted, info)), sources) in segments.iter().zip(found).zip(&mut sources) {
                let source = match info {
                    Some(info) => Some(Source {
                        inverted,
                        info,
                        fieldnorms: match segment.fieldnorms_readers().get_field(field)? {
                            Some(fieldnorms) => fieldnorms,
                            None => FieldNormReader::constant(segment.max_doc(), 1),
                        },
                        weight: weight.clone(),
                    }),
                    None => None,
                };
                sources.push(source);
            }
        }
        Ok(sources)
    }

    fn cursor(&self) -> tantivy::Result<Cursor> {
        Ok(Cursor {
            postings: self
                .inverted
                .read_postings_from_terminfo(&self.info, IndexRecordOption::WithFreqs)?,
            fieldnorms: self.fieldnorms.clone(),
            weight: self.weight.clone(),
        })
    }
}

/// One clause's postings in one segment, scored as tantivy's `TermScorer` scores them.
struct Cursor {
    postings: SegmentPostings,
    fieldnorms: FieldNormReader,
    weight: Bm25Weight,
}

impl Cursor {
    fn doc(&self) -> DocId {
        self.postings.doc()
    }

    fn score(&self) -> Score {
        let doc = self.postings.doc();
        self.weight
            .score(self.fieldnorms.fieldnorm_id(doc), self.postings.term_freq())
    }

    /// The clause's score at `doc` and how often its term is there, when `doc` holds it; moves
    /// the cursor on to `doc` (the pages it is asked about come in index order).
    fn at(&mut self, doc: DocId) -> Option<(Score, u32)> {
        if self.doc() < doc {
            self.postings.seek(doc);
        }
        (self.doc() == doc).then(|| (self.score(), self.postings.term_freq()))
    }
}

/// The best pages so far: at most `limit`, each entering only above the worst kept (pages come
/// in index order, so a tie stays with the page earlier in the index).
struct Best {
    limit: usize,
    kept: Vec<(Score, DocAddress)>,
    /// The score a page must exceed to enter, once `limit` pages are kept.
    threshold: Option<Score>,
}

impl Best {
    fn new(limit: usize) -> Best {
        Best {
            limit,
            kept: Vec::with_capacity(limit),
            threshold: None,
        }
    }

    fn offer(&mut self, score: Score, address: DocAddress) {
        if self.kept.len() < self.limit {
            self.kept.push((score, address));
        } else if self.threshold.is_some_and(|threshold| score > threshold) {
            // The worst kept: the lowest score, of the two tied the page later in the index.
            let worst = (0..self.kept.len()).min_by(|&a, &b| {
                let (a, b) = (self.kept[a], self.kept[b]);
                a.0.total_cmp(&b.0).then(b.1.cmp(&a.1))
            });
            if let Some(worst) = worst {
                self.kept[worst] = (score, address);
            }
        }
        if self.kept.len() == self.limit {
            self.threshold = self.kept.iter().map(|kept| kept.0).min_by(Score::total_cmp);
        }
    }
}

/// Whether a page whose score is at most `bound` can no longer be among the best: below the
/// `floor` that `limit` candidates reach on their leading clauses alone, or not above the worst
/// page kept. The bound is widened by a rounding's worth, as the scores add in another order.
fn hopeless(bound: f64, floor: f64, best: &Best) -> bool {
    let bound = bound + bound.abs() * 1e-6 + 1e-6;
    bound < floor
        || best
            .threshold
            .is_some_and(|threshold| bound <= f64::from(threshold))
}

impl LedQuery {
    /// The `limit` best pages, best first, ties to the page earlier in the index.
    pub(super) fn top(&self, searcher: &Searcher, limit: usize) -> tantivy::Result<Vec<(Score, DocAddress)>> {
        let (leading, following) = (
            Source::look_up(searcher, &self.leading)?,
            Source::look_up(searcher, &self.following)?,
        );
        let mut best = Best::new(limit);
        if limit == 0 {
            return Ok(Vec::new());
        }
        for (segment_ord, segment) in searcher.segment_readers().iter().enumerate() {
            let (leading, following) = (&leading[segment_ord], &following[segment_ord]);
            let mut candidates = candidates(segment, leading)?;
            if segment_ord == 0 && !self.one_edit.is_empty() {
                self.add_candidates(segment, leading, &mut candidates)?;
            }
            let title_lengths = match segment.fieldnorms_readers().get_field(self.title)? {
                Some(fieldnorms) => fieldnorms,
                None => FieldNormReader::constant(segment.max_doc(), LONG_TITLE),
            };
            // The title clauses by weight, then the text's: the title clauses are bounded by how
            // many words of a candidate's title are left to hold, the text's by their best score.
            let mut title_clauses: Vec<Following> = Vec::new();
            let mut text_clauses: Vec<Following> = Vec::new();
            for (index, (clause, source)) in self.following.iter().zip(following).enumerate() {
                if let Some(source) = source {
                    let following = Following {
                        index,
                        cursor: source.cursor()?,
                        max: f64::from(source.weight.max_score()),
                    };
                    match clause.term.field() == self.title {
                        true => title_clauses.push(following),
                        false => text_clauses.push(following),
                    }
                }
            }
            title_clauses.sort_by(|a, b| b.max.total_cmp(&a.max).then(a.index.cmp(&b.index)));
            text_clauses.sort_by(|a, b| b.max.total_cmp(&a.max).then(a.index.cmp(&b.index)));
            let mut text_rest = vec![0.0f64; text_clauses.len() + 1];
            for k in (0..text_clauses.len()).rev() {
                text_rest[k] = text_rest[k + 1] + text_clauses[k].max;
            }
            let floor = match candidates.len() >= limit {
                true => {
                    let mut leads: Vec<f64> = candidates.iter().map(|candidate| candidate.lead).collect();
                    let (_, nth, _) = leads.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
                    *nth
                }
                false => f64::NEG_INFINITY,
            };
            let floor = floor.max(probe(following, &candidates, limit)?);
            let mut added: Vec<Option<Score>> = vec![None; self.following.len()];
            'candidates: for candidate in &candidates {
                let doc = candidate.doc;
                added.iter_mut().for_each(|slot| *slot = None);
                let mut partial = candidate.lead;
                // The words of the title no leading clause holds: a following title clause holds
                // some of them (a title of `LONG_TITLE` words or more is not counted).
                let length_id = title_lengths.fieldnorm_id(doc);
                let length = FieldNormReader::id_to_fieldnorm(length_id);
                let mut left = match length < LONG_TITLE {
                    true => length.saturating_sub(candidate.words),
                    false => u32::MAX,
                };
                for k in 0..title_clauses.len() {
                    if left == 0 {
                        break;
                    }
                    // The best the clauses from the k-th on can add: the `left` heaviest, each
                    // holding at most `left` words.
                    let bound: f64 = title_clauses[k..]
                        .iter()
                        .take(left as usize)
                        .map(|clause| f64::from(clause.cursor.weight.score(length_id, left)))
                        .sum();
                    if hopeless(partial + bound + text_rest[0], floor, &best) {
                        continue 'candidates;
                    }
                    let clause = &mut title_clauses[k];
                    if let Some((score, term_freq)) = clause.cursor.at(doc) {
                        added[clause.index] = Some(score);
                        partial += f64::from(score);
                        left = left.saturating_sub(term_freq);
                    }
                }
                for k in 0..text_clauses.len() {
                    if hopeless(partial + text_rest[k], floor, &best) {
                        continue 'candidates;
                    }
                    let clause = &mut text_clauses[k];
                    if let Some((score, _)) = clause.cursor.at(doc) {
                        added[clause.index] = Some(score);
                        partial += f64::from(score);
                    }
                }
                if hopeless(partial, floor, &best) {
                    continue;
                }
                // The one rule: every clause's score added exactly, rounded once.
                let score = added
                    .iter()
                    .flatten()
                    .fold(candidate.lead, |sum, added| sum + f64::from(*added));
                best.offer(score as Score, DocAddress::new(segment_ord as u32, doc));
            }
        }
        let mut kept = best.kept;
        kept.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        Ok(kept)
    }

    /// Adds the pages of [`LedQuery::one_edit`] to `candidates` (in index order), each with the
    /// leading clauses it holds.
    fn add_candidates(
        &self,
        segment: &SegmentReader,
        leading: &[Option<Source>],
        candidates: &mut Vec<Candidate>,
    ) -> tantivy::Result<()> {
        let mut added: Vec<DocId> = self
            .one_edit
            .iter()
            .copied()
            .filter(|doc| *doc < segment.max_doc() && !segment.is_deleted(*doc))
            .filter(|doc| {
                candidates
                    .binary_search_by_key(doc, |candidate| candidate.doc)
                    .is_err()
            })
            .collect();
        added.sort_unstable();
        added.dedup();
        if added.is_empty() {
            return Ok(());
        }
        let mut cursors = leading
            .iter()
            .flatten()
            .map(Source::cursor)
            .collect::<tantivy::Result<Vec<_>>>()?;
        for doc in added {
            let mut candidate = Candidate {
                doc,
                lead: 0.0,
                words: 0,
            };
            for (score, term_freq) in cursors.iter_mut().filter_map(|cursor| cursor.at(doc)) {
                candidate.lead += f64::from(score);
                candidate.words += term_freq;
            }
            candidates.push(candidate);
        }
        candidates.sort_unstable_by_key(|candidate| candidate.doc);
        Ok(())
    }
}

/// The pages of `segment` some leading clause holds, in index order, each with the leading
/// clauses' exact sum.
fn candidates(segment: &SegmentReader, leading: &[Option<Source>]) -> tantivy::Result<Vec<Candidate>> {
    let mut postings: Vec<(DocId, usize, Score, u32)> = Vec::new();
    for (index, source) in leading.iter().enumerate() {
        let Some(source) = source else {
            continue;
        };
        let mut cursor = source.cursor()?;
        while cursor.doc() != TERMINATED {
            if !segment.is_deleted(cursor.doc()) {
                postings.push((cursor.doc(), index, cursor.score(), cursor.postings.term_freq()));
            }
            cursor.postings.advance();
        }
    }
    if leading.len() > 1 {
        postings.sort_unstable_by_key(|(doc, index, _, _)| (*doc, *index));
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    for (doc, _, score, term_freq) in postings {
        match candidates.last_mut() {
            Some(last) if last.doc == doc => {
                last.lead += f64::from(score);
                last.words += term_freq;
            }
            _ => candidates.push(Candidate {
                doc,
                lead: f64::from(score),
                words: term_freq,
            }),
        }
    }
    Ok(candidates)
}

/// A floor the best `limit` pages reach, well above the leading clauses' own: the `limit`-th
/// best whole score of the [`PROBED`] candidates best by their leading clauses (read with
/// cursors of their own), a rounding's worth below as they add in another order;
/// `NEG_INFINITY` when there are too few candidates to probe.
fn probe(following: &[Option<Source>], candidates: &[Candidate], limit: usize) -> tantivy::Result<f64> {
    if candidates.len() <= limit {
        return Ok(f64::NEG_INFINITY);
    }
    let mut leads: Vec<(f64, usize)> = candidates
        .iter()
        .enumerate()
        .map(|(at, candidate)| (candidate.lead, at))
        .collect();
    let probed = (PROBED * limit).min(leads.len());
    leads.select_nth_unstable_by(probed - 1, |a, b| b.0.total_cmp(&a.0));
    let mut probed: Vec<usize> = leads[..probed].iter().map(|(_, at)| *at).collect();
    probed.sort_unstable();
    let mut cursors = following
        .iter()
        .flatten()
        .map(Source::cursor)
        .collect::<tantivy::Result<Vec<_>>>()?;
    let mut scores: Vec<f64> = Vec::with_capacity(probed.len());
    for at in probed {
        let candidate = &candidates[at];
        let mut score = candidate.lead;
        for (added, _) in cursors.iter_mut().filter_map(|cursor| cursor.at(candidate.doc)) {
            score += f64::from(added);
        }
        scores.push(score);
    }
    let (_, nth, _) = scores.select_nth_unstable_by(limit - 1, |a, b| b.total_cmp(a));
    Ok(*nth - nth.abs() * 1e-5 - 1e-5)
}

/// The scores of `pages` under the search's one rule: each clause's score at the page, added
/// exactly ([`exact_sum`]'s rule), rounded once: what the led search gives the same page.
pub(super) fn exact_scores(
    searcher: &Searcher,
    clauses: &[TermClause],
    pages: &[DocAddress],
) -> tantivy::Result<Vec<Score>> {
    let sources = Source::look_up(searcher, clauses)?;
    // Each segment's pages in index order, so every cursor only moves on.
    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_by_key(|&at| pages[at]);
    let mut scores = vec![0.0; pages.len()];
    let mut cursors: Option<(u32, Vec<Cursor>)> = None;
    for at in order {
        let page = pages[at];
        if cursors
            .as_ref()
            .is_none_or(|(segment, _)| *segment != page.segment_ord)
        {
            let Some(segment) = sources.get(page.segment_ord as usize) else {
                continue;
            };
            let opened = segment
                .iter()
                .flatten()
                .map(Source::cursor)
                .collect::<tantivy::Result<Vec<_>>>()?;
            cursors = Some((page.segment_ord, opened));
        }
        if let Some((_, cursors)) = &mut cursors {
            let sum = exact_sum(cursors.iter_mut().filter_map(|cursor| cursor.at(page.doc_id)));
            scores[at] = sum;
        }
    }
    Ok(scores)
}

/// The search's one rule for a page's score: its clauses' scores (each an `f32`, as tantivy
/// computes a term's BM25) added in `f64`, exact for the few dozen scores of BM25's range a page
/// has, then rounded once: the same sum in any order.
fn exact_sum(scores: impl Iterator<Item = (Score, u32)>) -> Score {
    scores.fold(0.0f64, |sum, (score, _)| sum + f64::from(score)) as Score
}
