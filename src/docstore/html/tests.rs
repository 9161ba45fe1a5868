use std::borrow::Cow;

use super::soup::{Document, decode_text};
use super::*;
use crate::docstore::page::{Page, python_strip, summary};
use crate::docstore::python_codecs::{html_unescape, repr_list};

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/wikipedia")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn fixture_json<T: serde::de::DeserializeOwned>(name: &str) -> T {
    serde_json::from_str(&fixture(name)).expect("valid JSON fixture")
}

fn article(outcome: SearchOutcome) -> Page {
    match outcome {
        SearchOutcome::Article(page) => page,
        other => panic!("expected an article, got {other:?}"),
    }
}

/// The observation `wikienv.py` gives for the article fixture (pinned in the reproduction's tests).
const HIT_OBS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/wikipedia/colorado_orogeny_hit.paper-observation.txt"
));

#[test]
fn paper_article_matches_beautifulsoup_sentence_for_sentence() {
    let page = article(parse_search_page(
        &fixture("colorado_orogeny_hit.html"),
        Profile::Paper,
    ));
    let sentences = page.sentences(Profile::Paper);
    // Every sentence BeautifulSoup + wikienv.py produce on this page, nav and footer included.
    let expected: Vec<String> = fixture_json("colorado_orogeny_hit.paper-sentences.json");
    assert_eq!(sentences, expected);
    assert_eq!(summary(&sentences), HIT_OBS);
}

#[test]
fn paper_results_page_lists_titles_like_python() {
    let outcome = parse_search_page(&fixture("colorado_orogenyy_similar.html"), Profile::Paper);
    let SearchOutcome::Results(titles) = outcome else {
        panic!("expected results, got {outcome:?}");
    };
    let expected: Vec<String> = fixture_json("colorado_orogenyy_similar.paper-titles.json");
    assert_eq!(titles, expected);
    assert_eq!(titles.len(), 20);
    assert_eq!(
        repr_list(&titles[..5]),
        "['Colorado orogeny', 'Laramide orogeny', 'Sevier orogeny', 'Colorado Mineral Belt', 'Wyoming Craton']"
    );
}

/// wikienv.py finds no result headings on a zero-results page, so it reads that page as an
/// article: its `<p>` and `<ul>` text, split as usual.
#[test]
fn zero_results_page_is_an_article_in_the_paper_profile() {
    let html = fixture("nonexistent_miss.html");
    let page = article(parse_search_page(&html, Profile::Paper));
    let expected: Vec<String> = fixture_json("nonexistent_miss.paper-sentences.json");
    assert_eq!(page.sentences(Profile::Paper), expected);
    assert_eq!(
        parse_search_page(&html, Profile::Default),
        SearchOutcome::NoResults
    );
}

