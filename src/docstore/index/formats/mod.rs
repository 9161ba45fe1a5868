//! `DumpFormat`: the published Wikipedia dumps an index is built from, recognised by their first
//! record, and each format's record → [`IndexedPage`] (pure; one function per format).
//!
//! - `hotpotqa`: HotpotQA's processed Wikipedia of 2017-10-01 (hotpotqa.github.io/wiki-readme),
//!   one JSON object a line: `title`, `text` — the *abstracts* edition a list of sentences (links
//!   in `text_with_links`), the *full* edition a list of paragraphs of sentences with the links
//!   inline, its first paragraph the title.
//! - `kilt`: KILT's knowledge source: `wikipedia_title`, `text` a list of paragraphs (the first the
//!   title, `Section::::` headings, `BULLET::::` list items), `anchors`.
//! - `fever`: FEVER's `wiki-pages`: `id` (the title, `_` for spaces, `-LRB-`-style escapes),
//!   `lines` (`n<TAB>sentence<TAB>anchor<TAB>target...` rows).
//! - `dpr`: DPR's `psgs_w100.tsv`: `id<TAB>text<TAB>title` passages; consecutive passages of one
//!   title make one page.
//! - `jsonl`: `{"title", "text"}`, `{"title", "sentences"}` or `{"title", "paragraphs"}`.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;
use serde_json::Value;

use super::schema::{IndexedPage, sanitize};
use crate::docstore::python_codecs::html_unescape;

/// A dump format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DumpFormat {
    Hotpotqa,
    Kilt,
    Fever,
    Dpr,
    Jsonl,
}

impl DumpFormat {
    pub const ALL: [DumpFormat; 5] = [
        DumpFormat::Hotpotqa,
        DumpFormat::Kilt,
        DumpFormat::Fever,
        DumpFormat::Dpr,
        DumpFormat::Jsonl,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DumpFormat::Hotpotqa => "hotpotqa",
            DumpFormat::Kilt => "kilt",
            DumpFormat::Fever => "fever",
            DumpFormat::Dpr => "dpr",
            DumpFormat::Jsonl => "jsonl",
        }
    }

    /// The format of a dump whose first non-empty line is `line`.
    pub fn detect(line: &[u8]) -> Option<DumpFormat> {
        let line = std::str::from_utf8(line)
            .ok()?
            .trim()
            .trim_start_matches('\u{feff}');
        if line.starts_with('{') {
            let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
                return None;
            };
            return if record.contains_key("wikipedia_title") {
                Some(DumpFormat::Kilt)
            } else if record.contains_key("lines") && record.contains_key("id") {
                Some(DumpFormat::Fever)
            } else if record.contains_key("title")
                && record.get("text").is_some_and(Value::is_array)
                && ["url", "text_with_links", "charoffset"]
                    .iter()
                    .any(|key| record.contains_key(*key))
            {
                Some(DumpFormat::Hotpotqa)
            } else if record.contains_key("title") {
                Some(DumpFormat::Jsonl)
            } else {
                None
            };
        }
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["id", "text", "title"] => Some(DumpFormat::Dpr),
            [id, _, _] if id.parse::<u64>().is_ok() => Some(DumpFormat::Dpr),
            _ => None,
        }
    }
}

/// An evaluation's input that `index build` was given instead of a dump: what it is, for an error
/// that says what to do with it (no `--format` reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotADump {
    /// One JSON array (HotpotQA's official or Hugging Face question files; ReAct's simplified one).
    JsonArray,
    /// JSON Lines of HotpotQA questions (`question`).
    QuestionLines,
    /// JSON Lines of FEVER claims (`claim`).
    ClaimLines,
}

impl NotADump {
    /// What a source whose first non-empty line is `line` is, when it is a question or claim file.
    pub fn detect(line: &[u8]) -> Option<NotADump> {
        let line = std::str::from_utf8(line)
            .ok()?
            .trim()
            .trim_start_matches('\u{feff}');
        if line.starts_with('[') {
            return Some(NotADump::JsonArray);
        }
        let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
            return None;
        };
        if record.contains_key("claim") {
            Some(NotADump::ClaimLines)
        } else if record.contains_key("question") {
            Some(NotADump::QuestionLines)
        } else {
            None
        }
    }
}

