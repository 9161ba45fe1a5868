//! The `default` profile's reader: the page parsed as a browser would, with scraper (html5ever's
//! HTML5 tree builder) and CSS selectors, then read for the article body only — no site chrome,
//! style blocks, coordinates, infoboxes, reference marks or See also / References sections.
//!
//! An HTML5 tree builder does work proportional to the depth of the open elements for many
//! tokens (every block start tag looks for an open `<p>`, a stray end tag scans for its element),
//! so a page of thousands of unclosed elements costs depth × tokens. As browsers do (Blink caps
//! its tree at 512 levels), the depth is bounded: [`within_depth`] drops the start tags that
//! would nest past [`MAX_DEPTH`] (their text stays, in the enclosing element), and the stray end
//! tags, before html5ever sees the page. Every pass over the tree visits each node at most once (a skipped subtree is
//! not entered), and the few per-element reads (a title, a heading, a list item's link) stop
//! after a bounded amount of text, so reading is linear in the page whatever its nesting.

use std::borrow::Cow;
use std::collections::HashMap;

use ego_tree::NodeRef;
use scraper::node::Element;
use scraper::{CaseSensitivity, ElementRef, Html, Node, Selector};

use super::soup::{Markup, find_end_tag, is_void, markup, memchr, name_key};
use super::{MAX_DISAMBIGUATION_ITEMS, MAX_RESULT_TITLES, TITLE_LIMIT};
use crate::docstore::SearchOutcome;
use crate::docstore::page::{PAGE_TEXT_LIMIT, Page, TextBudget, collapse_whitespace, python_strip};

/// How many `<p>` are looked at for MediaWiki's zero-results sentence.
const NO_RESULTS_PARAGRAPHS: usize = 50;

/// How deep elements may nest before html5ever sees the page (Blink's limit).
pub(super) const MAX_DEPTH: usize = 512;

/// Reads a search response: results, no results, a disambiguation page or an article.
pub(super) fn default_outcome(html: &str) -> SearchOutcome {
    let document = Html::parse_document(&within_depth(html));
    let headings = select(&document, "div.mw-search-result-heading", MAX_RESULT_TITLES);
    if !headings.is_empty() {
        let mut titles: Vec<String> = Vec::new();
        for heading in headings {
            let title = result_title(heading);
            if !title.is_empty() && !titles.contains(&title) {
                titles.push(title);
            }
        }
        return SearchOutcome::Results(titles);
    }
    if is_no_results_page(&document) {
        return SearchOutcome::NoResults;
    }
    let root = content_root(&document);
    let paragraphs = body_paragraphs(root);
    let page = Page::new(page_title(&document), paragraphs);
    if is_disambiguation(&document, &page) {
        let entries = disambiguation_entries(root);
        if !entries.is_empty() {
            return SearchOutcome::Disambiguation { entries, page };
        }
    }
    SearchOutcome::Article(page)
}

/// `html` without the start tags that would nest deeper than [`MAX_DEPTH`] and without stray
/// end tags; borrowed when there are none (every saved page). The depth is tracked as the page is written (an end tag closes the
/// most recent open element of its name and those inside it; a stray one does nothing), with
/// HTML's usual implied ends so sloppy pages do not look deep: a block start closes an open `<p>`,
/// `<li>` closes `<li>`, `<dd>`/`<dt>` close each other. Linear in the page.
pub(super) fn within_depth(html: &str) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    let mut open: Vec<Cow<'_, str>> = Vec::new();
    let mut open_names: HashMap<Cow<'_, str>, usize> = HashMap::new();
    let mut kept = String::new();
    let mut copied_to = 0;
    let mut pos = 0;
    while let Some(offset) = memchr(b'<', &bytes[pos..]) {
        let lt = pos + offset;
        pos = match markup(html, lt) {
            None => lt + 1,
            Some(Markup::Skip(end) | Markup::CData(_, end)) => end,
            Some(Markup::End((start, stop), end)) => {
                let name = name_key(&html[start..stop]);
                if open_names.get(&name).is_some_and(|&count| count > 0) {
                    while let Some(top) = open.pop() {
                        if let Some(count) = open_names.get_mut(&top) {
                            *count -= 1;
                        }
                        if top == name {
                            break;
                        }
                    }
                } else if name != "br" {
                    // A stray end tag does nothing to the text (`</p>` adds an empty paragraph,
                    // `</br>` is a line break and stays) but costs html5ever a scan of the
                    // open elements: dropped.
                    kept.push_str(&html[copied_to..lt]);
                    copied_to = end;
                }
                end
            }
            Some(Markup::Start {
                name: (start, stop),
                end,
                self_closing,
                ..
            }) => {
                let written = &html[start..stop];
                let name = name_key(written);
                if self_closing || is_void(&name) {
                    end
                } else {
                    while open.last().is_some_and(|top| implicitly_closed(top, &name)) {
                        if let Some(top) = open.pop()
                            && let Some(count) = open_names.get_mut(&top)
                        {
                            *count -= 1;
                        }
                    }
                    if open.len() >= MAX_DEPTH {
                        kept.push_str(&html[copied_to..lt]);
                        copied_to = end;
                        end
                    } else {
                        *open_names.entry(name.clone()).or_insert(0) += 1;
                        open.push(name.clone());
                        if matches!(name.as_ref(), "script" | "style") {
                            // Raw text up to its end tag: no markup inside.
                            find_end_tag(html, end, written).unwrap_or(html.len())
                        } else {
                            end
                        }
                    }
                }
            }
        };
    }
    if copied_to == 0 {
        return Cow::Borrowed(html);
    }
    kept.push_str(&html[copied_to..]);
    Cow::Owned(kept)
}

