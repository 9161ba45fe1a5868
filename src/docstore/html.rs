//! HTML → search outcome, pure and synchronous, for both profiles.
//!
//! A small purpose-built reader instead of a full HTML5 tree builder: a MediaWiki page is
//! well-formed, and the `paper` profile must match BeautifulSoup's `html.parser` builder, which
//! is not HTML5 either — elements nest exactly as written, an end tag closes the most recent open
//! element of its name (and everything opened inside it), a stray end tag is ignored, text inside
//! `script`, `style`, `template`, `rt` and `rp` is not part of `get_text()`. It turns a 77 KB
//! article into an observation in well under a millisecond and never panics on malformed input.
//!
//! The document is kept as a flat list of events (open, text, close) in document order: an
//! element's text is the visible text between its open and close events.

use std::borrow::Cow;
use std::collections::HashMap;

use super::entities::ENTITIES;
use super::page::{Page, TextBudget, collapse_whitespace, is_python_space, python_strip};
use super::python::clean_str;
use crate::profile::Profile;

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

/// How many result headings a results page is read for (MediaWiki shows 20; a miss offers 5).
const MAX_RESULT_TITLES: usize = 20;
/// How many list items of a disambiguation page are read for entries (a miss offers 10).
const MAX_DISAMBIGUATION_ITEMS: usize = 200;
/// The most of an element's text a title or a section heading is read from, in bytes.
const TITLE_LIMIT: usize = 1024;

/// Reads a `/w/index.php?search=...` response under `profile`'s rules.
pub fn parse_search_page(html: &str, profile: Profile) -> SearchOutcome {
    let document = Document::parse(html);
    match profile {
        Profile::Paper => paper_outcome(&document),
        Profile::Default => default_outcome(&document),
    }
}

// ---------------------------------------------------------------------------------------------
// The `paper` profile: wikienv.py's BeautifulSoup scrape.

fn paper_outcome(doc: &Document<'_>) -> SearchOutcome {
    let mut budget = TextBudget::page();
    let headings: Vec<usize> = doc
        .elements_named(Tag::Div)
        .filter(|&el| doc.has_class(el, "mw-search-result-heading"))
        .take(MAX_RESULT_TITLES)
        .collect();
    if !headings.is_empty() {
        // `[clean_str(div.get_text().strip()) for div in result_divs]`, within the page budget.
        let mut titles = Vec::new();
        for el in headings {
            if budget.is_spent() {
                break;
            }
            titles.push(clean_str(budget.take(doc.stripped_text(el))));
        }
        return SearchOutcome::Results(titles);
    }
    // `soup.find_all("p") + soup.find_all("ul")`: every <p> first, then every <ul>, each
    // `get_text().strip()`. Nested blocks share their text: each is a range of one buffer.
    let blocks: Vec<usize> = doc
        .elements_named(Tag::P)
        .chain(doc.elements_named(Tag::Ul))
        .collect();
    const MAY_REFER_TO: &str = "may refer to:";
    let occurrences = doc.occurrences(MAY_REFER_TO);
    let disambiguation = blocks
        .iter()
        .any(|&el| doc.text_contains(el, MAY_REFER_TO, &occurrences));
    // `len(p.split(" ")) > 2`: at least two single spaces. The kept text is capped by the page
    // budget: past it (only a pathological page gets there) the rest of the page is dropped.
    let mut paragraphs: Vec<String> = Vec::new();
    for el in blocks {
        if doc.elements[el].stripped_spaces < 2 {
            continue;
        }
        let block = budget.take(doc.stripped_text(el));
        if block.is_empty() {
            break;
        }
        paragraphs.push(clean_str(block));
    }
    let page = Page::new(paper_title(doc), paragraphs);
    if disambiguation {
        return SearchOutcome::Disambiguation {
            entries: Vec::new(),
            page,
        };
    }
    // A zero-results page has no result headings either: wikienv.py reads it as an article.
    SearchOutcome::Article(page)
}

fn paper_title(doc: &Document<'_>) -> String {
    let title = doc
        .elements_named(Tag::Title)
        .next()
        .map(|el| doc.text_prefix(el, TITLE_LIMIT))
        .unwrap_or_default();
    let title = python_strip(title);
    title.strip_suffix(" - Wikipedia").unwrap_or(title).to_owned()
}

// ---------------------------------------------------------------------------------------------
// The `default` profile: the article body only.

fn default_outcome(doc: &Document<'_>) -> SearchOutcome {
    let headings: Vec<usize> = doc
        .elements_named(Tag::Div)
        .filter(|&el| doc.has_class(el, "mw-search-result-heading"))
        .take(MAX_RESULT_TITLES)
        .collect();
    if !headings.is_empty() {
        let mut titles: Vec<String> = Vec::new();
        for el in headings {
            let title = result_title(doc, el);
            if !title.is_empty() && !titles.contains(&title) {
                titles.push(title);
            }
        }
        return SearchOutcome::Results(titles);
    }
    let nonefound = doc.elements().any(|el| doc.has_class(el, "mw-search-nonefound"))
        || doc
            .elements_named(Tag::P)
            .take(50)
            .any(|el| python_strip(doc.text(el)).starts_with("There were no results matching the query"));
    if nonefound {
        return SearchOutcome::NoResults;
    }
    let root = content_root(doc);
    let paragraphs = body_paragraphs(doc, root);
    let page = Page::new(default_title(doc), paragraphs);
    if is_disambiguation(doc, &page) {
        let entries = disambiguation_entries(doc, root);
        if !entries.is_empty() {
            return SearchOutcome::Disambiguation { entries, page };
        }
    }
    SearchOutcome::Article(page)
}

