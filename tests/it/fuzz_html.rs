//! A fuzz-style property test of the HTML reader, both profiles: tag soup from a small alphabet
//! of tags, attributes, character references and text never panics, and what a page keeps and
//! shows stays bounded.

use proptest::prelude::*;
use proptest::test_runner::Config;
use react_docstore::Profile;
use react_docstore::docstore::page::{OBSERVATION_CHARS, SENTENCE_CHARS};
use react_docstore::docstore::{Reader, SearchOutcome, parse_search_page};

/// The pieces tag soup is made of: MediaWiki's markers, tags the readers treat specially,
/// broken markup, character references (named, numeric, legacy without `;`, invalid) and text.
const PIECES: &[&str] = &[
    "<p>",
    "</p>",
    "<p class=\"x\">",
    "<ul>",
    "</ul>",
    "<ol>",
    "<li>",
    "</li>",
    "<dl><dt>",
    "<dd>",
    "<div class=\"mw-parser-output\">",
    "<div id=\"mw-content-text\">",
    "</div>",
    "<div class=\"mw-search-result-heading\">",
    "<div class='mw-search-result-heading'><a href=\"/wiki/T\" title=\"T\">",
    "<span class=\"searchalttitle\">(redirect from ",
    "<p class=\"mw-search-nonefound\">",
    "<div id=\"disambigbox\">",
    "<h1 id=\"firstHeading\">",
    "</h1>",
    "<h2>",
    "</h2>",
    "See also",
    "References",
    "<a href=\"/wiki/X\" title=\"X &amp; Y\">",
    "<a class=\"new\">",
    "</a>",
    "<b>",
    "</b>",
    "<i>",
    "</span>",
    "<span style=\"display:none\">",
    "<sup class=\"reference\">[1]</sup>",
    "<table class=\"infobox\"><tr><td>",
    "</td></tr></table>",
    "<script>",
    "</script>",
    "<style>.a{}</style>",
    "<template>",
    "<ruby>x<rt>y</rt></ruby>",
    "<pre>  </pre>",
    "<textarea>",
    "<br>",
    "<br/>",
    "<img alt='{\\displaystyle x^{2}}' class='mwe-math-fallback-image-inline'>",
    "<title>",
    "</title>",
    "<body>",
    "<html>",
    "<!DOCTYPE html>",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<?xml ?>",
    "<p/",
    "</",
    "<",
    ">",
    "=",
    "\"",
    "'",
    "&amp;",
    "&amp",
    "&ampx",
    "&nbsp;",
    "&nGt;",
    "&notin;",
    "&notit;",
    "&unknown;",
    "&#150;",
    "&#x1F600;",
    "&#0;",
    "&#xD800;",
    "&#99999999999;",
    "&#",
    "&",
    " ",
    "  ",
    "\n",
    "\t",
    "\u{a0}",
    "word",
    "Sentence one. ",
    "Mr. Smith went to the U.S. ",
    "may refer to:",
    "There were no results matching the query.",
    "\\x",
    "\\u00e9",
    "\\n",
    "\\",
    "é",
    "東京",
];

/// One piece of soup: a piece of the alphabet, any character, or a piece repeated many times
/// (deep nesting, long runs without a sentence break).
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => proptest::sample::select(PIECES).prop_map(str::to_owned),
        1 => any::<char>().prop_map(String::from),
        1 => (proptest::sample::select(PIECES), 1..400usize).prop_map(|(piece, n)| piece.repeat(n)),
    ]
}

fn soup() -> impl Strategy<Value = String> {
    proptest::collection::vec(piece(), 0..60).prop_map(|pieces| pieces.concat())
}

/// Reads `html` under `profile` and checks the bounds; panics (failing the case) otherwise.
fn check(html: &str, profile: Profile) {
    let outcome = parse_search_page(html, profile);
    let kept = outcome.text_len();
    if profile == Profile::Default {
        // The body is a selection of the page's text: never more than the page (references
        // decode to at most twice their length).
        assert!(
            kept <= 2 * html.len(),
            "default: kept {kept} bytes of a {}-byte page",
            html.len()
        );
    }
    if let SearchOutcome::Article(page) | SearchOutcome::Disambiguation { page, .. } = outcome {
        let mut reader = Reader::new(profile);
        let shown = reader.open(page);
        let looked_up = reader.lookup("word");
        if profile == Profile::Default {
            let marks = 64;
            assert!(
                shown.chars().count() <= OBSERVATION_CHARS + marks,
                "observation {shown:?}"
            );
            assert!(
                looked_up.chars().count() <= SENTENCE_CHARS + marks,
                "lookup {looked_up:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(Config {
        cases: 600,
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn tag_soup_never_panics_and_stays_bounded(html in soup()) {
        check(&html, Profile::Paper);
        check(&html, Profile::Default);
    }
}