enum Paper {
    /// The page text (kept blocks, each followed by `\n`) and the search observation.
    Page(&'static str, &'static str),
    Results(&'static str),
    Disambiguation,
}

/// Expected values: BeautifulSoup 4.15 (`html.parser`, CPython 3.11) running `wikienv.py`'s
/// scrape on each snippet.
#[test]
fn paper_scrape_matches_beautifulsoup_on_tricky_markup() {
    let cases: &[(&str, Paper)] = &[
        (
            "<p>a <script>var x=1;</script>b <style>.c{}</style> c<!-- com --> d</p>",
            Paper::Page("a b  c d\n", "a b  c d."),
        ),
        (
            "<ul><li>one two</li>\n<li>three <template>tt</template>four five</li></ul>",
            Paper::Page("one two\nthree four five\n", "one two. three four five."),
        ),
        (
            "<p>ruby <ruby>漢<rp>(</rp><rt>kan</rt><rp>)</rp></ruby> x y</p>",
            Paper::Page("ruby 漢 x y\n", "ruby 漢 x y."),
        ),
        (
            "<p>x &amp; y &nbsp; z&#160;w &foo; &lt; &#150; &#x41;&eacute;</p>",
            Paper::Page(
                "x & y \u{a0} z\u{a0}w &foo < – Aé\n",
                "x & y \u{a0} z\u{a0}w &foo < – Aé.",
            ),
        ),
        (
            "<p>a<noscript><b>ns text</b></noscript> b c</p>",
            Paper::Page("ans text b c\n", "ans text b c."),
        ),
        (
            "<p>one <p>two three</p> four five</p>",
            Paper::Page("one two three four five\n", "one two three four five."),
        ),
        (
            "<P CLASS=x>a b <div>c d</div> e f</P>",
            Paper::Page("a b c d e f\n", "a b c d e f."),
        ),
        (
            "<ul><li>x y z<ul><li>inner a b</li></ul></li></ul>",
            Paper::Page("x y zinner a b\ninner a b\n", "x y zinner a b. inner a b."),
        ),
        (
            "<p>Short.</p><p>A real sentence. With two parts here.</p><p>Tabs\\tand \\\\n escapes a b</p>",
            Paper::Page(
                "A real sentence. With two parts here.\nTabs\tand \\n escapes a b\n",
                "A real sentence. With two parts here.. Tabs\tand \\n escapes a b.",
            ),
        ),
        (
            "<p>unclosed paragraph with words <b>bold text",
            Paper::Page(
                "unclosed paragraph with words bold text\n",
                "unclosed paragraph with words bold text.",
            ),
        ),
        (
            "</p></div><p>stray end tags before words</p></span>",
            Paper::Page("stray end tags before words\n", "stray end tags before words."),
        ),
        (
            "<p>a < b and c > d here</p>",
            Paper::Page("a < b and c > d here\n", "a < b and c > d here."),
        ),
        (
            "<p title='x>y'>quoted attr with > inside</p>",
            Paper::Page("quoted attr with > inside\n", "quoted attr with > inside."),
        ),
        (
            "<p>Mr. Smith went to Washington. He arrived.</p>",
            Paper::Page(
                "Mr. Smith went to Washington. He arrived.\n",
                "Mr. Smith went to Washington. He arrived..",
            ),
        ),
        (
            "<p>one two three</p><p>Alabama may refer to: the state</p>",
            Paper::Disambiguation,
        ),
        (
            "<div class=\"mw-search-result-heading\"><a>Arthur's Magazine</a> <span>(redirect from X)</span></div><div class='x mw-search-result-heading'>Other \"quoted\" title</div>",
            Paper::Results(
                "Could not find E. Similar: [\"Arthur's Magazine (redirect from X)\", 'Other \"quoted\" title'].",
            ),
        ),
        (
            "<p>text with <br/> break and <img alt='img'/> image words</p>",
            Paper::Page(
                "text with  break and  image words\n",
                "text with  break and  image words.",
            ),
        ),
        (
            "<script>document.write('<p>inside script</p>')</script><p>after the script here</p>",
            Paper::Page("after the script here\n", "after the script here."),
        ),
        (
            "<p>one. two. three. four. five. six. seven.</p>",
            Paper::Page(
                "one. two. three. four. five. six. seven.\n",
                "one. two. three. four. five.",
            ),
        ),
        (
            "<p>a  <b>b</b>  \n  <i>c</i> d</p>",
            Paper::Page("a  b\nc d\n", "a  b. c d."),
        ),
        (
            "<pre>  </pre><p>x <textarea>   </textarea> y z</p>",
            Paper::Page("x     y z\n", "x     y z."),
        ),
        (
            "<p>a <!-- c -->  <!-- d --> b c</p>",
            Paper::Page("a   b c\n", "a   b c."),
        ),
        (
            "<p>a b c<p>d e f<p>g h i",
            Paper::Page(
                "a b cd e fg h i\nd e fg h i\ng h i\n",
                "a b cd e fg h i. d e fg h i. g h i.",
            ),
        ),
        (
            "<ul><li>one two three<ul><li>four five six",
            Paper::Page(
                "one two threefour five six\nfour five six\n",
                "one two threefour five six. four five six.",
            ),
        ),
        (
            "<p>  x y z </p>\u{a0}<p>\u{a0} a b \u{a0}</p>",
            Paper::Page("x y z\n", "x y z."),
        ),
        (
            "<span><span><p>a b c</span></p>d e f</p>",
            Paper::Page("a b c\n", "a b c."),
        ),
        (
            "<div class='mw-search-result-heading'>One two<div class='mw-search-result-heading'>Three",
            Paper::Results("Could not find E. Similar: ['One twoThree', 'Three']."),
        ),
    ];
    for (html, expected) in cases {
        let outcome = parse_search_page(html, Profile::Paper);
        match (outcome, expected) {
            (SearchOutcome::Article(page), Paper::Page(text, observation)) => {
                assert_eq!(page.paper_text(), *text, "page text of {html:?}");
                assert_eq!(
                    summary(&page.sentences(Profile::Paper)),
                    *observation,
                    "observation of {html:?}"
                );
            }
            (SearchOutcome::Results(titles), Paper::Results(observation)) => {
                let shown = &titles[..titles.len().min(5)];
                assert_eq!(
                    format!("Could not find E. Similar: {}.", repr_list(shown)),
                    *observation
                );
            }
            (SearchOutcome::Disambiguation { .. }, Paper::Disambiguation) => {}
            (outcome, _) => panic!("unexpected outcome for {html:?}: {outcome:?}"),
        }
    }
}

#[test]
fn default_article_is_the_body_only() {
    let page = article(parse_search_page(
        &fixture("colorado_orogeny_hit.html"),
        Profile::Default,
    ));
    assert_eq!(page.title, "Colorado orogeny");
    assert_eq!(page.paragraphs.len(), 5);
    let text = page.paragraphs.join("\n");
    for chrome in [
        "Main page",
        "Jump to content",
        "Privacy policy",
        "[1]",
        "[edit]",
        ".mw-parser-output",
        "Retrieved",
    ] {
        assert!(!text.contains(chrome), "{chrome:?} leaked into {text}");
    }
    let sentences = page.sentences(Profile::Default);
    assert_eq!(
        sentences[3],
        "The Colorado orogeny was likely part of the larger Yavapai orogeny."
    );
    assert!(sentences.iter().all(|sentence| !sentence.contains("..")));
}

#[test]
fn default_results_drop_redirect_notes() {
    let html = r#"<div class="searchresults"><ul class="mw-search-results">
        <li><div class="mw-search-result-heading"><a href="/wiki/Arthur%27s_Magazine" title="Arthur's Magazine">Arthur's Magazine</a> <span class="searchalttitle">(redirect from <a href="/wiki/Arthurs_Magazine">Arthurs Magazine</a>)</span></div></li>
        <li><div class="mw-search-result-heading"><a href="/wiki/First_for_Women">First for <span class="searchmatch">Women</span></a></div></li>
        </ul></div>"#;
    assert_eq!(
        parse_search_page(html, Profile::Default),
        SearchOutcome::Results(vec!["Arthur's Magazine".to_owned(), "First for Women".to_owned()])
    );
    let SearchOutcome::Results(paper) = parse_search_page(html, Profile::Paper) else {
        panic!("expected results");
    };
    assert_eq!(paper[0], "Arthur's Magazine (redirect from Arthurs Magazine)");
}

#[test]
fn malformed_input_never_panics() {
    let inputs: Vec<String> = vec![
        String::new(),
        "<".to_owned(),
        "<<<>>>".to_owned(),
        "</".to_owned(),
        "<p".to_owned(),
        "<p class=\"unterminated".to_owned(),
        "<!--".to_owned(),
        "<![CDATA[".to_owned(),
        "<script>never closed".to_owned(),
        "<p>a b c<!-- unterminated comment <p>x y z</p>".to_owned(),
        "&#99999999999; &#x110000; &#0; &; &#; &#x; &amp".to_owned(),
        "<p>\u{0}\u{feff}é</p></p></p><li><ul></li></ul>".to_owned(),
        "<div class=mw-parser-output><h2>References</h2><p>x y z".to_owned(),
        "<p>".repeat(10_000),
        "</div>".repeat(10_000),
    ];
    for input in &inputs {
        for profile in [Profile::Paper, Profile::Default] {
            let _ = parse_search_page(input, profile);
        }
    }
    // Every prefix of a real page: cut anywhere, mid-tag or mid-entity.
    let page = fixture("colorado_orogeny_hit.html");
    for cut in (0..page.len())
        .step_by(4999)
        .filter(|&cut| page.is_char_boundary(cut))
    {
        for profile in [Profile::Paper, Profile::Default] {
            let _ = parse_search_page(&page[..cut], profile);
        }
    }
}

/// Text references as BeautifulSoup 4.15's `get_text()` gives them, attribute values as Python
/// 3.11's `html.unescape` (which `html.parser` applies to them): both columns from CPython.
#[test]
fn character_references_decode_as_python_does() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "a &amp; b &lt;&gt; &#39;&#x27; &nbsp;",
            "a & b <> '' \u{a0}",
            "a & b <> '' \u{a0}",
        ),
        ("&#0;", "\u{fffd}", "\u{fffd}"),
        ("&#1;", "\u{1}", ""),
        ("&#128; &#150;", "\u{20ac} \u{2013}", "\u{20ac} \u{2013}"),
        ("&#129;&#x9D;", "\u{81}\u{9d}", "\u{81}\u{9d}"),
        (
            "&#xD800;&#x110000;&#99999999999;",
            "\u{fffd}\u{fffd}\u{fffd}",
            "\u{fffd}\u{fffd}\u{fffd}",
        ),
        ("&nGt;", "\u{226b}\u{20d2}", "\u{226b}\u{20d2}"),
        ("&nGt", "\u{226b}\u{20d2}", "&nGt"),
        ("&ampx", "&ampx", "&x"),
        ("&amp;x", "&x", "&x"),
        ("&notit;", "&notit", "\u{ac}it;"),
        ("&notin", "\u{2209}", "\u{ac}in"),
        ("&unknown;", "&unknown", "&unknown;"),
        ("&#65 &#x41x", "A Ax", "A Ax"),
        ("&ThickSpace;&fjlig;", "\u{205f}\u{200a}fj", "\u{205f}\u{200a}fj"),
        ("&CounterClockwiseContourIntegral;", "\u{2233}", "\u{2233}"),
        ("&nbspx &copy2", "&nbspx &copy2", "\u{a0}x \u{a9}2"),
        ("a&b;c &x-y;", "a&bc &x-y", "a&b;c &x-y;"),
        ("& x &#; &#x;", "& x &#; &#x;", "& x &#; &#x;"),
    ];
    for (raw, text, attribute) in cases {
        assert_eq!(decode_text(raw), *text, "text {raw:?}");
        assert_eq!(html_unescape(raw), *attribute, "attribute {raw:?}");
    }
}

