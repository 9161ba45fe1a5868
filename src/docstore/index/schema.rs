//! `WikiSchema`: the tantivy fields of an offline Wikipedia, its tokenizer, and [`IndexedPage`] —
//! a page as a dump gives it and as the index stores it.

use tantivy::schema::{
    FAST, Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};
use tantivy::{Index, IndexSettings, IndexSortByField, Order, TantivyDocument};

use super::title::{folded_title, mediawiki_title, title_key};
use crate::docstore::Page;

/// The tokenizer of titles and text: words of letters and digits, lower case, accents folded
/// (`Beyonce` finds `Beyoncé`), words longer than 40 bytes dropped.
const TOKENIZER: &str = "wiki";
/// Separates the paragraphs of a stored body.
const PARAGRAPH_SEPARATOR: char = '\u{1e}';
/// Separates the sentences of a stored paragraph.
const SENTENCE_SEPARATOR: char = '\u{1f}';
/// A stored body starting with this holds the dump's own sentences.
const GIVEN_SENTENCES: char = 'S';
/// A stored body starting with this holds whole paragraphs, to be split by the reader.
const WHOLE_PARAGRAPHS: char = 'P';
/// Separates stored link targets.
const LINK_SEPARATOR: char = '\u{1f}';

/// The fields of an offline Wikipedia index.
#[derive(Debug, Clone, Copy)]
pub struct WikiSchema {
    /// The title as the dump writes it: tokenized (ranked search), stored, and a column (the
    /// Similar list; indexes built before the column read the stored title).
    pub title: Field,
    /// The MediaWiki-normalised title, untokenized: Wikipedia's "Go" (the in-memory docstores and
    /// format v2; a dump's index leaves it empty and finds titles in its
    /// [`TitleTable`](super::title_table::TitleTable)).
    pub title_exact: Field,
    /// The normalised title in lower case: the case-insensitive match (as `title_exact`).
    pub title_folded: Field,
    /// The title without case and punctuation (`arthurs magazine`): the small in-memory
    /// docstores' loose match (`TitleMatch::Loose`). A dump's index leaves it empty: its search
    /// never reads it, and its unique terms (200,000 in a 200k-page dump) cost a term
    /// dictionary built in every segment and again when they are stacked.
    pub title_key: Field,
    /// The page text, tokenized, not stored.
    pub text: Field,
    /// The page's paragraphs and sentences, stored, not indexed.
    pub body: Field,
    /// A disambiguation page's link targets, stored.
    pub links: Field,
    /// The page's position in its dump: ties in the ranking go to the earlier page.
    pub ordinal: Field,
}

impl WikiSchema {
    pub fn new() -> (Schema, WikiSchema) {
        let mut builder = Schema::builder();
        let tokenized = |stored: bool| {
            let indexing = TextFieldIndexing::default()
                .set_tokenizer(TOKENIZER)
                .set_index_option(IndexRecordOption::WithFreqs);
            let options = TextOptions::default().set_indexing_options(indexing);
            // The title also as a column: the Similar list reads its candidates' titles there,
            // not from the stored documents (a block of bodies decompressed and kept in memory
            // for each).
            if stored {
                options.set_stored().set_fast("raw")
            } else {
                options
            }
        };
        let fields = WikiSchema {
            title: builder.add_text_field("title", tokenized(true)),
            title_exact: builder.add_text_field("title_exact", STRING),
            title_folded: builder.add_text_field("title_folded", STRING),
            title_key: builder.add_text_field("title_key", STRING),
            text: builder.add_text_field("text", tokenized(false)),
            body: builder.add_text_field("body", STORED),
            links: builder.add_text_field("links", STORED),
            // A column only: the search reads it, never looks a position up (indexes built before
            // also indexed it, 4 unique terms a page with the titles' own, built twice).
            ordinal: builder.add_u64_field("ordinal", FAST),
        };
        (builder.build(), fields)
    }

    /// Every segment sorted by `ordinal`, so one merged segment holds the pages in dump order
    /// and the search breaks ties by document id.
    pub fn settings() -> IndexSettings {
        IndexSettings {
            sort_by_field: Some(IndexSortByField {
                field: "ordinal".to_owned(),
                order: Order::Asc,
            }),
            ..IndexSettings::default()
        }
    }