/// A result heading's title: the text of its link, without `(redirect from …)` and the like.
fn result_title(doc: &Document<'_>, heading: usize) -> String {
    let link = doc.descendants(heading).find(|&el| doc.tag(el) == Tag::A);
    let text = match link {
        Some(link) => doc.text_prefix(link, TITLE_LIMIT),
        None => {
            let text = doc.text_prefix(heading, TITLE_LIMIT);
            let cut = text
                .find("(redirect from")
                .or_else(|| text.find("(section "))
                .unwrap_or(text.len());
            &text[..cut]
        }
    };
    collapse_whitespace(text)
}

/// The article body: `.mw-parser-output` (the outermost one), else `#mw-content-text`, else
/// `<body>`, else the whole document.
fn content_root(doc: &Document<'_>) -> Option<usize> {
    doc.elements()
        .find(|&el| doc.has_class(el, "mw-parser-output"))
        .or_else(|| {
            doc.elements()
                .find(|&el| doc.attr(el, "id").as_deref() == Some("mw-content-text"))
        })
        .or_else(|| doc.elements_named(Tag::Body).next())
}

fn default_title(doc: &Document<'_>) -> String {
    let heading = doc
        .elements_named(Tag::H(1))
        .find(|&el| doc.attr(el, "id").as_deref() == Some("firstHeading"))
        .or_else(|| doc.elements_named(Tag::H(1)).next());
    if let Some(heading) = heading {
        let title = collapse_whitespace(doc.text_prefix(heading, TITLE_LIMIT));
        if !title.is_empty() {
            return title;
        }
    }
    let title = doc
        .elements_named(Tag::Title)
        .next()
        .map(|el| doc.text_prefix(el, TITLE_LIMIT))
        .unwrap_or_default();
    let title = collapse_whitespace(title);
    title.strip_suffix(" - Wikipedia").unwrap_or(&title).to_owned()
}

/// Classes of elements that are not article prose: navigation, references, maintenance boxes,
/// coordinates, edit links, captions.
const EXCLUDED_CLASSES: &[&str] = &[
    "ambox",
    "authority-control",
    "catlinks",
    "coordinates",
    "dmbox",
    "gallery",
    "geo",
    "geo-multi-punct",
    "geo-nondefault",
    "hatnote",
    "infobox",
    "metadata",
    "mw-cite-backlink",
    "mw-editsection",
    "mw-empty-elt",
    "mw-jump-link",
    "mw-ref",
    "mw-references-wrap",
    "mwe-math-mathml-display",
    "mwe-math-mathml-inline",
    "navbox",
    "navbox-styles",
    "noprint",
    "portalbox",
    "printfooter",
    "refbegin",
    "reference",
    "references",
    "reflist",
    "shortdescription",
    "sidebar",
    "sistersitebox",
    "thumb",
    "toc",
    "vertical-navbox",
    "Z3988",
];

const EXCLUDED_IDS: &[&str] = &[
    "coordinates",
    "toc",
    "siteSub",
    "contentSub",
    "catlinks",
    "disambigbox",
];

/// Section headings whose content is not article prose.
const SKIPPED_SECTIONS: &[&str] = &[
    "bibliography",
    "citations",
    "external links",
    "footnotes",
    "further reading",
    "notes",
    "notes and references",
    "references",
    "see also",
    "sources",
    "works cited",
];

fn is_excluded(doc: &Document<'_>, el: usize) -> bool {
    match doc.tag(el) {
        Tag::Script
        | Tag::Style
        | Tag::Template
        | Tag::Rt
        | Tag::Rp
        | Tag::Table
        | Tag::Figure
        | Tag::Math
        | Tag::Noscript
        | Tag::Title => return true,
        _ => {}
    }
    let Some(source) = doc.attr_source(el) else {
        return false;
    };
    if source.is_empty() {
        return false;
    }
    for (name, value) in attributes(source) {
        let excluded = if name.eq_ignore_ascii_case("class") {
            value
                .split_ascii_whitespace()
                .any(|class| EXCLUDED_CLASSES.contains(&class))
        } else if name.eq_ignore_ascii_case("id") {
            EXCLUDED_IDS.contains(&value)
        } else if name.eq_ignore_ascii_case("style") && value.contains("none") {
            let compact: String = value.chars().filter(|c| !c.is_whitespace()).collect();
            compact.to_ascii_lowercase().contains("display:none")
        } else {
            false
        };
        if excluded {
            return true;
        }
    }
    false
}

/// The heading level of a section heading, and whether its section is skipped.
fn skipped_heading(doc: &Document<'_>, el: usize) -> Option<u8> {
    let Tag::H(level) = doc.tag(el) else {
        return None;
    };
    let text = collapse_whitespace(doc.text_prefix(el, TITLE_LIMIT));
    let text = text.split('[').next().unwrap_or("").trim().to_lowercase();
    SKIPPED_SECTIONS.contains(&text.as_str()).then_some(level)
}

