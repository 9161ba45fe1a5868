//! What the fuzz test (`tests/it/fuzz.rs`) and the long fuzz run (`src/bin/fuzz.rs`) feed the
//! parsers that read outside text, and what each must hold for every input besides not panicking.

use proptest::prelude::*;

use crate::tag_soup;
use react_docstore::agent::tools::calculator;
use react_docstore::docstore::page::{OBSERVATION_CHARS, SENTENCE_CHARS};
use react_docstore::docstore::{Reader, SearchOutcome, parse_search_page};
use react_docstore::{ActionGrammar, Profile};

/// Text from `pieces` and arbitrary Unicode, glued together.
fn glued(pieces: &'static [&'static str], max_pieces: usize) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => proptest::sample::select(pieces).prop_map(str::to_owned),
        1 => any::<String>().prop_map(|text| text.chars().take(12).collect()),
    ];
    prop::collection::vec(piece, 0..max_pieces).prop_map(|pieces| pieces.concat())
}

const COMPLETION_PIECES: &[&str] = &[
    "Search[",
    "search[",
    "Lookup[",
    "Finish[",
    "finish[",
    "think[",
    "Calculate[",
    "WEBSEARCH [",
    "Dance[",
    "[",
    "]",
    "]]",
    "Thought 1:",
    "Thought 2: ",
    "Action 1: ",
    "Action 2:",
    "Action:",
    "\nAction 1: ",
    "\nAction 3: ",
    "\nObservation 1:",
    "\nObservation",
    "\nQuestion:",
    "\nClaim:",
    "\n",
    "\r\n",
    " ",
    "\t",
    "`",
    "\"",
    "'",
    "**",
    "Colorado orogeny",
    "2+2",
    "é",
    "日本",
    "\u{0}",
    "\u{200b}",
    "🦀",
];

/// What a model might write for one step.
pub fn completion() -> impl Strategy<Value = String> {
    glued(COMPLETION_PIECES, 24)
}

const EXPRESSION_PIECES: &[&str] = &[
    "0", "1", "2", "7", "9", "10", "1,000", "3.5", ".5", "12.", "1e308", "2.5e-3", "1E+400", "+", "-", "−",
    "*", "**", "×", "·", "/", "÷", "%", "^", "!", "(", ")", ",", " ", "pi", "π", "e", "sqrt(", "abs(",
    "round(", "log(", "log10(", "ln(", "exp(", "sin(", "asin(", "min(", "max(", "ceil(", "floor(", "x", "F",
    "`", "\"", "'", "=", "!=",
];

/// An expression as a model might write it inside `Calculate[...]`.
pub fn expression() -> impl Strategy<Value = String> {
    glued(EXPRESSION_PIECES, 32)
}

/// A search response: tag soup (`tag_soup.rs`, the one generator of broken pages).
pub fn html() -> impl Strategy<Value = String> {
    tag_soup::tag_soup()
}

/// Every entry point of the action grammar, in both profiles, on one completion.
pub fn check_grammar(text: &str) {
    for profile in [Profile::Default, Profile::Paper] {
        let grammar = ActionGrammar::new(profile, ["Calculate".to_owned(), "WebSearch".to_owned()]);
        for step in 1..=3 {
            let cut = grammar.cut_completion(text, step);
            assert!(text.starts_with(cut), "the cut completion is a prefix: {text:?}");
            let split = grammar.split_completion(cut, step);
            if let Some(action) = &split.action {
                let parsed = grammar.parse(action);
                grammar.display(action, &parsed);
            }
        }
        grammar.fallback_thought(text);
        let action = grammar.fallback_action(text);
        let parsed = grammar.parse(&action);
        grammar.display(&action, &parsed);
        if let Err(error) = grammar.parse(text) {
            assert!(!error.to_string().is_empty());
        }
    }
}

/// The calculator on one expression: a value is finite and shown as a number, never `nan`/`inf`.
pub fn check_calculator(text: &str) {
    if let Ok(value) = calculator::evaluate(text) {
        assert!(value.is_finite(), "{text:?} gave {value}");
        check_format_number(value);
    }
    let observation = calculator::observation(text);
    assert!(!observation.is_empty());
    assert!(
        !["nan", "inf", "-inf"].contains(&observation.as_str()),
        "{text:?} gave {observation}"
    );
}

/// `format_number` on any `f64`: finite values read back as themselves; the others have a name.
pub fn check_format_number(value: f64) {
    let text = calculator::format_number(value);
    if value.is_finite() {
        assert_eq!(text.parse::<f64>().ok(), Some(value), "{value:?} shown as {text}");
    } else {
        assert!(
            ["nan", "inf", "-inf"].contains(&text.as_str()),
            "{value:?} shown as {text}"
        );
    }
}

/// The HTML reader on one page, in both profiles: no panic, and what a page keeps and shows
/// stays bounded.
pub fn check_html(html: &str) {
    for profile in [Profile::Paper, Profile::Default] {
        check_page(html, profile);
    }
}

fn check_page(html: &str, profile: Profile) {
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
