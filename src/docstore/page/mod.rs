//! `Page` and the Lookup cursor: the text of one opened page, split into sentences, and the
//! Ctrl+F walk over it — pure and synchronous, shared by every docstore.
//!
//! The `paper` profile follows the ReAct repository's `wikienv.py`: the page text is the kept
//! paragraphs joined with `\n`; it is split on `\n`, each line stripped, empty lines dropped, each
//! line split on `". "` and every piece stripped and given a `.` back. The `default` profile splits
//! real sentences: it keeps `U.S.`, `Jr.`, `St.`, initials and decimals inside their sentence and
//! never doubles a period.

use std::borrow::Cow;

use super::python_codecs::repr_list;
use crate::base::profile::Profile;
use crate::base::text::cut_marked;

/// How many sentences a search shows.
pub const SUMMARY_SENTENCES: usize = 5;
/// How many titles a miss offers.
pub const SIMILAR_TITLES: usize = 5;
/// How many entries of a disambiguation page the `default` profile offers.
pub const DISAMBIGUATION_ENTRIES: usize = 10;

/// The most text, in bytes, one opened page keeps (paragraphs, or a results page's titles), in
/// both profiles. Real articles stay far below it; a pathological page (thousands of unclosed
/// nested `<p>`, whose texts the paper's BeautifulSoup scrape repeats once per block) is cut
/// there, so memory stays bounded.
pub const PAGE_TEXT_LIMIT: usize = 8 * 1024 * 1024;

/// The longest sentence the `default` profile keeps, in characters: a page without sentence
/// breaks (a run-on list, a table flattened into text) would otherwise be one huge sentence.
pub const SENTENCE_CHARS: usize = 1_000;

/// The longest observation a `default` search gives, in characters (a normal article's first
/// five sentences are well under it).
pub const OBSERVATION_CHARS: usize = 2_500;

/// What is left of one page's text allowance ([`PAGE_TEXT_LIMIT`]): every reader takes the text
/// it keeps through one, so no page holds more.
#[derive(Debug, Clone)]
pub struct TextBudget {
    left: usize,
}

impl TextBudget {
    /// A full allowance of [`PAGE_TEXT_LIMIT`] bytes.
    pub fn page() -> TextBudget {
        TextBudget {
            left: PAGE_TEXT_LIMIT,
        }
    }

    /// The longest prefix of `text` that still fits (cut at a character boundary), charged to
    /// the allowance; empty once it is spent.
    pub fn take<'t>(&mut self, text: &'t str) -> &'t str {
        let end = text.floor_char_boundary(self.left);
        self.left -= end;
        &text[..end]
    }

    pub fn is_spent(&self) -> bool {
        self.left == 0
    }
}

/// One opened page: its title and its paragraphs, as owned text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    pub title: String,
    pub paragraphs: Vec<String>,
    /// Sentences given by the source (HotpotQA paragraphs come split): the `default` profile uses
    /// them as they are instead of splitting the paragraphs again.
    given_sentences: Option<Vec<String>>,
}

impl Page {
    /// A page of `paragraphs`, kept within [`PAGE_TEXT_LIMIT`]: paragraphs past it are cut.
    pub fn new(title: impl Into<String>, paragraphs: Vec<String>) -> Page {
        Page {
            title: title.into(),
            paragraphs: within_page_limit(paragraphs),
            given_sentences: None,
        }
    }

    /// A page whose sentences are already known (a HotpotQA context paragraph). Its one paragraph
    /// is the sentences joined as HotpotQA joins them (they carry their own leading spaces).
    pub fn from_sentences(title: impl Into<String>, sentences: Vec<String>) -> Page {
        Page {
            title: title.into(),
            paragraphs: vec![sentences.concat()],
            given_sentences: Some(sentences),
        }
    }