/// What the walk over the article body does at each element.
struct BodyWalk<'d, 'a> {
    doc: &'d Document<'a>,
    paragraphs: Vec<String>,
    buffer: String,
    /// How many paragraph-like elements (`p`, `li`, `dd`, `dt`) are open.
    depth: usize,
    /// The page's text allowance: past it, the rest of the body is dropped.
    budget: TextBudget,
}

impl BodyWalk<'_, '_> {
    fn flush(&mut self) {
        if !self.buffer.is_empty() {
            let paragraph = collapse_whitespace(&self.buffer);
            let paragraph = tidy_punctuation(&paragraph);
            let kept = self.budget.take(&paragraph);
            if !kept.is_empty() {
                self.paragraphs.push(kept.to_owned());
            }
            self.buffer.clear();
        }
    }
}

/// Removes the space a dropped element (a reference mark, a hidden span) left before punctuation.
fn tidy_punctuation(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' '
            && chars
                .peek()
                .is_some_and(|next| matches!(next, '.' | ',' | ';' | ':' | ')'))
        {
            continue;
        }
        out.push(c);
    }
    out
}

/// Walks the body from `root`, calling `visit` on every kept open event; skips excluded elements
/// and skipped sections. Returns the events visited as (event index, event).
fn walk_body(doc: &Document<'_>, root: Option<usize>, mut visit: impl FnMut(Event)) {
    let (start, end) = match root {
        Some(root) => (doc.elements[root].open + 1, doc.elements[root].close),
        None => (0, doc.events.len()),
    };
    let mut idx = start;
    let mut skipping_section: Option<u8> = None;
    while idx < end {
        let event = doc.events[idx];
        if let Event::Open(el) = event {
            if let Tag::H(level) = doc.tag(el) {
                match skipping_section {
                    Some(skipped) if level > skipped => {}
                    _ => skipping_section = skipped_heading(doc, el),
                }
                // Headings are not prose: jump past them.
                idx = doc.elements[el].close + 1;
                visit(Event::Close(el));
                continue;
            }
            if skipping_section.is_some() || is_excluded(doc, el) {
                idx = doc.elements[el].close + 1;
                continue;
            }
        }
        if skipping_section.is_none() {
            visit(event);
        }
        idx += 1;
    }
}

fn body_paragraphs(doc: &Document<'_>, root: Option<usize>) -> Vec<String> {
    let mut walk = BodyWalk {
        doc,
        paragraphs: Vec::new(),
        buffer: String::new(),
        depth: 0,
        budget: TextBudget::page(),
    };
    walk_body(doc, root, |event| match event {
        Event::Open(el) => match walk.doc.tag(el) {
            Tag::P | Tag::Li | Tag::Dd | Tag::Dt => {
                walk.flush();
                walk.depth += 1;
            }
            Tag::Br => walk.buffer.push(' '),
            // Inline math: the TeX of its fallback image stands in for the MathML.
            Tag::Img
                if walk.depth > 0
                    && (walk.doc.has_class(el, "mwe-math-fallback-image-inline")
                        || walk.doc.has_class(el, "mwe-math-fallback-image-display")) =>
            {
                if let Some(alt) = walk.doc.attr(el, "alt") {
                    walk.buffer.push_str(unwrap_tex(&alt));
                }
            }
            tag if tag.is_block() => walk.flush(),
            _ => {}
        },
        Event::Close(el) => match walk.doc.tag(el) {
            Tag::P | Tag::Li | Tag::Dd | Tag::Dt => {
                walk.flush();
                walk.depth = walk.depth.saturating_sub(1);
            }
            tag if tag.is_block() => walk.flush(),
            _ => {}
        },
        Event::Text(start, end) => {
            if walk.depth > 0 && !walk.budget.is_spent() {
                walk.buffer.push_str(&walk.doc.buffer[start..end]);
            }
        }
    });
    walk.flush();
    walk.paragraphs
}

/// `{\displaystyle x^{2}}` → `x^{2}`.
fn unwrap_tex(alt: &str) -> &str {
    let trimmed = alt.trim();
    for prefix in ["{\\displaystyle ", "{\\textstyle ", "{\\scriptstyle "] {
        if let Some(inner) = trimmed
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix('}'))
        {
            return inner.trim();
        }
    }
    trimmed
}

fn is_disambiguation(doc: &Document<'_>, page: &Page) -> bool {
    let marked = doc.elements().any(|el| {
        // Cheap test first: every marker spells `disambig` in the tag's attributes.
        if !doc
            .attr_source(el)
            .is_some_and(|source| source.contains("isambig"))
        {
            return false;
        }
        doc.attr(el, "id").as_deref() == Some("disambigbox")
            || doc.has_class(el, "dmbox-disambig")
            || (matches!(doc.tag(el), Tag::Meta | Tag::Link)
                && (doc.attr(el, "property").as_deref() == Some("mw:PageProp/disambiguation")
                    || doc.attr(el, "rel").as_deref() == Some("mw:PageProp/disambiguation")))
    });
    marked
        || page.paragraphs.first().is_some_and(|first| {
            let first = first.trim_end();
            first.ends_with("may refer to:") || first.ends_with("may also refer to:")
        })
}