impl fmt::Display for DumpFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DumpFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DumpFormat::ALL
            .into_iter()
            .find(|format| format.as_str() == s)
            .ok_or_else(|| {
                format!("unknown format `{s}`, expected auto, hotpotqa, kilt, fever, dpr or jsonl")
            })
    }
}

/// What one line of a dump holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Page(IndexedPage),
    /// One DPR passage: consecutive passages of a title are joined into its page.
    Passage {
        title: String,
        text: String,
    },
    /// A line that holds no page: DPR's header, FEVER's empty first entry, a blank line.
    Nothing,
}

/// Reads one line of a dump in `format`. `Err` is the reason the record is malformed.
pub fn parse_record(format: DumpFormat, line: &[u8]) -> Result<Record, String> {
    let line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(Record::Nothing);
    }
    let line = std::str::from_utf8(line)
        .map_err(|error| format!("not valid UTF-8 (byte {} of the line)", error.valid_up_to() + 1))?;
    match format {
        DumpFormat::Hotpotqa => hotpotqa(line),
        DumpFormat::Kilt => kilt(line),
        DumpFormat::Fever => fever(line),
        DumpFormat::Dpr => dpr(line),
        DumpFormat::Jsonl => jsonl(line),
    }
}

/// The JSON type a field must have.
#[derive(Debug, Clone, Copy)]
enum Kind {
    String,
    List,
}

/// Parses a JSON record into `T`. On failure, says which field is missing or of the wrong type
/// (`required` must be there; `typed` fields, when present, must be of their kind).
fn json<'a, T: Deserialize<'a>>(
    line: &'a str,
    required: &[&str],
    typed: &[(&str, Kind)],
) -> Result<T, String> {
    serde_json::from_str(line).map_err(|error| match serde_json::from_str::<Value>(line) {
        Ok(value) => field_problem(&value, required, typed).unwrap_or_else(|| error.to_string()),
        Err(_) => format!("not valid JSON: {error}"),
    })
}

/// What is wrong with a record's fields, if serde's own message would not name the field:
/// not an object, a `required` field missing, a `typed` field of another JSON type.
fn field_problem(value: &Value, required: &[&str], typed: &[(&str, Kind)]) -> Option<String> {
    let Some(object) = value.as_object() else {
        return Some("expected a JSON object".to_owned());
    };
    if let Some(field) = required.iter().find(|field| !object.contains_key(**field)) {
        return Some(format!("no `{field}` field"));
    }
    for (field, kind) in typed {
        let found = match object.get(*field) {
            None | Some(Value::Null) => continue,
            Some(Value::String(_)) if matches!(kind, Kind::String) => continue,
            Some(Value::Array(_)) if matches!(kind, Kind::List) => continue,
            Some(Value::String(_)) => "a string",
            Some(Value::Array(_)) => "a list",
            Some(Value::Number(_)) => "a number",
            Some(Value::Bool(_)) => "a boolean",
            Some(Value::Object(_)) => "an object",
        };
        let expected = match kind {
            Kind::String => "a string",
            Kind::List => "a list",
        };
        return Some(format!("field `{field}` is {found}, expected {expected}"));
    }
    None
}

/// A title as a dump writes it, tidied: no control characters, no surrounding whitespace.
fn page_title(raw: &str) -> Result<String, String> {
    let title = sanitize(raw).trim().to_owned();
    if title.is_empty() {
        return Err("the `title` is empty".to_owned());
    }
    Ok(title)
}

#[derive(Deserialize)]
struct HotpotqaRecord {
    title: String,
    text: Strings,
    /// The abstracts edition's sentences with their links; `charoffset*` are skipped unread.
    #[serde(default)]
    text_with_links: Option<Strings>,
}

