//! The `paper` profile's reader: `wikienv.py`'s BeautifulSoup scrape, byte for byte.
//!
//! BeautifulSoup's `html.parser` builder is not HTML5: elements nest exactly as written, an end
//! tag closes the most recent open element of its name (and everything opened inside it), a
//! stray end tag is ignored, text inside `script`, `style`, `template`, `rt` and `rp` is not part
//! of `get_text()`, a string of ASCII whitespace only becomes one space or newline. Text
//! character references decode as BeautifulSoup's `handle_entityref`/`handle_charref` do,
//! attribute values as Python's `html.unescape`.
//!
//! All visible text goes into one buffer in document order, and every element's `get_text()`
//! (and its `.strip()`) is a range of it: nested elements share their text instead of copying
//! it, so reading a page is linear in its size whatever the nesting.

use std::borrow::Cow;
use std::collections::HashMap;

use super::{MAX_RESULT_TITLES, TITLE_LIMIT};
use crate::docstore::SearchOutcome;
use crate::docstore::page::{Page, TextBudget, is_python_space, python_strip};
use crate::docstore::python_codecs::{
    clean_str, html_unescape, html5_entity, numeric_reference, windows_1252,
};

/// `wikienv.py`'s reading of a search response.
pub(super) fn paper_outcome(html: &str) -> SearchOutcome {
    let doc = Document::parse(html);
    let doc = &doc;
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
// The document: elements and their text.

/// The tags the scrape and the builder care about; everything else is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Div,
    P,
    Pre,
    Rp,
    Rt,
    Script,
    Style,
    Template,
    Textarea,
    Title,
    Ul,
    Other,
}