/// The entries of a disambiguation page: each list item's first link (its title), in page order.
fn disambiguation_entries(doc: &Document<'_>, root: Option<usize>) -> Vec<String> {
    let mut items: Vec<usize> = Vec::new();
    walk_body(doc, root, |event| {
        if let Event::Open(el) = event
            && doc.tag(el) == Tag::Li
        {
            items.push(el);
        }
    });
    let mut entries: Vec<String> = Vec::new();
    for item in items.into_iter().take(MAX_DISAMBIGUATION_ITEMS) {
        let link = doc
            .descendants(item)
            .take_while(|&el| !matches!(doc.tag(el), Tag::Ul | Tag::Ol))
            .find(|&el| doc.tag(el) == Tag::A && !doc.has_class(el, "new") && !doc.has_class(el, "external"));
        let entry = match link {
            Some(link) => doc
                .attr(link, "title")
                .map(|title| collapse_whitespace(&title))
                .filter(|title| !title.is_empty())
                .unwrap_or_else(|| collapse_whitespace(doc.text_prefix(link, TITLE_LIMIT))),
            None => {
                let text = collapse_whitespace(doc.text_prefix(item, TITLE_LIMIT));
                text.split(',').next().unwrap_or("").trim().to_owned()
            }
        };
        if !entry.is_empty() && !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    entries
}

// ---------------------------------------------------------------------------------------------
// The document: tags, text and the flat event list.

/// The tags the extractors care about; everything else is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    A,
    Blockquote,
    Body,
    Br,
    Dd,
    Div,
    Dl,
    Dt,
    Figure,
    H(u8),
    Img,
    Li,
    Link,
    Math,
    Meta,
    Noscript,
    Ol,
    P,
    Pre,
    Rp,
    Rt,
    Script,
    Section,
    Style,
    Table,
    Template,
    Textarea,
    Title,
    Ul,
    Other,
}

impl Tag {
    fn from_name(name: &str) -> Tag {
        let mut lower = [0u8; 10];
        if name.len() > lower.len() {
            return Tag::Other;
        }
        for (slot, byte) in lower.iter_mut().zip(name.bytes()) {
            *slot = byte.to_ascii_lowercase();
        }
        match &lower[..name.len()] {
            b"a" => Tag::A,
            b"blockquote" => Tag::Blockquote,
            b"body" => Tag::Body,
            b"br" => Tag::Br,
            b"dd" => Tag::Dd,
            b"div" => Tag::Div,
            b"dl" => Tag::Dl,
            b"dt" => Tag::Dt,
            b"figure" => Tag::Figure,
            b"h1" => Tag::H(1),
            b"h2" => Tag::H(2),
            b"h3" => Tag::H(3),
            b"h4" => Tag::H(4),
            b"h5" => Tag::H(5),
            b"h6" => Tag::H(6),
            b"img" => Tag::Img,
            b"li" => Tag::Li,
            b"link" => Tag::Link,
            b"math" => Tag::Math,
            b"meta" => Tag::Meta,
            b"noscript" => Tag::Noscript,
            b"ol" => Tag::Ol,
            b"p" => Tag::P,
            b"pre" => Tag::Pre,
            b"rp" => Tag::Rp,
            b"rt" => Tag::Rt,
            b"script" => Tag::Script,
            b"section" => Tag::Section,
            b"style" => Tag::Style,
            b"table" => Tag::Table,
            b"template" => Tag::Template,
            b"textarea" => Tag::Textarea,
            b"title" => Tag::Title,
            b"ul" => Tag::Ul,
            _ => Tag::Other,
        }
    }

    /// Text inside these is not part of `get_text()` (BeautifulSoup's string containers).
    fn hides_text(self) -> bool {
        matches!(self, Tag::Script | Tag::Style | Tag::Template | Tag::Rt | Tag::Rp)
    }

    fn preserves_whitespace(self) -> bool {
        matches!(self, Tag::Pre | Tag::Textarea)
    }

    /// Whose content is raw text up to the matching end tag (`html.parser`'s CDATA elements).
    fn is_raw_text(self) -> bool {
        matches!(self, Tag::Script | Tag::Style)
    }

    fn is_block(self) -> bool {
        matches!(
            self,
            Tag::Ul
                | Tag::Ol
                | Tag::Dl
                | Tag::Div
                | Tag::Table
                | Tag::Blockquote
                | Tag::Section
                | Tag::H(_)
                | Tag::Figure
                | Tag::Pre
        )
    }
}