    /// The settings of the segments a build writes a range of the dump into before they are
    /// stacked into the index (by `index build`): their pages come in dump order, so they are
    /// not sorted (which would store every page twice, once unsorted and once sorted).
    pub fn part_settings() -> IndexSettings {
        IndexSettings {
            sort_by_field: None,
            ..WikiSchema::settings()
        }
    }

    /// The fields of an opened index, checked against what this version writes.
    pub fn of(index: &Index) -> tantivy::Result<WikiSchema> {
        let schema = index.schema();
        let field = |name: &str| schema.get_field(name);
        Ok(WikiSchema {
            title: field("title")?,
            title_exact: field("title_exact")?,
            title_folded: field("title_folded")?,
            title_key: field("title_key")?,
            text: field("text")?,
            body: field("body")?,
            links: field("links")?,
            ordinal: field("ordinal")?,
        })
    }

    /// The analyzer every tokenized field uses, registered on `index` (building and searching).
    pub fn register_tokenizer(index: &Index) {
        index.tokenizers().register(TOKENIZER, analyzer());
    }

    /// The document for one page of an in-memory index, its title terms included.
    pub fn document(&self, page: &IndexedPage, ordinal: u64) -> TantivyDocument {
        let mut document = self.document_with_body(page, page.encode_body(), ordinal);
        document.add_text(self.title_exact, mediawiki_title(&page.title));
        document.add_text(self.title_folded, folded_title(&page.title));
        document.add_text(self.title_key, title_key(&page.title));
        document
    }

    /// The document for one page of a dump's index, whose stored body
    /// ([`IndexedPage::encode_body`]) is known: no title terms, which are unique to their page
    /// (its [`TitleTable`](super::title_table::TitleTable) finds titles; see [`WikiSchema::title_key`]).
    pub(super) fn document_with_body(
        &self,
        page: &IndexedPage,
        body: String,
        ordinal: u64,
    ) -> TantivyDocument {
        let mut document = TantivyDocument::default();
        document.add_text(self.title, &page.title);
        // The text is the body without its marker: the separators between paragraphs and
        // sentences are not letters or digits, so it tokenizes into the words of the sentences,
        // one value instead of a copy of each sentence.
        let text = body.get(1..).unwrap_or("");
        if !text.is_empty() {
            document.add_text(self.text, text);
        }
        document.add_text(self.body, body);
        if page.is_disambiguation() && !page.links.is_empty() {
            let links: Vec<&str> = page.links.iter().map(String::as_str).collect();
            document.add_text(self.links, links.join(&LINK_SEPARATOR.to_string()));
        }
        document.add_u64(self.ordinal, ordinal);
        document
    }

    /// The page a stored document holds.
    pub fn page(&self, document: &TantivyDocument) -> IndexedPage {
        let text = |field: Field| {
            document
                .get_first(field)
                .and_then(|value| value.as_str())
                .unwrap_or("")
        };
        let links = text(self.links);
        let mut page = IndexedPage::decode_body(text(self.title).to_owned(), text(self.body));
        page.links = if links.is_empty() {
            Vec::new()
        } else {
            links.split(LINK_SEPARATOR).map(str::to_owned).collect()
        };
        page
    }

    /// The stored title of a document.
    pub fn title_of(&self, document: &TantivyDocument) -> String {
        document
            .get_first(self.title)
            .and_then(|value| value.as_str())
            .unwrap_or("")
            .to_owned()
    }
}

/// Words of letters and digits, lower case, accents folded.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// Whether a format gives sentence boundaries (HotpotQA, FEVER) or whole paragraphs (KILT, DPR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sentences {
    /// Each paragraph is a list of the dump's own sentences.
    Given,
    /// Each paragraph is one string; the reader splits it.
    Unsplit,
}

/// One page of a dump: its title, its paragraphs (each a list of sentences, or one whole string),
/// and, for a disambiguation page, the titles it links to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedPage {
    pub title: String,
    pub paragraphs: Vec<Vec<String>>,
    pub sentences: Sentences,
    pub links: Vec<String>,
}