/// Whether opening `name` ends the open element `top` (HTML's optional end tags).
fn implicitly_closed(top: &str, name: &str) -> bool {
    match top {
        "p" => matches!(
            name,
            "address"
                | "article"
                | "aside"
                | "blockquote"
                | "details"
                | "dialog"
                | "div"
                | "dl"
                | "fieldset"
                | "figcaption"
                | "figure"
                | "footer"
                | "form"
                | "h1"
                | "h2"
                | "h3"
                | "h4"
                | "h5"
                | "h6"
                | "header"
                | "hgroup"
                | "li"
                | "dd"
                | "dt"
                | "main"
                | "menu"
                | "nav"
                | "ol"
                | "p"
                | "pre"
                | "section"
                | "summary"
                | "table"
                | "ul"
        ),
        "li" => name == "li",
        "dd" | "dt" => matches!(name, "dd" | "dt"),
        "option" => name == "option",
        _ => false,
    }
}

/// The first `limit` elements `css` selects, in document order.
fn select<'a>(document: &'a Html, css: &str, limit: usize) -> Vec<ElementRef<'a>> {
    match Selector::parse(css) {
        Ok(selector) => document.select(&selector).take(limit).collect(),
        Err(_) => Vec::new(),
    }
}

fn select_first<'a>(document: &'a Html, css: &str) -> Option<ElementRef<'a>> {
    select(document, css, 1).into_iter().next()
}

/// A result heading's title: the text of its link, without `(redirect from …)` and the like.
fn result_title(heading: ElementRef<'_>) -> String {
    let link = first_element(*heading, |element| element.name() == "a", |_| false);
    match link {
        Some(link) => collapse_whitespace(&text_prefix(link, TITLE_LIMIT)),
        None => {
            let text = text_prefix(*heading, TITLE_LIMIT);
            let cut = text
                .find("(redirect from")
                .or_else(|| text.find("(section "))
                .unwrap_or(text.len());
            collapse_whitespace(&text[..cut])
        }
    }
}

/// MediaWiki's page for a search that found nothing.
fn is_no_results_page(document: &Html) -> bool {
    !select(document, ".mw-search-nonefound", 1).is_empty()
        || select(document, "p", NO_RESULTS_PARAGRAPHS)
            .into_iter()
            .any(|paragraph| {
                python_strip(&text_prefix(*paragraph, TITLE_LIMIT))
                    .starts_with("There were no results matching the query")
            })
}

/// The article body: `.mw-parser-output` (the outermost one), else `#mw-content-text`, else
/// `<body>`, else the whole document.
fn content_root(document: &Html) -> NodeRef<'_, Node> {
    [".mw-parser-output", "#mw-content-text", "body"]
        .into_iter()
        .find_map(|css| select_first(document, css))
        .map_or_else(|| document.tree.root(), |element| *element)
}

fn page_title(document: &Html) -> String {
    let heading = select_first(document, "h1#firstHeading").or_else(|| select_first(document, "h1"));
    if let Some(heading) = heading {
        let title = collapse_whitespace(&text_prefix(*heading, TITLE_LIMIT));
        if !title.is_empty() {
            return title;
        }
    }
    let title = select_first(document, "title")
        .map(|title| collapse_whitespace(&text_prefix(*title, TITLE_LIMIT)))
        .unwrap_or_default();
    title.strip_suffix(" - Wikipedia").unwrap_or(&title).to_owned()
}

// ---------------------------------------------------------------------------------------------
// Walking the tree.