/// Void elements, as BeautifulSoup's HTML builder knows them.
fn is_void(name: &str) -> bool {
    let mut lower = [0u8; 8];
    if name.len() > lower.len() {
        return false;
    }
    for (slot, byte) in lower.iter_mut().zip(name.bytes()) {
        *slot = byte.to_ascii_lowercase();
    }
    matches!(
        &lower[..name.len()],
        b"area"
            | b"base"
            | b"basefont"
            | b"bgsound"
            | b"br"
            | b"col"
            | b"command"
            | b"embed"
            | b"frame"
            | b"hr"
            | b"image"
            | b"img"
            | b"input"
            | b"isindex"
            | b"keygen"
            | b"link"
            | b"menuitem"
            | b"meta"
            | b"nextid"
            | b"param"
            | b"source"
            | b"spacer"
            | b"track"
            | b"wbr"
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Open(usize),
    /// Visible text: a range of the document's text buffer.
    Text(usize, usize),
    Close(usize),
}

#[derive(Debug)]
struct Element {
    tag: Tag,
    /// The tag name as written, for end-tag matching of `Other` elements.
    name: (usize, usize),
    /// The attribute source between the name and `>`.
    attrs: (usize, usize),
    open: usize,
    close: usize,
    /// `get_text()`: the range of the text buffer written between its open and close.
    text: (usize, usize),
    /// The first non-whitespace character written after the element opened, and how many
    /// `' '` the buffer held before it (set when that character arrives).
    first_solid: Option<(usize, usize)>,
    /// `get_text().strip()`: `text` without Python whitespace at either end.
    stripped: (usize, usize),
    /// How many `' '` the stripped text holds: `len(text.split(" ")) - 1`.
    stripped_spaces: usize,
}

/// A parsed page. Every element's text is a range of one buffer holding all the visible text
/// in document order, so the text of nested elements is never copied per element: reading the
/// page is linear in its size whatever the nesting.
struct Document<'a> {
    src: &'a str,
    /// The visible text of the whole document, character references decoded.
    buffer: String,
    events: Vec<Event>,
    elements: Vec<Element>,
    /// Steps the builder took: events written plus open elements examined by end tags. Linear in
    /// the page's size; the tests hold it to that.
    work: usize,
}

impl<'a> Document<'a> {
    fn parse(src: &'a str) -> Document<'a> {
        let mut builder = Builder {
            doc: Document {
                src,
                buffer: String::with_capacity(src.len() / 4),
                events: Vec::with_capacity(src.len() / 24),
                elements: Vec::with_capacity(src.len() / 64),
                work: 0,
            },
            stack: Vec::new(),
            open_names: HashMap::new(),
            hiding: 0,
            preserving: 0,
            spaces: 0,
            last_solid: (0, 0),
            awaiting_solid: Vec::new(),
        };
        builder.run();
        builder.finish()
    }

    fn elements(&self) -> impl Iterator<Item = usize> + '_ {
        0..self.elements.len()
    }

    fn elements_named(&self, tag: Tag) -> impl Iterator<Item = usize> + '_ {
        self.elements().filter(move |&el| self.elements[el].tag == tag)
    }

    fn tag(&self, el: usize) -> Tag {
        self.elements[el].tag
    }

    /// Elements inside `el`, in document order.
    fn descendants(&self, el: usize) -> impl Iterator<Item = usize> + '_ {
        let element = &self.elements[el];
        self.events[element.open + 1..element.close]
            .iter()
            .filter_map(|event| match event {
                Event::Open(inner) => Some(*inner),
                _ => None,
            })
    }

    /// BeautifulSoup's `get_text()`: the visible text inside `el`, concatenated.
    fn text(&self, el: usize) -> &str {
        let (start, end) = self.elements[el].text;
        &self.buffer[start..end]
    }

    /// At most the first `limit` bytes of `el`'s text (cut at a character boundary).
    fn text_prefix(&self, el: usize, limit: usize) -> &str {
        let text = self.text(el);
        &text[..text.floor_char_boundary(limit)]
    }

    /// `get_text().strip()`.
    fn stripped_text(&self, el: usize) -> &str {
        let (start, end) = self.elements[el].stripped;
        &self.buffer[start..end]
    }

    /// Where `needle` starts in the text buffer, in order.
    fn occurrences(&self, needle: &str) -> Vec<usize> {
        memchr::memmem::find_iter(self.buffer.as_bytes(), needle.as_bytes()).collect()
    }

    /// Whether `el`'s text contains `needle`, given `occurrences` of it: a binary search, not a
    /// scan of the element's text.
    fn text_contains(&self, el: usize, needle: &str, occurrences: &[usize]) -> bool {
        let (start, end) = self.elements[el].text;
        let first = occurrences.partition_point(|&offset| offset < start);
        occurrences
            .get(first)
            .is_some_and(|&offset| offset + needle.len() <= end)
    }

    fn attr_source(&self, el: usize) -> Option<&'a str> {
        let (start, end) = self.elements[el].attrs;
        self.src.get(start..end)
    }

    /// An attribute's value, character references decoded.
    fn attr(&self, el: usize, name: &str) -> Option<Cow<'a, str>> {
        let source = self.attr_source(el)?;
        attributes(source)
            .find(|(attr, _)| attr.eq_ignore_ascii_case(name))
            .map(|(_, value)| decode_attribute(value))
    }

    /// `class` holds `name` as one of its whitespace-separated values.
    fn has_class(&self, el: usize, name: &str) -> bool {
        let Some(source) = self.attr_source(el) else {
            return false;
        };
        if !source.contains(name) {
            return false;
        }
        self.attr(el, "class")
            .is_some_and(|class| class.split_ascii_whitespace().any(|value| value == name))
    }
}

fn count_spaces(text: &str) -> usize {
    memchr::memchr_iter(b' ', text.as_bytes()).count()
}

/// A tag name as end tags match it: ASCII-lowercased.
fn name_key(name: &str) -> Cow<'_, str> {
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    }
}