/// A list of strings, or a list of lists of them: HotpotQA's `text` (abstracts: sentences; full
/// edition: paragraphs of sentences), JSON Lines `paragraphs` (whole, or as sentences). Read in
/// one pass, its first item saying which ([`StringsVisitor`]).
enum Strings {
    Flat(Vec<String>),
    Nested(Vec<Vec<String>>),
}

/// What a list that is not [`Strings`] fails with: serde's own message for an untagged enum,
/// which each format turns into its hint.
const NOT_STRINGS: &str = "data did not match any variant of untagged enum Strings";

/// The visits of a [`Strings`] visitor that every other JSON value makes: [`NOT_STRINGS`], as
/// serde's `untagged` says it (its own "invalid type" message would not be turned into a hint).
macro_rules! not_strings_otherwise {
    ($value:ty) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<$value, E> {
            Err(E::custom(NOT_STRINGS))
        }

        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<$value, E> {
            Err(E::custom(NOT_STRINGS))
        }

        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<$value, E> {
            Err(E::custom(NOT_STRINGS))
        }

        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<$value, E> {
            Err(E::custom(NOT_STRINGS))
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<$value, E> {
            Err(E::custom(NOT_STRINGS))
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, _: A) -> Result<$value, A::Error> {
            Err(serde::de::Error::custom(NOT_STRINGS))
        }
    };
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Strings, D::Error> {
        deserializer.deserialize_any(StringsVisitor)
    }
}

/// Reads [`Strings`] as serde's `untagged` would (a list of strings, else a list of lists of
/// strings, else [`NOT_STRINGS`]) without first copying the whole list into a buffer to try each
/// shape in turn: a tenth of the time a build spends parsing HotpotQA.
struct StringsVisitor;