impl IndexedPage {
    /// A page of whole paragraphs, without links. Control characters become spaces (the
    /// stored body uses two as separators).
    pub fn unsplit(title: impl Into<String>, paragraphs: Vec<String>) -> IndexedPage {
        IndexedPage {
            title: sanitized(title.into()),
            paragraphs: paragraphs
                .into_iter()
                .map(|paragraph| vec![sanitized(paragraph)])
                .collect(),
            sentences: Sentences::Unsplit,
            links: Vec::new(),
        }
    }

    /// A page of paragraphs given as sentences, without links; control characters as in
    /// [`IndexedPage::unsplit`].
    pub fn split(title: impl Into<String>, paragraphs: Vec<Vec<String>>) -> IndexedPage {
        IndexedPage {
            title: sanitized(title.into()),
            paragraphs: paragraphs
                .into_iter()
                .map(|sentences| sentences.into_iter().map(sanitized).collect())
                .collect(),
            sentences: Sentences::Given,
            links: Vec::new(),
        }
    }

    /// The same page with these link targets (control characters as spaces).
    pub fn with_links(mut self, links: Vec<String>) -> IndexedPage {
        self.links = links.iter().map(|link| sanitize(link)).collect();
        self
    }

    /// Whether the text says `may refer to:`: what `wikienv.py` checks (the paper profile).
    pub fn says_may_refer_to(&self) -> bool {
        self.paragraphs
            .iter()
            .flatten()
            .any(|sentence| sentence.contains("may refer to:"))
    }

    /// Wikipedia's disambiguation pages say so in their first paragraph (`Mercury may refer
    /// to:`), or carry `(disambiguation)` in their title; an article that quotes the phrase
    /// further down is not one.
    pub fn is_disambiguation(&self) -> bool {
        self.title.ends_with("(disambiguation)")
            || self.paragraphs.first().is_some_and(|sentences| {
                sentences
                    .iter()
                    .any(|sentence| sentence.contains("may refer to:"))
            })
    }

    /// The page the explorers read.
    pub fn to_page(&self) -> Page {
        match self.sentences {
            Sentences::Given => Page::with_sentences(self.title.clone(), self.paragraphs.clone()),
            Sentences::Unsplit => Page::new(
                self.title.clone(),
                self.paragraphs
                    .iter()
                    .map(|paragraph| paragraph.concat())
                    .collect(),
            ),
        }
    }

    /// The stored form: a marker, then paragraphs and sentences between separator characters
    /// (which the text itself never holds: the formats replace them with spaces).
    pub(super) fn encode_body(&self) -> String {
        let mut body = String::new();
        body.push(match self.sentences {
            Sentences::Given => GIVEN_SENTENCES,
            Sentences::Unsplit => WHOLE_PARAGRAPHS,
        });
        for (paragraph_idx, paragraph) in self.paragraphs.iter().enumerate() {
            if paragraph_idx > 0 {
                body.push(PARAGRAPH_SEPARATOR);
            }
            for (sentence_idx, sentence) in paragraph.iter().enumerate() {
                if sentence_idx > 0 {
                    body.push(SENTENCE_SEPARATOR);
                }
                body.push_str(sentence);
            }
        }
        body
    }

    fn decode_body(title: String, body: &str) -> IndexedPage {
        let (sentences, rest) = match body.chars().next() {
            Some(GIVEN_SENTENCES) => (Sentences::Given, &body[1..]),
            Some(WHOLE_PARAGRAPHS) => (Sentences::Unsplit, &body[1..]),
            _ => (Sentences::Unsplit, body),
        };
        let paragraphs = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(PARAGRAPH_SEPARATOR)
                .map(|paragraph| paragraph.split(SENTENCE_SEPARATOR).map(str::to_owned).collect())
                .collect()
        };
        IndexedPage {
            title,
            paragraphs,
            sentences,
            links: Vec::new(),
        }
    }
}

/// A fingerprint of an index's pages that does not depend on the order they were indexed in:
/// the wrapping sum of each page's hash (its position, title and stored body).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digest {
    sum: u128,
    pages: u64,
}

impl Digest {
    pub fn add(&mut self, ordinal: u64, page: &IndexedPage) {
        self.add_body(ordinal, &page.title, &page.encode_body());
    }