struct Builder<'a> {
    doc: Document<'a>,
    /// Open elements, innermost last.
    stack: Vec<usize>,
    /// How many elements of each (lowercased) name are open: an end tag with no open element of
    /// its name is dropped without walking the stack.
    open_names: HashMap<Cow<'a, str>, usize>,
    /// How many open elements hide their text.
    hiding: usize,
    /// How many open `pre` and `textarea` elements keep whitespace-only strings as they are.
    preserving: usize,
    /// How many `' '` the text buffer holds.
    spaces: usize,
    /// The end of the last non-whitespace character in the buffer, and the `' '` before it.
    last_solid: (usize, usize),
    /// Open elements whose text has had no non-whitespace character yet.
    awaiting_solid: Vec<usize>,
}

impl<'a> Builder<'a> {
    fn run(&mut self) {
        let src = self.doc.src;
        let bytes = src.as_bytes();
        let mut pos = 0;
        let mut text_start = 0;
        while let Some(offset) = memchr(b'<', &bytes[pos..]) {
            let lt = pos + offset;
            match self.markup(lt) {
                Some(Markup::Skip(end)) => {
                    self.text(text_start, lt);
                    pos = end;
                    text_start = end;
                }
                Some(Markup::CData(inner, end)) => {
                    self.text(text_start, lt);
                    self.text(inner.0, inner.1);
                    pos = end;
                    text_start = end;
                }
                Some(Markup::End(name, end)) => {
                    self.text(text_start, lt);
                    self.close_tag(name);
                    pos = end;
                    text_start = end;
                }
                Some(Markup::Start {
                    name,
                    attrs,
                    end,
                    self_closing,
                }) => {
                    self.text(text_start, lt);
                    let el = self.open_tag(name, attrs, self_closing);
                    pos = end;
                    text_start = end;
                    if let Some(el) = el
                        && self.doc.elements[el].tag.is_raw_text()
                    {
                        // Raw text up to `</name`, case-insensitively.
                        let tag_name = &src[name.0..name.1];
                        let close = find_end_tag(src, end, tag_name).unwrap_or(src.len());
                        self.text(end, close);
                        pos = close;
                        text_start = close;
                    }
                }
                None => pos = lt + 1,
            }
        }
        self.text(text_start, src.len());
    }