impl<'de> serde::de::Visitor<'de> for StringsVisitor {
    type Value = Strings;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(NOT_STRINGS)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Strings, A::Error> {
        let text = |item| match item {
            StringsItem::Text(text) => Some(text),
            StringsItem::List(_) => None,
        };
        let list = |item| match item {
            StringsItem::List(list) => Some(list),
            StringsItem::Text(_) => None,
        };
        match seq.next_element::<StringsItem>()? {
            None => Ok(Strings::Flat(Vec::new())),
            Some(StringsItem::Text(first)) => Ok(Strings::Flat(rest_of_list(seq, first, text)?)),
            Some(StringsItem::List(first)) => Ok(Strings::Nested(rest_of_list(seq, first, list)?)),
        }
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Strings, E> {
        Err(E::custom(NOT_STRINGS))
    }

    not_strings_otherwise!(Strings);
}

/// `first` and the items after it, each of the kind `take` keeps (any other is [`NOT_STRINGS`]).
fn rest_of_list<'de, A: serde::de::SeqAccess<'de>, T>(
    mut seq: A,
    first: T,
    take: impl Fn(StringsItem) -> Option<T>,
) -> Result<Vec<T>, A::Error> {
    let mut items = vec![first];
    while let Some(item) = seq.next_element::<StringsItem>()? {
        items.push(take(item).ok_or_else(|| serde::de::Error::custom(NOT_STRINGS))?);
    }
    Ok(items)
}

/// An item of [`Strings`]: a string, or a list of strings.
enum StringsItem {
    Text(String),
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for StringsItem {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<StringsItem, D::Error> {
        deserializer.deserialize_any(ItemVisitor)
    }
}

/// Reads a [`StringsItem`] (inside an item's list, only a string is kept); anything else is
/// [`NOT_STRINGS`].
struct ItemVisitor;

impl<'de> serde::de::Visitor<'de> for ItemVisitor {
    type Value = StringsItem;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(NOT_STRINGS)
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<StringsItem, E> {
        Ok(StringsItem::Text(text.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<StringsItem, E> {
        Ok(StringsItem::Text(text))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<StringsItem, A::Error> {
        let not_strings = || serde::de::Error::custom(NOT_STRINGS);
        let mut texts = Vec::new();
        while let Some(item) = seq.next_element::<StringsItem>()? {
            let StringsItem::Text(text) = item else {
                return Err(not_strings());
            };
            texts.push(text);
        }
        Ok(StringsItem::List(texts))
    }

    not_strings_otherwise!(StringsItem);
}

fn hotpotqa(line: &str) -> Result<Record, String> {
    let record: HotpotqaRecord = json(
        line,
        &["title", "text"],
        &[
            ("title", Kind::String),
            ("text", Kind::List),
            ("text_with_links", Kind::List),
        ],
    )
    .map_err(|error| {
        error.replace(
            NOT_STRINGS,
            "`text` must be a list of sentences or a list of paragraphs of sentences",
        )
    })?;
    // HotpotQA keeps titles HTML-escaped (`Tom &amp; Jerry`); their text is not.
    let title = page_title(&html_unescape(&record.title))?;
    let mut links = Vec::new();
    let mut paragraphs = match record.text {
        // `IndexedPage::split` sanitizes them.
        Strings::Flat(sentences) => vec![sentences],
        Strings::Nested(paragraphs) => paragraphs
            .iter()
            .map(|sentences| {
                sentences
                    .iter()
                    .map(|sentence| strip_links(&sanitize(sentence), &mut links))
                    .collect::<Vec<String>>()
            })
            .collect::<Vec<_>>(),
    };
    // The full edition opens with the title as its own paragraph.
    if paragraphs
        .first()
        .is_some_and(|first| first.concat().trim() == title)
        && paragraphs.len() > 1
    {
        paragraphs.remove(0);
    }
    if let Some(Strings::Flat(sentences)) = &record.text_with_links {
        for sentence in sentences {
            strip_links(sentence, &mut links);
        }
    }
    Ok(Record::Page(
        IndexedPage::split(title, paragraphs).with_links(links),
    ))
}

/// `<a href="Target%20Title">anchor</a>` → `anchor`, the decoded target pushed to `links`; any
/// other tag is kept as text.
fn strip_links(sentence: &str, links: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(sentence.len());
    let mut rest = sentence;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let tag = &rest[start..];
        if let Some(end) = tag.strip_prefix("</a>").map(|_| 4) {
            rest = &tag[end..];
            continue;
        }
        if (tag.starts_with("<a ") || tag.starts_with("<a\t"))
            && let Some(close) = tag.find('>')
        {
            if let Some(target) = href(&tag[..close]) {
                links.push(target);
            }
            rest = &tag[close + 1..];
            continue;
        }
        out.push('<');
        rest = &tag[1..];
    }
    out.push_str(rest);
    out
}

/// The link target of an `<a href="...">` tag, percent-decoded, as a title.
fn href(tag: &str) -> Option<String> {
    let value = tag.split("href=").nth(1)?;
    let quote = value.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let value = &value[1..];
    let target = &value[..value.find(quote)?];
    let decoded = percent_encoding::percent_decode_str(target).decode_utf8_lossy();
    let title = html_unescape(&decoded).replace('_', " ");
    let title = title.trim();
    (!title.is_empty()).then(|| title.to_owned())
}

#[derive(Deserialize)]
struct KiltRecord {
    wikipedia_title: String,
    text: Vec<String>,
    #[serde(default)]
    anchors: Vec<KiltAnchor>,
}

#[derive(Deserialize)]
struct KiltAnchor {
    #[serde(default)]
    wikipedia_title: Option<String>,
    #[serde(default)]
    href: Option<String>,
}

fn kilt(line: &str) -> Result<Record, String> {
    let record: KiltRecord = json(
        line,
        &["wikipedia_title", "text"],
        &[
            ("wikipedia_title", Kind::String),
            ("text", Kind::List),
            ("anchors", Kind::List),
        ],
    )?;
    let title = page_title(&record.wikipedia_title)?;
    let mut paragraphs = Vec::new();
    for (idx, paragraph) in record.text.iter().enumerate() {
        let paragraph = sanitize(paragraph);
        let paragraph = paragraph.trim();
        // The first paragraph repeats the title; `Section::::History.` lines are headings.
        if (idx == 0 && paragraph == title) || paragraph.starts_with("Section::::") || paragraph.is_empty() {
            continue;
        }
        let paragraph = match paragraph.strip_prefix("BULLET::::") {
            Some(item) => item.trim_start_matches(['-', ' ']),
            None => paragraph,
        };
        paragraphs.push(paragraph.to_owned());
    }
    let links = record
        .anchors
        .into_iter()
        .filter_map(|anchor| {
            anchor.wikipedia_title.or_else(|| {
                anchor.href.map(|href| {
                    percent_encoding::percent_decode_str(&href)
                        .decode_utf8_lossy()
                        .into_owned()
                })
            })
        })
        .filter(|target| !target.trim().is_empty())
        .collect();
    Ok(Record::Page(
        IndexedPage::unsplit(title, paragraphs).with_links(links),
    ))
}

#[derive(Deserialize)]
struct FeverRecord {
    id: String,
    #[serde(default)]
    lines: String,
}

fn fever(line: &str) -> Result<Record, String> {
    let record: FeverRecord = json(
        line,
        &["id", "lines"],
        &[("id", Kind::String), ("lines", Kind::String)],
    )?;
    if record.id.is_empty() {
        return Ok(Record::Nothing);
    }
    let title = page_title(&fever_title(&record.id))?;
    let mut sentences = Vec::new();
    let mut links = Vec::new();
    for row in record.lines.split('\n') {
        let mut fields = row.split('\t');
        let (Some(_number), Some(sentence)) = (fields.next(), fields.next()) else {
            continue;
        };
        let sentence = fever_text(&sanitize(sentence));
        if !sentence.is_empty() {
            sentences.push(sentence);
        }
        // After the sentence: anchor text and link target, alternating.
        links.extend(
            fields
                .skip(1)
                .step_by(2)
                .map(fever_title)
                .filter(|target| !target.is_empty()),
        );
    }
    Ok(Record::Page(
        IndexedPage::split(title, vec![sentences]).with_links(links),
    ))
}

/// FEVER's bracket escapes, as the Penn Treebank writes them.
const FEVER_ESCAPES: [(&str, &str); 7] = [
    ("-LRB-", "("),
    ("-RRB-", ")"),
    ("-LSB-", "["),
    ("-RSB-", "]"),
    ("-LCB-", "{"),
    ("-RCB-", "}"),
    ("-COLON-", ":"),
];

/// A FEVER page id as a title: `Subway_-LRB-Homicide-COLON-_Life_on_the_Street-RRB-` →
/// `Subway (Homicide: Life on the Street)`.
pub fn fever_title(id: &str) -> String {
    let mut title = id.replace('_', " ");
    for (escape, bracket) in FEVER_ESCAPES {
        title = title.replace(escape, bracket);
    }
    title.trim().to_owned()
}

/// A FEVER sentence as text: the escapes undone and the tokenizer's spaces around punctuation
/// removed (`Medien AG -LRB- formerly X , then Y -RRB-` → `Medien AG (formerly X, then Y)`).
pub fn fever_text(sentence: &str) -> String {
    let mut text = sentence.to_owned();
    for (escape, bracket) in FEVER_ESCAPES {
        text = text.replace(escape, bracket);
    }
    let mut out = String::with_capacity(text.len());
    let mut glue_next = false;
    for word in text.split_whitespace() {
        // The tokenizer's quotes: `` opens, '' closes.
        let (word, opens, closes) = match word {
            "``" => ("\"", true, false),
            "''" => ("\"", false, true),
            _ => (word, matches!(word, "(" | "[" | "{" | "$"), false),
        };
        let attaches_left = closes
            || matches!(word, "," | "." | ";" | ":" | "!" | "?" | ")" | "]" | "}" | "%")
            || word.starts_with('\'') && word.len() <= 3
            || word == "n't";
        if !out.is_empty() && !attaches_left && !glue_next {
            out.push(' ');
        }
        out.push_str(word);
        glue_next = opens;
    }
    out
}

fn dpr(line: &str) -> Result<Record, String> {
    let line = line.trim_end_matches(['\r', '\n']);
    // The id is the first field and the title the last (as the reader groups passages by it).
    let (Some((id, rest)), Some((_, title))) = (line.split_once('\t'), line.rsplit_once('\t')) else {
        return Err("expected `id<TAB>text<TAB>title`".to_owned());
    };
    let Some((text, _)) = rest.rsplit_once('\t') else {
        return Err("expected `id<TAB>text<TAB>title`".to_owned());
    };
    if id == "id" && text == "text" && title == "title" {
        return Ok(Record::Nothing);
    }
    let title = page_title(&unquote_tsv(title))?;
    Ok(Record::Passage {
        title,
        text: sanitize(&unquote_tsv(text)),
    })
}

/// A TSV field as DPR's file quotes it: `"a ""b"" c"` → `a "b" c`.
fn unquote_tsv(field: &str) -> String {
    match field.strip_prefix('"').and_then(|inner| inner.strip_suffix('"')) {
        Some(inner) => inner.replace("\"\"", "\""),
        None => field.to_owned(),
    }
}

/// The page that consecutive DPR passages of `title` make: one paragraph (passages split
/// mid-sentence, so they are joined back), without the title the first passage starts with.
pub fn dpr_page(title: String, passages: &[String]) -> IndexedPage {
    let mut text = passages.join(" ");
    if let Some(rest) = text.strip_prefix(&title).and_then(|rest| rest.strip_prefix(' ')) {
        text = rest.to_owned();
    }
    IndexedPage::unsplit(title, vec![text])
}

#[derive(Deserialize)]
struct JsonlRecord {
    title: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    sentences: Option<Vec<String>>,
    #[serde(default)]
    paragraphs: Option<Strings>,
}

/// The fields of a JSON Lines page and the JSON type each must have.
const JSONL_FIELDS: [(&str, Kind); 4] = [
    ("title", Kind::String),
    ("text", Kind::String),
    ("sentences", Kind::List),
    ("paragraphs", Kind::List),
];

fn jsonl(line: &str) -> Result<Record, String> {
    let record: JsonlRecord =
        json(line, &["title"], &JSONL_FIELDS).map_err(|error| paragraphs_hint(&error))?;
    Ok(Record::Page(jsonl_record(record)?))
}

/// A JSON Lines page already parsed as JSON (a `corpus:FILE` record).
pub fn jsonl_page(record: Value) -> Result<IndexedPage, String> {
    let problem = field_problem(&record, &["title"], &JSONL_FIELDS);
    let record: JsonlRecord = serde_json::from_value(record)
        .map_err(|error| paragraphs_hint(&problem.unwrap_or_else(|| error.to_string())))?;
    jsonl_record(record)
}

fn paragraphs_hint(error: &str) -> String {
    error.replace(
        NOT_STRINGS,
        "`paragraphs` must be a list of strings or a list of sentence lists",
    )
}

fn jsonl_record(record: JsonlRecord) -> Result<IndexedPage, String> {
    let title = page_title(&record.title)?;
    Ok(match (record.text, record.sentences, record.paragraphs) {
        (Some(text), _, _) => IndexedPage::unsplit(
            title,
            text.split('\n')
                .map(str::trim)
                .filter(|paragraph| !paragraph.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        (None, Some(sentences), _) => IndexedPage::split(title, vec![sentences]),
        (None, None, Some(Strings::Flat(paragraphs))) => IndexedPage::unsplit(title, paragraphs),
        (None, None, Some(Strings::Nested(paragraphs))) => IndexedPage::split(title, paragraphs),
        (None, None, None) => return Err("a page needs `text`, `sentences` or `paragraphs`".to_owned()),
    })
}

#[cfg(test)]
mod tests;