    /// A page of several paragraphs, each given as its sentences (an offline dump), kept within
    /// [`PAGE_TEXT_LIMIT`] (sentences past it are cut). A paragraph's text is its sentences
    /// joined, with a space between two that carry none of their own.
    pub fn with_sentences(title: impl Into<String>, mut paragraphs: Vec<Vec<String>>) -> Page {
        let mut budget = TextBudget::page();
        let mut kept_paragraphs = 0;
        for sentences in &mut paragraphs {
            let cut = keep_within(&mut budget, sentences);
            if !sentences.is_empty() {
                kept_paragraphs += 1;
            }
            if cut {
                break;
            }
        }
        paragraphs.truncate(kept_paragraphs);
        let texts = paragraphs
            .iter()
            .map(|sentences| {
                let mut text = String::new();
                for sentence in sentences {
                    let needs_space = !text.is_empty()
                        && !text.ends_with(is_python_space)
                        && !sentence.starts_with(is_python_space);
                    if needs_space {
                        text.push(' ');
                    }
                    text.push_str(sentence);
                }
                text
            })
            .collect();
        Page {
            title: title.into(),
            paragraphs: texts,
            given_sentences: Some(paragraphs.into_iter().flatten().collect()),
        }
    }

    /// The page's sentences under `profile`'s rules.
    pub fn sentences(&self, profile: Profile) -> Vec<String> {
        match profile {
            Profile::Paper => paper_sentences(&self.paragraphs),
            Profile::Default => match &self.given_sentences {
                Some(sentences) => sentences
                    .iter()
                    .map(|sentence| collapse_whitespace(sentence))
                    .filter(|sentence| !sentence.is_empty())
                    .map(within_sentence_limit)
                    .collect(),
                None => self
                    .paragraphs
                    .iter()
                    .flat_map(|paragraph| split_sentences(&collapse_whitespace(paragraph)))
                    .map(within_sentence_limit)
                    .collect(),
            },
        }
    }

    /// The text the paper's environment keeps as `self.page`: paragraphs joined, one `\n` after each.
    pub fn paper_text(&self) -> String {
        let mut text = String::new();
        for paragraph in &self.paragraphs {
            text.push_str(paragraph);
            text.push('\n');
        }
        text
    }
}

fn within_sentence_limit(sentence: String) -> String {
    match cut_marked(&sentence, SENTENCE_CHARS) {
        Cow::Borrowed(_) => sentence,
        Cow::Owned(cut) => cut,
    }
}

/// `paragraphs` cut to [`PAGE_TEXT_LIMIT`] bytes in all (nothing is copied when they fit).
fn within_page_limit(mut paragraphs: Vec<String>) -> Vec<String> {
    keep_within(&mut TextBudget::page(), &mut paragraphs);
    paragraphs
}

/// Cuts `texts` to what `budget` still allows: the last one kept may be cut short, the rest of
/// them dropped. Whether anything was cut: then nothing after `texts` fits either.
fn keep_within(budget: &mut TextBudget, texts: &mut Vec<String>) -> bool {
    let mut kept = 0;
    let mut cut = false;
    for text in texts.iter_mut() {
        let fits = budget.take(text).len();
        cut = fits < text.len();
        if fits > 0 || text.is_empty() {
            text.truncate(fits);
            kept += 1;
        }
        if cut {
            break;
        }
    }
    texts.truncate(kept);
    cut
}

