//! What the fuzz test (`tests/it/fuzz.rs`) and the long fuzz run (`src/bin/fuzz.rs`) feed the
//! parsers that read outside text, and what each must hold for every input besides not panicking.

use proptest::prelude::*;

use crate::tag_soup;
use react_docstore::agent::action::ActionGrammar;
use react_docstore::base::profile::Profile;
use react_docstore::docstore::{OBSERVATION_CHARS, SENTENCE_CHARS};
use react_docstore::docstore::{Reader, SearchOutcome, parse_search_page};
use react_docstore::tools::calculator;

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

/// Real run lines: every results line of `fixtures/runs/methods/` and `fixtures/runs/trials/`,
/// and the single runs of `fixtures/runs/synthetic/` and `fixtures/runs/function-calls/`.
fn real_runs() -> &'static [serde_json::Value] {
    static RUNS: std::sync::OnceLock<Vec<serde_json::Value>> = std::sync::OnceLock::new();
    RUNS.get_or_init(|| {
        let root = crate::repository_root().join("fixtures/runs");
        let mut runs = Vec::new();
        for folder in ["methods", "trials", "synthetic", "function-calls"] {
            let mut paths: Vec<_> = std::fs::read_dir(root.join(folder))
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .collect();
            paths.sort();
            for path in paths {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                match path.extension().and_then(|ext| ext.to_str()) {
                    Some("jsonl") => {
                        runs.extend(text.lines().filter_map(|line| serde_json::from_str(line).ok()))
                    }
                    Some("json") => runs.extend(serde_json::from_str(&text).ok()),
                    _ => {}
                }
            }
        }
        assert!(runs.len() > 20, "{} runs in fixtures/runs", runs.len());
        runs
    })
}

/// What a mutation puts in place of a value: huge, negative and fractional numbers, numbers
/// past `u64`, deep nesting, long strings, nothing, and every other type.
fn hostile_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    prop_oneof![
        Just(json!(u64::MAX)),
        Just(json!(1_000_000_000_000_000_000_u64)),
        Just(json!(u64::from(u32::MAX))),
        Just(json!(4_294_967_296_u64)),
        Just(json!(-1)),
        Just(json!(i64::MIN)),
        Just(json!(1e308)),
        Just(json!(-0.0)),
        Just(json!(0.5)),
        Just(json!(0)),
        Just(serde_json::from_str::<serde_json::Value>("18446744073709551616").unwrap_or(json!(null))),
        Just(json!(null)),
        Just(json!(true)),
        Just(json!("NaN")),
        Just(json!("x".repeat(100_000))),
        Just(json!([])),
        Just(json!({})),
        (1usize..100).prop_map(|depth| { (0..depth).fold(json!(1), |inner, _| json!([inner])) }),
        any::<String>().prop_map(serde_json::Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|x| serde_json::Number::from_f64(x).map_or(json!(null), serde_json::Value::Number)),
    ]
}

/// One mutation of a run, at a place chosen by `at` among its values (depth first).
#[derive(Debug, Clone)]
enum Mutation {
    Replace(usize, serde_json::Value),
    Remove(usize),
    AddField(usize, String, serde_json::Value),
    /// A field of this name, wherever it is (the k-th of them): a count a reader sizes things by.
    SetField(String, usize, serde_json::Value),
}

const FIELD_NAMES: &[&str] = &[
    "samples",
    "votes",
    "answered",
    "asked",
    "batch",
    "n",
    "max_steps",
    "trial",
    "epoch",
    "request",
    "llm_calls",
    "prompt_tokens",
    "calls",
    "hits",
    "count",
    "selected",
    "position",
    "index",
    "shots",
    "steps",
    "vote",
    "sc_stop",
    "method",
    "format",
    "reviewer_note",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), hostile_value()).prop_map(|(at, value)| Mutation::Replace(at, value)),
        1 => any::<usize>().prop_map(Mutation::Remove),
        2 => (any::<usize>(), proptest::sample::select(FIELD_NAMES), hostile_value())
            .prop_map(|(at, name, value)| Mutation::AddField(at, name.to_owned(), value)),
        3 => (proptest::sample::select(FIELD_NAMES), any::<usize>(), hostile_value())
            .prop_map(|(name, k, value)| Mutation::SetField(name.to_owned(), k, value)),
    ]
}

/// How many values `value` holds, itself included.
fn n_values(value: &serde_json::Value) -> usize {
    1 + match value {
        serde_json::Value::Array(items) => items.iter().map(n_values).sum(),
        serde_json::Value::Object(fields) => fields.values().map(n_values).sum(),
        _ => 0,
    }
}

/// The value at place `at` (depth first, `value` itself at 0).
fn nth_value(value: &mut serde_json::Value, at: usize) -> Option<&mut serde_json::Value> {
    if at == 0 {
        return Some(value);
    }
    let mut rest = at - 1;
    let children: Vec<&mut serde_json::Value> = match value {
        serde_json::Value::Array(items) => items.iter_mut().collect(),
        serde_json::Value::Object(fields) => fields.values_mut().collect(),
        _ => return None,
    };
    for child in children {
        let size = n_values(child);
        if rest < size {
            return nth_value(child, rest);
        }
        rest -= size;
    }
    None
}