    fn finish(mut self) -> Document<'a> {
        while let Some(el) = self.stack.pop() {
            self.close(el);
        }
        self.doc
    }

    fn text(&mut self, start: usize, end: usize) {
        if start >= end || self.hiding > 0 {
            return;
        }
        let raw = &self.doc.src[start..end];
        // BeautifulSoup's `endData`: a string of ASCII whitespace only becomes one newline (when
        // it holds one) or one space, except inside `pre` and `textarea`.
        if self.preserving == 0
            && raw
                .bytes()
                .all(|b| matches!(b, b' ' | b'\n' | b'\t' | b'\x0c' | b'\r'))
        {
            let collapsed = if raw.contains('\n') { "\n" } else { " " };
            self.push_text(collapsed);
            return;
        }
        if raw.contains('&') {
            let decoded = decode_text(raw);
            self.push_text(&decoded);
        } else {
            self.push_text(raw);
        }
    }

    /// Appends visible text to the buffer, keeping the whitespace bookkeeping `strip()` needs.
    fn push_text(&mut self, piece: &str) {
        let start = self.doc.buffer.len();
        if let Some(first) = piece.find(|c: char| !is_python_space(c)) {
            if !self.awaiting_solid.is_empty() {
                let mark = (start + first, self.spaces + count_spaces(&piece[..first]));
                for el in self.awaiting_solid.drain(..) {
                    self.doc.elements[el].first_solid = Some(mark);
                }
            }
            let last_end = piece
                .char_indices()
                .rev()
                .find(|&(_, c)| !is_python_space(c))
                .map_or(piece.len(), |(idx, c)| idx + c.len_utf8());
            self.last_solid = (start + last_end, self.spaces + count_spaces(&piece[..last_end]));
        }
        self.spaces += count_spaces(piece);
        self.doc.buffer.push_str(piece);
        self.doc.work += 1;
        self.doc.events.push(Event::Text(start, self.doc.buffer.len()));
    }

    fn open_tag(&mut self, name: (usize, usize), attrs: (usize, usize), self_closing: bool) -> Option<usize> {
        let src = self.doc.src;
        let name_text = &src[name.0..name.1];
        let tag = Tag::from_name(name_text);
        let el = self.doc.elements.len();
        let open = self.doc.events.len();
        let text_start = self.doc.buffer.len();
        self.doc.elements.push(Element {
            tag,
            name,
            attrs,
            open,
            close: open,
            text: (text_start, text_start),
            first_solid: None,
            stripped: (text_start, text_start),
            stripped_spaces: 0,
        });
        self.doc.work += 1;
        self.doc.events.push(Event::Open(el));
        if self_closing || is_void(name_text) {
            self.close(el);
            return None;
        }
        if tag.hides_text() {
            self.hiding += 1;
        }
        if tag.preserves_whitespace() {
            self.preserving += 1;
        }
        self.awaiting_solid.push(el);
        *self.open_names.entry(name_key(name_text)).or_insert(0) += 1;
        self.stack.push(el);
        Some(el)
    }

    fn close(&mut self, el: usize) {
        let close = self.doc.events.len();
        let end = self.doc.buffer.len();
        let (last_solid, spaces_to_last) = self.last_solid;
        let element = &mut self.doc.elements[el];
        element.close = close;
        element.text.1 = end;
        match element.first_solid {
            // The first non-whitespace character is inside the element, so the last one written
            // so far is too: the stripped text runs from one to the other.
            Some((first, spaces_before)) if first < end => {
                element.stripped = (first, last_solid);
                element.stripped_spaces = spaces_to_last - spaces_before;
            }
            _ => element.stripped = (end, end),
        }
        self.doc.work += 1;
        self.doc.events.push(Event::Close(el));
    }

    /// `_popToTag`: closes the most recent open element named `name` and everything inside it.
    fn close_tag(&mut self, name: (usize, usize)) {
        let src = self.doc.src;
        let wanted = name_key(&src[name.0..name.1]);
        if self.open_names.get(&wanted).is_none_or(|&count| count == 0) {
            // A stray end tag: ignored.
            return;
        }
        while let Some(el) = self.stack.pop() {
            self.doc.work += 1;
            let element = &self.doc.elements[el];
            let tag = element.tag;
            let key = name_key(&src[element.name.0..element.name.1]);
            if let Some(count) = self.open_names.get_mut(&key) {
                *count -= 1;
            }
            if tag.hides_text() {
                self.hiding -= 1;
            }
            if tag.preserves_whitespace() {
                self.preserving -= 1;
            }
            self.close(el);
            if key == wanted {
                break;
            }
        }
    }

    /// What starts at `lt` (a `<`): `None` when it is just a character of text.
    fn markup(&self, lt: usize) -> Option<Markup> {
        let src = self.doc.src;
        let bytes = src.as_bytes();
        let next = *bytes.get(lt + 1)?;
        match next {
            b'!' => {
                if bytes[lt..].starts_with(b"<!--") {
                    let end = find(src, lt + 4, "-->").map_or(src.len(), |idx| idx + 3);
                    Some(Markup::Skip(end))
                } else if bytes[lt..].starts_with(b"<![CDATA[") {
                    let inner_start = lt + 9;
                    let inner_end = find(src, inner_start, "]]>").unwrap_or(src.len());
                    Some(Markup::CData(
                        (inner_start, inner_end),
                        (inner_end + 3).min(src.len()),
                    ))
                } else {
                    let end = memchr(b'>', &bytes[lt..]).map_or(src.len(), |idx| lt + idx + 1);
                    Some(Markup::Skip(end))
                }
            }
            b'?' => {
                let end = memchr(b'>', &bytes[lt..]).map_or(src.len(), |idx| lt + idx + 1);
                Some(Markup::Skip(end))
            }
            b'/' => {
                let name_start = lt + 2;
                if !bytes.get(name_start)?.is_ascii_alphabetic() {
                    return None;
                }
                let name_end = name_start + bytes[name_start..].iter().position(|&b| is_name_end(b))?;
                let end = memchr(b'>', &bytes[name_end..]).map(|idx| name_end + idx + 1)?;
                Some(Markup::End((name_start, name_end), end))
            }
            b if b.is_ascii_alphabetic() => {
                let name_start = lt + 1;
                let name_end = name_start + bytes[name_start..].iter().position(|&b| is_name_end(b))?;
                let close = find_tag_end(bytes, name_end)?;
                let self_closing = close > name_end && bytes[close - 1] == b'/';
                let attrs_end = if self_closing { close - 1 } else { close };
                Some(Markup::Start {
                    name: (name_start, name_end),
                    attrs: (name_end, attrs_end.max(name_end)),
                    end: close + 1,
                    self_closing,
                })
            }
            _ => None,
        }
    }
}

enum Markup {
    /// A comment, doctype or processing instruction, up to this offset.
    Skip(usize),
    CData((usize, usize), usize),
    Start {
        name: (usize, usize),
        attrs: (usize, usize),
        end: usize,
        self_closing: bool,
    },
    End((usize, usize), usize),
}

fn is_name_end(byte: u8) -> bool {
    byte.is_ascii_whitespace() || byte == b'/' || byte == b'>'
}

/// The `>` that ends a start tag whose name ends at `from`, skipping quoted attribute values.
fn find_tag_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut idx = from;
    loop {
        let found = idx + memchr::memchr3(b'>', b'"', b'\'', bytes.get(idx..)?)?;
        let byte = bytes[found];
        if byte == b'>' {
            return Some(found);
        }
        // A quote opens a value only after `=` (possibly with spaces between).
        idx = if preceded_by_equals(bytes, from, found) {
            found + 1 + memchr(byte, &bytes[found + 1..])? + 1
        } else {
            found + 1
        };
    }
}

fn preceded_by_equals(bytes: &[u8], from: usize, idx: usize) -> bool {
    bytes[from..idx]
        .iter()
        .rev()
        .find(|byte| !byte.is_ascii_whitespace())
        .is_some_and(|&byte| byte == b'=')
}

/// The start of `</name` at or after `from`, case-insensitively, followed by a name end.
fn find_end_tag(src: &str, from: usize, name: &str) -> Option<usize> {
    let bytes = src.as_bytes();
    let mut pos = from;
    while let Some(offset) = memchr(b'<', &bytes[pos..]) {
        let lt = pos + offset;
        let candidate = lt + 2;
        if bytes.get(lt + 1) == Some(&b'/')
            && bytes
                .get(candidate..candidate + name.len())
                .is_some_and(|found| found.eq_ignore_ascii_case(name.as_bytes()))
            && bytes.get(candidate + name.len()).is_none_or(|&b| is_name_end(b))
        {
            return Some(lt);
        }
        pos = lt + 1;
    }
    None
}