/// One step of a walk: a node is entered, or an entered element is left.
enum Edge<'a> {
    Open(NodeRef<'a, Node>),
    Close(NodeRef<'a, Node>),
}

/// What the walk does after opening a node.
#[derive(PartialEq, Eq)]
enum Flow {
    Enter,
    Skip,
    Stop,
}

/// Walks the nodes under `root` (not `root` itself) in document order, without recursion: each
/// node is opened, entered unless `visit` skips it, and each entered node closed after its
/// children. A skipped subtree is not visited at all.
fn walk<'a>(root: NodeRef<'a, Node>, mut visit: impl FnMut(Edge<'a>) -> Flow) {
    let mut next = root.first_child();
    while let Some(node) = next {
        match visit(Edge::Open(node)) {
            Flow::Stop => return,
            Flow::Enter => {
                if let Some(child) = node.first_child() {
                    next = Some(child);
                    continue;
                }
                visit(Edge::Close(node));
            }
            Flow::Skip => {}
        }
        // Up to the first ancestor (below `root`) with a next sibling, closing on the way.
        let mut current = node;
        next = loop {
            if let Some(sibling) = current.next_sibling() {
                break Some(sibling);
            }
            match current.parent() {
                Some(parent) if parent.id() != root.id() => {
                    visit(Edge::Close(parent));
                    current = parent;
                }
                _ => break None,
            }
        };
    }
}

/// Elements whose text is not part of what a reader sees.
fn hides_text(name: &str) -> bool {
    matches!(name, "script" | "style" | "template" | "rt" | "rp" | "noscript")
}

/// The visible text under `node`, stopping once it holds `limit` bytes or more.
fn text_prefix(node: NodeRef<'_, Node>, limit: usize) -> String {
    let mut text = String::new();
    walk(node, |edge| match edge {
        Edge::Open(node) => match node.value() {
            Node::Text(piece) => {
                text.push_str(piece);
                if text.len() >= limit {
                    Flow::Stop
                } else {
                    Flow::Enter
                }
            }
            Node::Element(element) if hides_text(element.name()) => Flow::Skip,
            Node::Element(_) => Flow::Enter,
            _ => Flow::Skip,
        },
        Edge::Close(_) => Flow::Enter,
    });
    text.truncate(text.floor_char_boundary(limit));
    text
}

/// The first element under `node` that `wanted` accepts, not looking inside elements `barrier`
/// accepts.
fn first_element<'a>(
    node: NodeRef<'a, Node>,
    wanted: impl Fn(&Element) -> bool,
    barrier: impl Fn(&Element) -> bool,
) -> Option<NodeRef<'a, Node>> {
    let mut found = None;
    walk(node, |edge| {
        let Edge::Open(node) = edge else {
            return Flow::Enter;
        };
        match node.value() {
            Node::Element(element) if wanted(element) => {
                found = Some(node);
                Flow::Stop
            }
            Node::Element(element) if barrier(element) => Flow::Stop,
            Node::Element(_) => Flow::Enter,
            _ => Flow::Skip,
        }
    });
    found
}

// ---------------------------------------------------------------------------------------------
// The article body.

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