/// Every field named `name` in `value`, depth first.
fn fields_named<'a>(
    value: &'a mut serde_json::Value,
    name: &str,
    found: &mut Vec<&'a mut serde_json::Value>,
) {
    match value {
        serde_json::Value::Object(fields) => {
            for (key, child) in fields.iter_mut() {
                if key == name {
                    found.push(child);
                } else {
                    fields_named(child, name, found);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for child in items {
                fields_named(child, name, found);
            }
        }
        _ => {}
    }
}

fn apply(run: &mut serde_json::Value, mutation: &Mutation) {
    let size = n_values(run);
    match mutation {
        Mutation::SetField(name, k, value) => {
            let mut found = Vec::new();
            fields_named(run, name, &mut found);
            let n_found = found.len();
            if let Some(place) = found.into_iter().nth(k % n_found.max(1)) {
                *place = value.clone();
            }
        }
        Mutation::Replace(at, value) => {
            if let Some(place) = nth_value(run, at % size) {
                *place = value.clone();
            }
        }
        Mutation::Remove(at) => {
            // A field of an object: the object's first field, at an object chosen by `at`.
            if let Some(serde_json::Value::Object(fields)) = nth_value(run, at % size)
                && let Some(key) = fields.keys().next().cloned()
            {
                fields.remove(&key);
            }
        }
        Mutation::AddField(at, name, value) => match nth_value(run, at % size) {
            Some(serde_json::Value::Object(fields)) => {
                fields.insert(name.clone(), value.clone());
            }
            _ => {
                if let serde_json::Value::Object(fields) = run {
                    fields.insert(name.clone(), value.clone());
                }
            }
        },
    }
}

/// The counts of a run that a reader may size things by.
const COUNT_FIELDS: &[&str] = &[
    "samples",
    "votes",
    "answered",
    "asked",
    "batch",
    "max_steps",
    "trial",
    "epoch",
    "request",
    "n",
    "count",
    "selected",
    "position",
    "shots",
    "llm_calls",
    "prompt_tokens",
    "calls",
];

/// A count past every limit, or past its type.
fn hostile_number() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    proptest::sample::select(vec![
        json!(u64::MAX),
        json!(1_000_000_000_000_000_000_u64),
        json!(200_000_000_u64),
        json!(u64::from(u32::MAX)),
        json!(-1),
        json!(0),
        json!(1e18),
    ])
}

/// A results file: one to three real run lines, each mutated up to four times, sometimes cut
/// short or glued to garbage; or one real run with one count set past the limits.
pub fn run_lines() -> impl Strategy<Value = String> {
    let one_count = (
        proptest::sample::select(real_runs()),
        proptest::sample::select(COUNT_FIELDS),
        any::<usize>(),
        hostile_number(),
    )
        .prop_map(|(run, name, k, value)| {
            let mut run = run.clone();
            apply(&mut run, &Mutation::SetField(name.to_owned(), k, value));
            serde_json::to_string(&run).unwrap_or_default() + "\n"
        });
    let line = (
        proptest::sample::select(real_runs()),
        prop::collection::vec(mutation(), 0..4),
    )
        .prop_map(|(run, mutations)| {
            let mut run = run.clone();
            for mutation in &mutations {
                apply(&mut run, mutation);
            }
            serde_json::to_string(&run).unwrap_or_default()
        });
    let lines =
        (prop::collection::vec(line, 1..4), 0usize..8, any::<usize>()).prop_map(|(lines, ending, cut)| {
            let mut text = lines.join("\n");
            match ending {
                0 => text.truncate(text.floor_char_boundary(cut % (text.len() + 1))),
                1 => text.push_str("{\"steps\": ["),
                _ => text.push('\n'),
            }
            text
        });
    prop_oneof![1 => one_count, 2 => lines]
}

/// Every reader of run files on one results file, as `replay`, `export`, `score` and `merge`
/// (and the Python module's `read_results`) read it: each gives runs or an error, and a run read
/// is rebuilt (`export`), replayed (`replay`) and scored (`score`), without a panic or an
/// unbounded allocation (the fuzz example runs this in a child process whose memory is capped,
/// where an abort is seen).
pub fn check_run_lines(text: &str) {
    use react_docstore::record::evaluation::read_evaluation;
    use react_docstore::record::files::read_runs;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    std::fs::write(&results, text).unwrap();
    let single = dir.path().join("run.json");
    std::fs::write(&single, text).unwrap();
    let gold = crate::repository_root().join("fixtures/docstore/hotpotqa-distractor-3.json");
    let _ = read_runs(&single);
    if let Ok(evaluation) = read_evaluation(std::slice::from_ref(&results)) {
        let _ = evaluation.gaps();
        let _ = react_docstore::record::merge::write_results(&evaluation, &dir.path().join("merged.jsonl"));
    }
    let _ = react_docstore::analysis::score::score_evaluation(std::slice::from_ref(&results), &gold);
    let Ok(runs) = read_runs(&results) else {
        return;
    };
    for recorded in runs.iter().take(3) {
        let run = &recorded.run;
        let _ = futures::executor::block_on(react_docstore::trajectories::rebuild::rebuild(run));
        let mut trace = react_docstore::agent::trace::TracePrinter::silent();
        let no_world = |_: &react_docstore::record::run::Run, _: &ActionGrammar| None;
        let episode = futures::executor::block_on(react_docstore::apps::replay::replay_run(
            run, None, None, &no_world, &mut trace,
        ));
        assert!(episode.run.steps.len() <= react_docstore::base::limits::MAX_STEPS);
        assert!(episode.run.samples.len() <= react_docstore::base::limits::MAX_SAMPLES);
    }
}