/// Every one of HTML5's 2,231 named references (with and without `;`) decodes, in text and in
/// attributes, and in the `default` profile (html5ever) too.
#[test]
fn every_html5_named_reference_decodes() {
    assert_eq!(htmlize::ENTITIES.len(), 2_231);
    let mut default_page = String::from("<div class=\"mw-parser-output\">");
    let mut expected = Vec::new();
    for (name, expansion) in htmlize::ENTITIES.entries() {
        let name = std::str::from_utf8(name).expect("ASCII names");
        let expansion = std::str::from_utf8(expansion).expect("UTF-8 expansions");
        assert_eq!(decode_text(name), expansion, "text {name}");
        assert_eq!(html_unescape(name), expansion, "attribute {name}");
        if name.ends_with(';') && !expansion.trim().is_empty() && !expansion.contains(['<', '&']) {
            default_page.push_str(&format!("<p>x{name}x</p>"));
            expected.push(format!("x{expansion}x"));
        }
    }
    let page = article(parse_search_page(&default_page, Profile::Default));
    let expected: Vec<String> = expected.iter().map(|text| collapse(text)).collect();
    assert_eq!(page.paragraphs, expected);
}

fn collapse(text: &str) -> String {
    crate::docstore::page::collapse_whitespace(text)
}