fn is_excluded(element: &Element) -> bool {
    if matches!(
        element.name(),
        "script" | "style" | "template" | "rt" | "rp" | "table" | "figure" | "math" | "noscript" | "title"
    ) {
        return true;
    }
    element.classes().any(|class| EXCLUDED_CLASSES.contains(&class))
        || element.id().is_some_and(|id| EXCLUDED_IDS.contains(&id))
        || element.attr("style").is_some_and(|style| {
            let compact: String = style.chars().filter(|c| !c.is_whitespace()).collect();
            compact.to_ascii_lowercase().contains("display:none")
        })
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

fn is_paragraph(name: &str) -> bool {
    matches!(name, "p" | "li" | "dd" | "dt")
}

fn is_block(name: &str) -> bool {
    heading_level(name).is_some()
        || matches!(
            name,
            "ul" | "ol" | "dl" | "div" | "table" | "blockquote" | "section" | "figure" | "pre"
        )
}

/// Whether the section a heading opens is skipped (See also, References, ...).
fn is_skipped_heading(heading: NodeRef<'_, Node>) -> bool {
    let text = collapse_whitespace(&text_prefix(heading, TITLE_LIMIT));
    let text = text.split('[').next().unwrap_or("").trim().to_lowercase();
    SKIPPED_SECTIONS.contains(&text.as_str())
}

/// Walks the body under `root`, skipping excluded elements, headings (each reported as a `Close`,
/// a block boundary) and the sections of skipped headings; `visit` sees the rest.
fn walk_body<'a>(root: NodeRef<'a, Node>, mut visit: impl FnMut(Edge<'a>)) {
    // The level of the heading whose section is being skipped.
    let mut skipping: Option<u8> = None;
    walk(root, |edge| {
        if let Edge::Open(node) = edge
            && let Node::Element(element) = node.value()
        {
            if let Some(level) = heading_level(element.name()) {
                match skipping {
                    Some(skipped) if level > skipped => {}
                    _ => skipping = is_skipped_heading(node).then_some(level),
                }
                visit(Edge::Close(node));
                return Flow::Skip;
            }
            if skipping.is_some() || is_excluded(element) {
                return Flow::Skip;
            }
        }
        if skipping.is_none() {
            visit(edge);
        }
        Flow::Enter
    });
}

/// The paragraphs of the body: each `p`, `li`, `dd`, `dt` (text outside them is not prose), with
/// inline math as the TeX of its fallback image.
fn body_paragraphs(root: NodeRef<'_, Node>) -> Vec<String> {
    let mut paragraphs = Vec::new();
    let mut buffer = String::new();
    // How many paragraph-like elements are open.
    let mut depth = 0usize;
    let mut budget = TextBudget::page();
    let mut flush = |buffer: &mut String, paragraphs: &mut Vec<String>| {
        if !buffer.is_empty() {
            let paragraph = tidy_punctuation(&collapse_whitespace(buffer));
            let kept = budget.take(&paragraph);
            if !kept.is_empty() {
                paragraphs.push(kept.to_owned());
            }
            buffer.clear();
        }
    };
    walk_body(root, |edge| match edge {
        Edge::Open(node) => match node.value() {
            Node::Text(text) if depth > 0 && buffer.len() <= PAGE_TEXT_LIMIT => {
                buffer.push_str(text);
            }
            Node::Element(element) => {
                let name = element.name();
                if is_paragraph(name) {
                    flush(&mut buffer, &mut paragraphs);
                    depth += 1;
                } else if name == "br" {
                    buffer.push(' ');
                } else if name == "img"
                    && depth > 0
                    && (element.has_class("mwe-math-fallback-image-inline", CaseSensitivity::CaseSensitive)
                        || element
                            .has_class("mwe-math-fallback-image-display", CaseSensitivity::CaseSensitive))
                {
                    if let Some(alt) = element.attr("alt") {
                        buffer.push_str(unwrap_tex(alt));
                    }
                } else if is_block(name) {
                    flush(&mut buffer, &mut paragraphs);
                }
            }
            _ => {}
        },
        Edge::Close(node) => {
            if let Node::Element(element) = node.value() {
                let name = element.name();
                if is_paragraph(name) {
                    flush(&mut buffer, &mut paragraphs);
                    depth = depth.saturating_sub(1);
                } else if is_block(name) {
                    flush(&mut buffer, &mut paragraphs);
                }
            }
        }
    });
    flush(&mut buffer, &mut paragraphs);
    paragraphs
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

// ---------------------------------------------------------------------------------------------
// Disambiguation pages.

fn is_disambiguation(document: &Html, page: &Page) -> bool {
    let marked = !select(
        document,
        "#disambigbox, .dmbox-disambig, meta[property=\"mw:PageProp/disambiguation\"], \
         link[rel~=\"mw:PageProp/disambiguation\"]",
        1,
    )
    .is_empty();
    marked
        || page.paragraphs.first().is_some_and(|first| {
            let first = first.trim_end();
            first.ends_with("may refer to:") || first.ends_with("may also refer to:")
        })
}

/// The entries of a disambiguation page: each list item's first link (its title), in page order.
fn disambiguation_entries(root: NodeRef<'_, Node>) -> Vec<String> {
    let mut items = Vec::new();
    walk_body(root, |edge| {
        if let Edge::Open(node) = edge
            && node
                .value()
                .as_element()
                .is_some_and(|element| element.name() == "li")
            && items.len() < MAX_DISAMBIGUATION_ITEMS
        {
            items.push(node);
        }
    });
    let mut entries: Vec<String> = Vec::new();
    for item in items {
        let link = first_element(
            item,
            |element| {
                element.name() == "a"
                    && !element.has_class("new", CaseSensitivity::CaseSensitive)
                    && !element.has_class("external", CaseSensitivity::CaseSensitive)
            },
            |element| matches!(element.name(), "ul" | "ol"),
        );
        let entry = match link {
            Some(link) => link
                .value()
                .as_element()
                .and_then(|element| element.attr("title"))
                .map(collapse_whitespace)
                .filter(|title| !title.is_empty())
                .unwrap_or_else(|| collapse_whitespace(&text_prefix(link, TITLE_LIMIT))),
            None => {
                let text = collapse_whitespace(&text_prefix(item, TITLE_LIMIT));
                text.split(',').next().unwrap_or("").trim().to_owned()
            }
        };
        if !entry.is_empty() && !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    entries
}