impl Tag {
    fn from_name(name: &str) -> Tag {
        let mut lower = [0u8; 8];
        if name.len() > lower.len() {
            return Tag::Other;
        }
        for (slot, byte) in lower.iter_mut().zip(name.bytes()) {
            *slot = byte.to_ascii_lowercase();
        }
        match &lower[..name.len()] {
            b"div" => Tag::Div,
            b"p" => Tag::P,
            b"pre" => Tag::Pre,
            b"rp" => Tag::Rp,
            b"rt" => Tag::Rt,
            b"script" => Tag::Script,
            b"style" => Tag::Style,
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
}

/// Void elements, as BeautifulSoup's HTML builder knows them.
pub(super) fn is_void(name: &str) -> bool {
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

#[derive(Debug)]
pub(super) struct Element {
    tag: Tag,
    /// The tag name as written, for end-tag matching of `Other` elements.
    name: (usize, usize),
    /// The attribute source between the name and `>`.
    attrs: (usize, usize),
    /// `get_text()`: the range of the text buffer written between its open and close.
    text: (usize, usize),
    /// The first non-whitespace character written after the element opened, and how many
    /// `' '` the buffer held before it (set when that character arrives).
    first_solid: Option<(usize, usize)>,
    /// `get_text().strip()`: `text` without Python whitespace at either end.
    stripped: (usize, usize),
    /// How many `' '` the stripped text holds: `len(text.split(" ")) - 1`.
    pub(super) stripped_spaces: usize,
}

/// A parsed page. Every element's text is a range of one buffer holding all the visible text
/// in document order, so the text of nested elements is never copied per element: reading the
/// page is linear in its size whatever the nesting.
pub(super) struct Document<'a> {
    src: &'a str,
    /// The visible text of the whole document, character references decoded.
    buffer: String,
    pub(super) elements: Vec<Element>,
    /// Steps the builder took: elements opened and closed, texts written, open elements
    /// examined by end tags. Linear in the page's size; the tests hold it to that.
    pub(super) work: usize,
}

impl<'a> Document<'a> {
    pub(super) fn parse(src: &'a str) -> Document<'a> {
        let mut builder = Builder {
            doc: Document {
                src,
                buffer: String::with_capacity(src.len() / 4),
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

    pub(super) fn elements(&self) -> impl Iterator<Item = usize> + '_ {
        0..self.elements.len()
    }

    fn elements_named(&self, tag: Tag) -> impl Iterator<Item = usize> + '_ {
        self.elements().filter(move |&el| self.elements[el].tag == tag)
    }

    /// BeautifulSoup's `get_text()`: the visible text inside `el`, concatenated.
    pub(super) fn text(&self, el: usize) -> &str {
        let (start, end) = self.elements[el].text;
        &self.buffer[start..end]
    }

    /// At most the first `limit` bytes of `el`'s text (cut at a character boundary).
    fn text_prefix(&self, el: usize, limit: usize) -> &str {
        let text = self.text(el);
        &text[..text.floor_char_boundary(limit)]
    }

    /// `get_text().strip()`.
    pub(super) fn stripped_text(&self, el: usize) -> &str {
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
            .map(|(_, value)| html_unescape(value))
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
pub(super) fn name_key(name: &str) -> Cow<'_, str> {
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
            match markup(src, lt) {
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
        let text = if raw.contains('&') {
            Cow::Owned(decode_text(raw))
        } else {
            Cow::Borrowed(raw)
        };
        // BeautifulSoup's `endData`: a string (references decoded) of ASCII whitespace only
        // becomes one newline (when it holds one) or one space, except inside `pre` and
        // `textarea`.
        if self.preserving == 0
            && text
                .bytes()
                .all(|b| matches!(b, b' ' | b'\n' | b'\t' | b'\x0c' | b'\r'))
        {
            let collapsed = if text.contains('\n') { "\n" } else { " " };
            self.push_text(collapsed);
            return;
        }
        self.push_text(&text);
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
    }

    fn open_tag(&mut self, name: (usize, usize), attrs: (usize, usize), self_closing: bool) -> Option<usize> {
        let src = self.doc.src;
        let name_text = &src[name.0..name.1];
        let tag = Tag::from_name(name_text);
        let el = self.doc.elements.len();
        let text_start = self.doc.buffer.len();
        self.doc.elements.push(Element {
            tag,
            name,
            attrs,
            text: (text_start, text_start),
            first_solid: None,
            stripped: (text_start, text_start),
            stripped_spaces: 0,
        });
        self.doc.work += 1;
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
        let end = self.doc.buffer.len();
        let (last_solid, spaces_to_last) = self.last_solid;
        let element = &mut self.doc.elements[el];
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
}

/// What starts at `lt` (a `<`) as `html.parser` reads it: `None` when it is just a character of
/// text.
pub(super) fn markup(src: &str, lt: usize) -> Option<Markup> {
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

pub(super) enum Markup {
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
pub(super) fn find_end_tag(src: &str, from: usize, name: &str) -> Option<usize> {
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

pub(super) fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
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

/// A numeric character reference in text, as BeautifulSoup's `handle_charref` decodes it: below
/// 256 through Windows-1252 where that defines the byte, code points that are not characters
/// (0, surrogates, past U+10FFFF) as U+FFFD.
fn beautifulsoup_charref(value: u32) -> char {
    if (0x80..0xa0).contains(&value) {
        return windows_1252(value);
    }
    if value == 0 {
        return '\u{fffd}';
    }
    char::from_u32(value).unwrap_or('\u{fffd}')
}

/// Text character references, as BeautifulSoup's `html.parser` builder decodes them: a named
/// reference is looked up by its exact name among HTML5's (with or without its `;`); an unknown
/// one stays as `&name`, its `;` dropped.
pub(super) fn decode_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        if let Some(numeric) = after.strip_prefix('#')
            && let Some((value, consumed)) = numeric_reference(numeric)
        {
            out.push(beautifulsoup_charref(value));
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
        let consumed = if after.as_bytes().get(name_len) == Some(&b';') {
            name_len + 1
        } else {
            name_len
        };
        match html5_entity(name) {
            Some(expansion) => out.push_str(expansion),
            None => {
                out.push('&');
                out.push_str(name);
            }
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}