#[test]
fn paper_matches_beautifulsoup_on_the_synthetic_pages() {
    let page = article(parse_search_page(
        &fixture("synthetic_abbreviations_coordinates.html"),
        Profile::Paper,
    ));
    let expected: Vec<String> = fixture_json("synthetic_abbreviations_coordinates.paper-sentences.json");
    assert_eq!(page.sentences(Profile::Paper), expected);
    let SearchOutcome::Results(titles) =
        parse_search_page(&fixture("synthetic_bracketed_results.html"), Profile::Paper)
    else {
        panic!("expected results");
    };
    let expected: Vec<String> = fixture_json("synthetic_bracketed_results.paper-titles.json");
    assert_eq!(titles, expected);
    assert!(matches!(
        parse_search_page(&fixture("synthetic_disambiguation.html"), Profile::Paper),
        SearchOutcome::Disambiguation { .. }
    ));
}

#[test]
fn default_disambiguation_offers_its_entries() {
    let SearchOutcome::Disambiguation { entries, page } =
        parse_search_page(&fixture("synthetic_disambiguation.html"), Profile::Default)
    else {
        panic!("expected a disambiguation page");
    };
    assert_eq!(
        entries,
        [
            "Adam Clayton Powell Sr.",
            "Adam Clayton Powell Jr.",
            "Adam Clayton Powell III",
            "Adam Clayton Powell IV"
        ]
    );
    assert_eq!(page.title, "Adam Clayton Powell");
}