fn find(src: &str, from: usize, needle: &str) -> Option<usize> {
    src.get(from..)?.find(needle).map(|idx| from + idx)
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    memchr::memchr(needle, haystack)
}

/// `name="value"`, `name='value'`, `name=value` and bare `name` pairs of an attribute source.
fn attributes(source: &str) -> impl Iterator<Item = (&str, &str)> {
    let bytes = source.as_bytes();
    let mut idx = 0;
    std::iter::from_fn(move || {
        while idx < bytes.len() && (bytes[idx].is_ascii_whitespace() || bytes[idx] == b'/') {
            idx += 1;
        }
        if idx >= bytes.len() {
            return None;
        }
        let name_start = idx;
        while idx < bytes.len() && !bytes[idx].is_ascii_whitespace() && bytes[idx] != b'=' {
            idx += 1;
        }
        let name = &source[name_start..idx];
        while idx < bytes.len() && bytes[idx].is_ascii_whitespace() {
            idx += 1;
        }
        if idx >= bytes.len() || bytes[idx] != b'=' {
            return Some((name, ""));
        }
        idx += 1;
        while idx < bytes.len() && bytes[idx].is_ascii_whitespace() {
            idx += 1;
        }
        let value = match bytes.get(idx) {
            Some(&quote @ (b'"' | b'\'')) => {
                let start = idx + 1;
                let end = memchr(quote, &bytes[start..]).map_or(bytes.len(), |offset| start + offset);
                idx = (end + 1).min(bytes.len());
                &source[start..end]
            }
            _ => {
                let start = idx;
                while idx < bytes.len() && !bytes[idx].is_ascii_whitespace() {
                    idx += 1;
                }
                &source[start..idx]
            }
        };
        Some((name, value))
    })
}

fn lookup_entity(name: &str) -> Option<char> {
    ENTITIES
        .binary_search_by(|(entity, _)| entity.cmp(&name))
        .ok()
        .map(|idx| ENTITIES[idx].1)
}

/// A numeric character reference as BeautifulSoup decodes it: below 256 through Windows-1252
/// where that differs, invalid code points as U+FFFD.
fn numeric_reference(value: u32) -> char {
    if (0x80..0xa0).contains(&value) {
        const CP1252: [u32; 32] = [
            0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152,
            0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122,
            0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
        ];
        return char::from_u32(CP1252[(value - 0x80) as usize]).unwrap_or('\u{fffd}');
    }
    if value == 0 {
        return '\u{fffd}';
    }
    char::from_u32(value).unwrap_or('\u{fffd}')
}

/// Reads `&#...;` / `&#x...;` at the start of `rest` (which begins after `&#`): the character and
/// the bytes consumed after `&#`.
fn parse_numeric(rest: &str) -> Option<(char, usize)> {
    let bytes = rest.as_bytes();
    let (radix, digits_start) = match bytes.first()? {
        b'x' | b'X' => (16, 1),
        _ => (10, 0),
    };
    let digits_len = bytes[digits_start..]
        .iter()
        .take_while(|b| {
            if radix == 16 {
                b.is_ascii_hexdigit()
            } else {
                b.is_ascii_digit()
            }
        })
        .count();
    if digits_len == 0 {
        return None;
    }
    let digits = &rest[digits_start..digits_start + digits_len];
    let value = u32::from_str_radix(digits, radix).unwrap_or(u32::MAX);
    let mut consumed = digits_start + digits_len;
    if bytes.get(consumed) == Some(&b';') {
        consumed += 1;
    }
    Some((numeric_reference(value), consumed))
}

/// Text character references, as BeautifulSoup's `html.parser` builder decodes them: an unknown
/// named reference stays as `&name` (its `;` dropped, as BeautifulSoup does).
fn decode_text(raw: &str) -> String {
    decode_references(raw, true)
}

fn decode_attribute(raw: &str) -> Cow<'_, str> {
    if raw.contains('&') {
        Cow::Owned(decode_references(raw, false))
    } else {
        Cow::Borrowed(raw)
    }
}

fn decode_references(raw: &str, drop_unknown_semicolon: bool) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        if let Some(numeric) = after.strip_prefix('#')
            && let Some((c, consumed)) = parse_numeric(numeric)
        {
            out.push(c);
            rest = &numeric[consumed..];
            continue;
        }
        let name_len = after
            .bytes()
            .enumerate()
            .take_while(|&(idx, b)| {
                if idx == 0 {
                    b.is_ascii_alphabetic()
                } else {
                    b.is_ascii_alphanumeric() || b == b'-' || b == b'.'
                }
            })
            .count();
        if name_len == 0 {
            out.push('&');
            rest = after;
            continue;
        }
        let name = &after[..name_len];
        let mut consumed = name_len;
        let semicolon = after.as_bytes().get(name_len) == Some(&b';');
        if semicolon {
            consumed += 1;
        }
        match lookup_entity(name) {
            Some(c) => out.push(c),
            None if drop_unknown_semicolon => {
                out.push('&');
                out.push_str(name);
            }
            None => {
                out.push('&');
                out.push_str(&after[..consumed]);
            }
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