    /// [`Digest::add`] for a page whose stored body is known.
    pub(super) fn add_body(&mut self, ordinal: u64, title: &str, body: &str) {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&ordinal.to_le_bytes());
        hasher.update(title.as_bytes());
        hasher.update(&[0]);
        hasher.update(body.as_bytes());
        self.sum = self.sum.wrapping_add(hasher.digest128());
        self.pages += 1;
    }

    /// `{label}-{16 hex digits}`: the snapshot id.
    pub fn snapshot(&self, label: &str) -> String {
        let mut bytes = self.sum.to_le_bytes().to_vec();
        bytes.extend_from_slice(&self.pages.to_le_bytes());
        format!("{label}-{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
    }
}

/// Text from a dump with the characters the stored body uses as separators (and other C0
/// controls but tab and newline) turned into spaces.
pub fn sanitize(text: &str) -> String {
    if !has_control(text) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| if is_replaced(c) { ' ' } else { c })
        .collect()
}

/// [`sanitize`] for a string the caller gives up: kept as it is when it holds no control
/// character (most text), without a copy.
pub fn sanitized(text: String) -> String {
    if has_control(text.as_str()) {
        sanitize(&text)
    } else {
        text
    }
}

/// The characters [`sanitize`] turns into spaces.
fn is_replaced(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// Whether `text` may hold a character [`sanitize`] replaces, read a byte at a time: the
/// controls are U+0000–U+001F, U+007F and U+0080–U+009F (UTF-8 `C2 80`–`C2 9F`); any `C2`
/// lead byte sends the text to the slow path, which decides.
fn has_control(text: &str) -> bool {
    text.bytes()
        .any(|byte| (byte < 0x20 && byte != b'\n' && byte != b'\t') || byte == 0x7f || byte == 0xc2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_round_trip() {
        let pages = [
            IndexedPage::split(
                "A",
                vec![vec!["One.".into(), " Two.".into()], vec!["Three.".into()]],
            ),
            IndexedPage::unsplit("B", vec!["Whole paragraph. Another.".into(), "Second.".into()]),
            IndexedPage::split("C", Vec::new()),
        ];
        for page in pages {
            let decoded = IndexedPage::decode_body(page.title.clone(), &page.encode_body());
            assert_eq!(decoded, page);
        }
    }

    #[test]
    fn disambiguation_pages() {
        let page = IndexedPage::split("Mercury", vec![vec!["Mercury may refer to:".into()]]);
        assert!(page.is_disambiguation());
        assert!(IndexedPage::split("Viva (disambiguation)", Vec::new()).is_disambiguation());
        assert!(!IndexedPage::split("Mercury (planet)", vec![vec!["A planet.".into()]]).is_disambiguation());
    }

    #[test]
    fn separators_never_survive_sanitizing() {
        assert_eq!(sanitize("a\u{1e}b\u{1f}c\u{0}d\te\nf"), "a b c d\te\nf");
    }

    #[test]
    fn the_fast_path_replaces_exactly_the_control_characters() {
        // C0 and C1 controls, DEL, and their neighbours that are kept (`C2` lead bytes of
        // printable characters, accents, other scripts).
        let samples = [
            "plain text, nothing to replace",
            "\u{7f}del",
            "c1 \u{80} \u{85} \u{9f} end",
            "kept: \u{a0}\u{a9}\u{bf} caf\u{e9} \u{65e5}\u{672c} \u{1f600}",
            "tab\tand\nnewline kept, \r not",
            "",
        ];
        for text in samples {
            let slow: String = text
                .chars()
                .map(|c| {
                    if c.is_control() && c != '\n' && c != '\t' {
                        ' '
                    } else {
                        c
                    }
                })
                .collect();
            assert_eq!(sanitize(text), slow, "{text:?}");
            assert_eq!(sanitized(text.to_owned()), slow, "{text:?}");
        }
        // Every character of the first 0x3000 code points, alone and between letters.
        for code in 0..0x3000u32 {
            let Some(c) = char::from_u32(code) else { continue };
            let text = format!("a{c}b");
            let expected = if c.is_control() && c != '\n' && c != '\t' {
                "a b".to_owned()
            } else {
                text.clone()
            };
            assert_eq!(sanitized(text.clone()), expected, "U+{code:04X}");
            assert_eq!(sanitize(&text), expected, "U+{code:04X}");
        }
    }
}