#[test]
fn default_article_drops_coordinates_references_and_boxes() {
    let page = article(parse_search_page(
        &fixture("synthetic_abbreviations_coordinates.html"),
        Profile::Default,
    ));
    let text = page.paragraphs.join("\n");
    for junk in [
        "Coordinates",
        "38.62444",
        "[1]",
        "citation needed",
        "For other uses",
        "Monument in St. Louis",
        "Location",
        "Illinois side",
        "List of tallest",
        "Retrieved",
        "Landmarks",
        "mw-parser-output",
        "\u{feff}",
    ] {
        assert!(!text.contains(junk), "{junk:?} leaked into {text}");
    }
    let sentences = page.sentences(Profile::Default);
    assert_eq!(
        sentences[0],
        "The Gateway Arch is a 630-foot (192 m) monument in St. Louis, Missouri, U.S."
    );
    assert_eq!(
        sentences[2],
        "Construction began on Feb. 12, 1963, and the last section was set on Oct. 28, 1965."
    );
    assert!(sentences.contains(&"The arch is a weighted catenary, described by y=A\\cosh(Cx).".to_owned()));
}

use bench::tag_soup;

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config {
        cases: 300,
        failure_persistence: None,
        // The same inputs on every run: the suite passes or fails on the code alone.
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed_2026_1129),
        ..proptest::test_runner::Config::default()
    })]

    /// Tag soup (the generator the integration fuzz tests use): the `paper` reader's text
    /// bookkeeping holds and both profiles read every page into sentences without a panic.
    #[test]
    fn tag_soup_keeps_the_text_bookkeeping(html in tag_soup::tag_soup()) {
        assert_text_bookkeeping(&html);
        for profile in [Profile::Paper, Profile::Default] {
            if let SearchOutcome::Article(page) = parse_search_page(&html, profile) {
                let sentences = page.sentences(profile);
                let _ = summary(&sentences);
            }
        }
    }
}

/// For every element, the text ranges the builder keeps agree with the text itself: `stripped`
/// is `python_strip(text)` and `stripped_spaces` counts its spaces.
fn assert_text_bookkeeping(html: &str) {
    let doc = Document::parse(html);
    for el in doc.elements() {
        let text = doc.text(el);
        assert_eq!(
            doc.stripped_text(el),
            python_strip(text),
            "stripped text in {html:?}"
        );
        assert_eq!(
            doc.elements[el].stripped_spaces,
            text_spaces(python_strip(text)),
            "spaces in {html:?}"
        );
    }
}

fn text_spaces(text: &str) -> usize {
    text.bytes().filter(|&b| b == b' ').count()
}

/// `n` repetitions of `piece`.
fn repeated(piece: &str, n: usize) -> String {
    piece.repeat(n)
}

/// 20,000 unclosed `<p>` nest: BeautifulSoup's `find_all("p")` gives each one with the text of
/// all that follow, 3 GB of text in all. The reader keeps the outermost blocks exactly and stops
/// at the page budget, with work linear in the page.
#[test]
fn nested_unclosed_paragraphs_stay_within_the_page_budget() {
    let html = repeated("<p>word word word ", 20_000);
    let doc = Document::parse(&html);
    assert!(doc.work <= 3 * 20_000 + 1, "builder work {}", doc.work);
    // (`Page::new` caps any article at the page limit: what matters here is the work above.)
    let outcome = parse_search_page(&html, Profile::Paper);
    let page = article(outcome);
    // The outermost block holds every word; the next one all but the first three.
    let all = python_strip(&"word word word ".repeat(20_000)).to_owned();
    assert_eq!(page.paragraphs[0], all);
    assert_eq!(page.paragraphs[1], all["word word word ".len()..]);
    assert!(page.paragraphs.len() > 20 && page.paragraphs.len() < 20_000);
}