/// The first [`SUMMARY_SENTENCES`] sentences joined by spaces: what a successful search shows.
pub fn summary(sentences: &[String]) -> String {
    sentences
        .iter()
        .take(SUMMARY_SENTENCES)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Python's `str.isspace`: Unicode White_Space plus the four ASCII separators `\x1c`..`\x1f`.
pub fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()` with no argument.
pub fn python_strip(text: &str) -> &str {
    text.trim_matches(is_python_space)
}

/// `wikienv.py`'s split: lines, stripped, non-empty; each split on `". "`; each piece stripped,
/// dropped when empty, and given a `.`.
pub fn paper_sentences<S: AsRef<str>>(paragraphs: &[S]) -> Vec<String> {
    let mut sentences = Vec::new();
    for paragraph in paragraphs {
        for line in paragraph.as_ref().split('\n') {
            let line = python_strip(line);
            if line.is_empty() {
                continue;
            }
            for piece in line.split(". ") {
                let piece = python_strip(piece);
                if !piece.is_empty() {
                    let mut sentence = String::with_capacity(piece.len() + 1);
                    sentence.push_str(piece);
                    sentence.push('.');
                    sentences.push(sentence);
                }
            }
        }
    }
    sentences
}

/// Runs of whitespace (including newlines and no-break spaces) become one space; ends trimmed.
pub fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        if is_python_space(c) {
            pending_space = !out.is_empty();
        } else {
            if pending_space {
                out.push(' ');
                pending_space = false;
            }
            out.push(c);
        }
    }
    out
}

/// Words after which a period never ends a sentence: titles, initials-like shorthands, references.
const STRONG_ABBREVIATIONS: &[&str] = &[
    "adm", "approx", "apt", "assn", "ave", "blvd", "ca", "capt", "cf", "cmdr", "col", "cpl", "dept", "dr",
    "e.g", "eds", "esp", "est", "fig", "figs", "fr", "ft", "gen", "gov", "hon", "i.e", "lt", "maj", "messrs",
    "mr", "mrs", "ms", "mt", "no", "nos", "op", "pp", "pres", "prof", "pt", "rep", "rev", "sen", "sgt", "st",
    "ste", "supt", "v", "viz", "vol", "vols", "vs",
];

/// Words after which a period ends a sentence only when a typical sentence opener follows
/// (`... Martin Luther King Jr. He was` splits; `Sammy Davis Jr. Show` does not).
const WEAK_ABBREVIATIONS: &[&str] = &[
    "al", "apr", "aug", "bros", "co", "corp", "dec", "ed", "etc", "feb", "inc", "jan", "jr", "jul", "jun",
    "ltd", "mar", "nov", "oct", "sep", "sept", "sr",
];

/// Words that open a new sentence after a weak abbreviation.
const SENTENCE_OPENERS: &[&str] = &[
    "a", "after", "although", "an", "as", "at", "before", "but", "during", "for", "from", "he", "her", "his",
    "however", "i", "if", "in", "it", "its", "many", "most", "on", "one", "other", "she", "since", "some",
    "that", "the", "their", "there", "these", "they", "this", "those", "though", "to", "today", "under",
    "when", "while", "with",
];

const CLOSERS: &[char] = &['"', '\'', '”', '’', ')', ']', '»'];
const OPENERS: &[char] = &['"', '\'', '“', '‘', '(', '[', '«', '¿', '¡'];

/// Splits one paragraph (whitespace already collapsed) into sentences, keeping abbreviations,
/// initials and decimals inside their sentence. Sentences keep their own punctuation: nothing is
/// appended, so no sentence ends in `..`.
pub fn split_sentences(paragraph: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let bytes = paragraph.as_bytes();
    let mut idx = 0;
    while idx < bytes.len() {
        let c = bytes[idx];
        if !matches!(c, b'.' | b'!' | b'?') {
            idx += 1;
            continue;
        }
        // The end of the terminator: more terminators (`?!`, `...`), then closing quotes/brackets.
        let mut end = idx + 1;
        while end < bytes.len() && matches!(bytes[end], b'.' | b'!' | b'?') {
            end += 1;
        }
        let mut rest = &paragraph[end..];
        while let Some(closer) = rest.chars().next().filter(|c| CLOSERS.contains(c)) {
            end += closer.len_utf8();
            rest = &paragraph[end..];
        }
        let Some(after_space) = rest.strip_prefix(' ') else {
            idx = end.max(idx + 1);
            continue;
        };
        let next_word = after_space.split(' ').next().unwrap_or("");
        if !starts_sentence(next_word) || (c == b'.' && !ends_sentence(&paragraph[start..idx], next_word)) {
            idx = end;
            continue;
        }
        let sentence = paragraph[start..end].trim();
        if !sentence.is_empty() {
            sentences.push(sentence.to_owned());
        }
        start = end + 1;
        idx = start;
    }
    let last = paragraph[start..].trim();
    if !last.is_empty() {
        sentences.push(last.to_owned());
    }
    sentences
}

/// Whether a word can open a sentence: a capital, a digit or an opening quote/bracket first.
fn starts_sentence(word: &str) -> bool {
    let trimmed = word.trim_start_matches(OPENERS);
    match trimmed.chars().next() {
        Some(first) => first.is_uppercase() || first.is_ascii_digit() || trimmed.len() < word.len(),
        None => false,
    }
}

/// Whether the period closing `before` ends the sentence, given the word after it.
fn ends_sentence(before: &str, next_word: &str) -> bool {
    let word = before.rsplit(' ').next().unwrap_or("");
    let word = word.trim_start_matches(OPENERS);
    if word.is_empty() {
        return true;
    }
    let lower = word.to_lowercase();
    let mut chars = word.chars();
    let single_letter = matches!((chars.next(), chars.next()), (Some(c), None) if c.is_alphabetic());
    if single_letter && word.chars().all(char::is_uppercase) {
        // An initial: `J. R. R. Tolkien`, `George W. Bush`.
        return false;
    }
    if STRONG_ABBREVIATIONS.contains(&lower.as_str()) {
        return false;
    }
    // `U.S`, `D.C`, `Ph.D`: periods inside the word make it an abbreviation.
    let dotted = word.contains('.') && word.chars().any(char::is_alphabetic);
    if dotted || WEAK_ABBREVIATIONS.contains(&lower.as_str()) {
        let opener = next_word
            .trim_start_matches(OPENERS)
            .trim_end_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        return SENTENCE_OPENERS.contains(&opener.as_str());
    }
    true
}

/// The Ctrl+F state: the keyword, the sentences that contain it, and how many were shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupCursor {
    pub keyword: String,
    pub matches: Vec<String>,
    pub position: usize,
}

impl LookupCursor {
    /// The sentences containing `keyword`, case-insensitively, in page order.
    pub fn new(keyword: &str, sentences: &[String]) -> LookupCursor {
        let needle = keyword.to_lowercase();
        let matches = sentences
            .iter()
            .filter(|sentence| sentence.to_lowercase().contains(&needle))
            .cloned()
            .collect();
        LookupCursor {
            keyword: keyword.to_owned(),
            matches,
            position: 0,
        }
    }

    /// The next match as `(Result i / n) sentence`, or `None` when all were shown.
    pub fn advance(&mut self) -> Option<String> {
        let sentence = self.matches.get(self.position)?;
        self.position += 1;
        Some(format!(
            "(Result {} / {}) {sentence}",
            self.position,
            self.matches.len()
        ))
    }
}

/// The paper's observation when a lookup has nothing (left) to show.
pub const PAPER_NO_MORE: &str = "No more results.\n";
/// The `default` observation when every match was shown.
pub const NO_MORE: &str = "No more results.";
/// The `default` observation for a Lookup before any page was opened.
pub const NO_PAGE: &str = "No page is open: Search[entity] first, then Lookup[keyword] in it.";

/// `Could not find X. Similar: [...].` with the first [`SIMILAR_TITLES`] titles, in both profiles;
/// the `default` profile says when nothing is similar.
pub fn miss_observation(query: &str, titles: &[String], profile: Profile) -> String {
    let shown = &titles[..titles.len().min(SIMILAR_TITLES)];
    if shown.is_empty() && profile == Profile::Default {
        format!("Could not find {query}. No similar pages.")
    } else {
        format!("Could not find {query}. Similar: {}.", repr_list(shown))
    }
}

/// What one search outcome comes to under a profile's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchStep {
    /// The observation the model reads.
    Shown(String),
    /// The paper landed on a disambiguation page: search this (`[entity]`) instead.
    SearchAgain(String),
}

/// One question's reading state, common to every docstore: the open page and the Lookup cursor.
#[derive(Debug, Clone)]
pub struct Reader {
    profile: Profile,
    page: Option<Page>,
    sentences: Vec<String>,
    cursor: Option<LookupCursor>,
}

impl Reader {
    pub fn new(profile: Profile) -> Reader {
        Reader {
            profile,
            page: None,
            sentences: Vec::new(),
            cursor: None,
        }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The open page, if a search found one.
    pub fn page(&self) -> Option<&Page> {
        self.page.as_ref()
    }

    pub fn cursor(&self) -> Option<&LookupCursor> {
        self.cursor.as_ref()
    }

    /// Opens a page a search found and returns what the search shows: its first sentences.
    /// The cursor starts afresh.
    pub fn open(&mut self, page: Page) -> String {
        self.sentences = page.sentences(self.profile);
        self.page = Some(page);
        self.cursor = None;
        let shown = summary(&self.sentences);
        match self.profile {
            Profile::Default if !shown.is_empty() => cut_marked(&shown, OBSERVATION_CHARS).into_owned(),
            Profile::Default => {
                match self
                    .page
                    .as_ref()
                    .map(|page| page.title.trim())
                    .filter(|title| !title.is_empty())
                {
                    Some(title) => format!("The page {} has no text.", cut_marked(title, SENTENCE_CHARS)),
                    None => "The page has no text.".to_owned(),
                }
            }
            _ => shown,
        }
    }

    /// How every docstore turns what a search of `query` found into what the model reads: an
    /// article opens, results (or none) are a miss, and a disambiguation page is re-searched as
    /// `[query]` once by the paper (shown as it is the second time) or offered as the Similar list
    /// by the `default` profile. `depth` counts the searches this action already made.
    pub fn show(&mut self, query: &str, outcome: SearchOutcome, depth: usize) -> SearchStep {
        let observation = match outcome {
            SearchOutcome::Article(page) => self.open(page),
            SearchOutcome::Results(titles) => {
                self.missed();
                miss_observation(query, &titles, self.profile)
            }
            SearchOutcome::NoResults => {
                self.missed();
                miss_observation(query, &[], self.profile)
            }
            SearchOutcome::Disambiguation { entries, page } => match self.profile {
                Profile::Paper if depth == 0 => return SearchStep::SearchAgain(format!("[{query}]")),
                Profile::Paper => self.open(page),
                Profile::Default => {
                    self.missed();
                    let shown = &entries[..entries.len().min(DISAMBIGUATION_ENTRIES)];
                    format!("Could not find {query}. Similar: {}.", repr_list(shown))
                }
            },
        };
        SearchStep::Shown(observation)
    }

    /// A search found no page. The paper keeps page and cursor as they were; the `default`
    /// profile keeps the page but starts the cursor afresh, as after every search.
    pub fn missed(&mut self) {
        if self.profile == Profile::Default {
            self.cursor = None;
        }
    }

    /// `Lookup[keyword]`: the next sentence of the open page containing the keyword.
    pub fn lookup(&mut self, keyword: &str) -> String {
        match self.profile {
            Profile::Paper => {
                // wikienv.py: the list is rebuilt only when the keyword string differs exactly.
                if self
                    .cursor
                    .as_ref()
                    .is_none_or(|cursor| cursor.keyword != keyword)
                {
                    let sentences: &[String] = if self.page.is_some() { &self.sentences } else { &[] };
                    self.cursor = Some(LookupCursor::new(keyword, sentences));
                }
                // invariant: `self.cursor` was set to `Some` just above when it was `None`
                let cursor = self.cursor.as_mut().expect("set above");
                cursor.advance().unwrap_or_else(|| PAPER_NO_MORE.to_owned())
            }
            Profile::Default => {
                if self.page.is_none() {
                    return NO_PAGE.to_owned();
                }
                let keyword = keyword.trim();
                let same = self
                    .cursor
                    .as_ref()
                    .is_some_and(|cursor| cursor.keyword.to_lowercase() == keyword.to_lowercase());
                if !same {
                    self.cursor = Some(LookupCursor::new(keyword, &self.sentences));
                }
                // invariant: `self.cursor` was set to `Some` just above when it was `None`
                let cursor = self.cursor.as_mut().expect("set above");
                if cursor.matches.is_empty() {
                    return format!("No results for {keyword}.");
                }
                cursor.advance().unwrap_or_else(|| NO_MORE.to_owned())
            }
        }
    }
}

/// What a search page turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchOutcome {
    /// An article: its title and paragraphs.
    Article(Page),
    /// A search-results page: the result titles, best first (at most the 20 a results page
    /// shows; observations show 5).
    Results(Vec<String>),
    /// A search-results page with no results at all (the `default` profile only: the `paper`
    /// profile reads such a page as an article, as `wikienv.py` does).
    NoResults,
    /// A disambiguation page: its entries (the `default` profile offers them as the Similar list)
    /// and the page itself (the `paper` profile shows it when the bracketed re-search lands on
    /// another disambiguation page).
    Disambiguation { entries: Vec<String>, page: Page },
}

impl SearchOutcome {
    /// The bytes of text the outcome holds: what reading the page keeps in memory.
    pub fn text_len(&self) -> usize {
        match self {
            SearchOutcome::Article(page) | SearchOutcome::Disambiguation { page, .. } => {
                page.paragraphs.iter().map(String::len).sum()
            }
            SearchOutcome::Results(titles) => titles.iter().map(String::len).sum(),
            SearchOutcome::NoResults => 0,
        }
    }
}

#[cfg(test)]
mod tests;