/// 16,000 unclosed result headings nest the same way: at most 20 titles are read, within the
/// page budget, in both profiles.
#[test]
fn nested_unclosed_result_headings_stay_within_the_page_budget() {
    let html = repeated(
        "<div class=\"mw-search-result-heading\"><a>Some title</a> words ",
        16_000,
    );
    for profile in [Profile::Paper, Profile::Default] {
        let outcome = parse_search_page(&html, profile);
        let SearchOutcome::Results(titles) = &outcome else {
            panic!("expected results, got a {profile} outcome");
        };
        assert!(
            !titles.is_empty() && titles.len() <= MAX_RESULT_TITLES,
            "{profile}"
        );
        assert!(
            outcome.text_len() <= crate::docstore::page::PAGE_TEXT_LIMIT,
            "{profile}"
        );
    }
}

/// N unclosed tags then N stray end tags: an end tag with no open element of its name is
/// dropped without walking the N open elements (before, N × N steps).
#[test]
fn stray_end_tags_do_not_walk_the_open_elements() {
    const N: usize = 20_000;
    for (open, stray) in [("<span>", "</p>"), ("<div>", "</li>"), ("<b>", "</custom-tag>")] {
        let html = format!("{}x y z{}", open.repeat(N), stray.repeat(N));
        let doc = Document::parse(&html);
        assert!(doc.work <= 4 * N, "{open}{stray}: builder work {}", doc.work);
        for profile in [Profile::Paper, Profile::Default] {
            let _ = parse_search_page(&html, profile);
        }
    }
    // Matching end tags close what they match, each element once.
    let html = format!("{}x y z{}", "<div><span>".repeat(N), "</div>".repeat(N));
    let doc = Document::parse(&html);
    assert!(doc.work <= 8 * N, "builder work {}", doc.work);
}

#[test]
fn stripped_ranges_match_the_text() {
    for html in [
        "<p>  x y z </p>\u{a0}<p>\u{a0} a b \u{a0}</p>",
        "<p> <b> </b> a <i>b </i></p><p></p><p>\u{2003}</p>",
        "<div><p>one two <p>three</div> four",
        "<pre>  a  b  </pre><p>&nbsp;x&#32;y z&nbsp;</p>",
    ] {
        assert_text_bookkeeping(html);
    }
}

/// The default reader hands html5ever no page nested deeper than a browser builds: start tags
/// past `MAX_DEPTH` are dropped (their text kept); real pages pass through untouched.
#[test]
fn the_default_reader_caps_the_nesting_depth() {
    use super::browser::{MAX_DEPTH, within_depth};
    let nested = "<div class=\"mw-search-result-heading\">title ".repeat(16_000);
    let capped = within_depth(&nested);
    assert_eq!(capped.matches("<div").count(), MAX_DEPTH);
    assert_eq!(capped.matches("title ").count(), 16_000);
    // Stray end tags go; `</br>` is a line break and stays.
    assert_eq!(within_depth("<p>a</div>b</br>c</p></p>"), "<p>ab</br>c</p>");
    // Sloppy but shallow: unclosed <p> and <li> close each other, as in HTML.
    let sloppy = format!(
        "<ul>{}</ul>{}",
        "<li><p>item".repeat(5_000),
        "<p>para".repeat(5_000)
    );
    assert!(matches!(within_depth(&sloppy), Cow::Borrowed(_)));
    for name in [
        "colorado_orogeny_hit.html",
        "colorado_orogenyy_similar.html",
        "nonexistent_miss.html",
        "synthetic_disambiguation.html",
        "synthetic_abbreviations_coordinates.html",
    ] {
        assert!(matches!(within_depth(&fixture(name)), Cow::Borrowed(_)), "{name}");
    }
}
