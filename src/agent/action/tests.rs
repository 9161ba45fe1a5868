use super::*;

fn tools() -> Vec<String> {
    vec!["Calculate".to_owned()]
}

#[track_caller]
fn check(profile: Profile, text: &str, expected: Result<Action, &str>) {
    let grammar = ActionGrammar::new(profile, tools());
    let parsed = grammar.parse(text);
    match (parsed, expected) {
        (Ok(action), Ok(expected)) => assert_eq!(action, expected, "parsing {text:?}"),
        (Err(error), Err(message)) => assert_eq!(error.to_string(), message, "parsing {text:?}"),
        (parsed, expected) => panic!("parsing {text:?}: got {parsed:?}, expected {expected:?}"),
    }
}

fn search(entity: &str) -> Action {
    Action::Search(entity.to_owned())
}

#[test]
fn tolerant_rules() {
    use Profile::Default as D;
    check(D, "Search[Colorado orogeny]", Ok(search("Colorado orogeny")));
    check(D, "search[Colorado orogeny]", Ok(search("Colorado orogeny")));
    check(D, "SEARCH [Colorado orogeny]", Ok(search("Colorado orogeny")));
    check(
        D,
        "  Search[ Colorado orogeny ]  ",
        Ok(search("Colorado orogeny")),
    );
    check(D, "`Search[Colorado orogeny]`", Ok(search("Colorado orogeny")));
    check(D, "\"Search[Colorado orogeny]\"", Ok(search("Colorado orogeny")));
    check(D, "**Search[Colorado orogeny]**", Ok(search("Colorado orogeny")));
    check(
        D,
        "Search[Colorado orogeny] to find the area",
        Ok(search("Colorado orogeny")),
    );
    check(
        D,
        "Search[\"Wallace and Gromit\"]",
        Ok(search("\"Wallace and Gromit\"")),
    );
    check(
        D,
        "Finish[Richard Nixon [US]]",
        Ok(Action::Finish("Richard Nixon [US]".into())),
    );
    check(D, "Finish[a [b]", Ok(Action::Finish("a [b".into())));
    check(D, "Finish[]", Ok(Action::Finish(String::new())));
    check(
        D,
        "Lookup[eastern sector]",
        Ok(Action::Lookup("eastern sector".into())),
    );
    check(
        D,
        "calculate[2+2]",
        Ok(Action::Tool {
            name: "Calculate".into(),
            argument: "2+2".into(),
        }),
    );
    check(D, "Search[", Err("`Search[` is never closed: expected `]`"));
    check(
        D,
        "Search[Colorado orogeny",
        Err("`Search[` is never closed: expected `]`"),
    );
    check(D, "Search[]", Err("`Search[]` needs an argument"));
    check(D, "Lookup[   ]", Err("`Lookup[]` needs an argument"));
    check(
        D,
        "Wander[Colorado]",
        Err("unknown action `Wander`, expected one of Search[...], Lookup[...], Finish[...], Calculate[...]"),
    );
    check(D, "Search Colorado orogeny", Err("expected `[` after `Search`"));
    check(
        D,
        "I should search Colorado orogeny.",
        Err("expected an action such as `Search[entity]`, found `I should search Colorado orogeny.`"),
    );
    check(
        D,
        "",
        Err("expected an action such as `Search[entity]`, found ``"),
    );
    check(
        D,
        "[Colorado]",
        Err("expected an action such as `Search[entity]`, found `[Colorado]`"),
    );
}

#[test]
fn paper_rules() {
    use Profile::Paper as P;
    check(P, "Search[Colorado orogeny]", Ok(search("Colorado orogeny")));
    check(P, "search[Colorado orogeny]", Ok(search("Colorado orogeny")));
    check(
        P,
        "Finish[Richard Nixon [US]]",
        Ok(Action::Finish("Richard Nixon [US]".into())),
    );
    check(P, "Search[ a ]", Ok(search(" a ")));
    check(P, "Think[hmm]", Ok(Action::Think("hmm".into())));
    check(
        P,
        "SEARCH[x]",
        Err("expected an action such as `Search[entity]`, found `sEARCH[x]`"),
    );
    check(
        P,
        "Search [x]",
        Err("expected an action such as `Search[entity]`, found `search [x]`"),
    );
    check(
        P,
        "Search[x] now",
        Err("expected an action such as `Search[entity]`, found `search[x] now`"),
    );
    check(
        P,
        "`Search[x]`",
        Err("expected an action such as `Search[entity]`, found ``Search[x]``"),
    );
    check(
        P,
        "Calculate[1+1]",
        Err("expected an action such as `Search[entity]`, found `calculate[1+1]`"),
    );
    check(
        P,
        "",
        Err("expected an action such as `Search[entity]`, found ``"),
    );
}

#[track_caller]
fn check_split(profile: Profile, completion: &str, step: usize, thought: &str, action: Option<&str>) {
    let grammar = ActionGrammar::new(profile, tools());
    let cut = grammar.cut_completion(completion, step);
    let split = grammar.split_completion(cut, step);
    assert_eq!(split.thought, thought, "thought of {completion:?}");
    assert_eq!(split.action.as_deref(), action, "action of {completion:?}");
}

#[test]
fn splitting_completions() {
    use Profile::{Default as D, Paper as P};
    let normal = " I need to search X.\nAction 1: Search[X]";
    check_split(D, normal, 1, "I need to search X.", Some("Search[X]"));
    check_split(P, normal, 1, "I need to search X.", Some("Search[X]"));
    // Wrong step number, no number, lower case.
    check_split(
        D,
        " I need X.\nAction 3: Search[X]",
        1,
        "I need X.",
        Some("Search[X]"),
    );
    check_split(P, " I need X.\nAction 3: Search[X]", 1, "I need X.", None);
    check_split(
        D,
        " I need X.\nAction: Search[X]",
        2,
        "I need X.",
        Some("Search[X]"),
    );
    check_split(
        D,
        " I need X.\naction 1 : search[X]",
        1,
        "I need X.",
        Some("search[X]"),
    );
    // A hallucinated observation and the rest of an episode.
    let runaway =
        " I need X.\nAction 1: Search[X]\nObservation 1: X is Y.\nThought 2: So Y.\nAction 2: Finish[Y]";
    check_split(D, runaway, 1, "I need X.", Some("Search[X]"));
    check_split(P, runaway, 1, "I need X.", Some("Search[X]"));
    let other_step = " I need X.\nAction 1: Search[X]\nObservation 2: junk";
    check_split(D, other_step, 1, "I need X.", Some("Search[X]"));
    check_split(
        P,
        other_step,
        1,
        "I need X.",
        Some("Search[X]\nObservation 2: junk"),
    );
    // No label, action on its own line.
    check_split(D, " I need X.\nSearch[X]", 1, "I need X.", Some("Search[X]"));
    // The model repeats the thought label; multi-line thoughts are joined.
    check_split(
        D,
        "Thought 1: I need X.\nand Y.\nAction 1: Search[X]",
        1,
        "I need X. and Y.",
        Some("Search[X]"),
    );
    // Nothing but a thought: the agent makes the fallback call.
    check_split(D, " I need to search X.", 1, "I need to search X.", None);
    check_split(
        P,
        " I need to search X.\nMore thinking.",
        1,
        "I need to search X.",
        None,
    );
    // Two actions for the same step: the paper's split gives three parts.
    let twice = " a\nAction 1: Search[X]\nAction 1: Search[Y]";
    check_split(P, twice, 1, "a", None);
    check_split(D, twice, 1, "a", Some("Search[X]"));
    // A question the model invents ends the completion.
    check_split(
        D,
        " I know.\nAction 1: Finish[Y]\nQuestion: next?",
        1,
        "I know.",
        Some("Finish[Y]"),
    );
}

#[test]
fn fallback_completions() {
    let default = ActionGrammar::new(Profile::Default, tools());
    assert_eq!(default.fallback_action(" Search[X]"), "Search[X]");
    assert_eq!(default.fallback_action(" Action 1: Search[X]"), "Search[X]");
    assert_eq!(
        default.fallback_thought("Thought 1: I think.\nSomething"),
        "I think."
    );
    let paper = ActionGrammar::new(Profile::Paper, tools());
    assert_eq!(paper.fallback_action(" Search[X] "), "Search[X]");
    assert_eq!(paper.fallback_thought(" Thought: x\ny"), "Thought: x");
}

#[test]
fn displayed_actions() {
    let default = ActionGrammar::new(Profile::Default, tools());
    let text = "search[ X ] please";
    assert_eq!(default.display(text, &default.parse(text)), "Search[X]");
    assert_eq!(
        default.display(" Wander[X] ", &default.parse(" Wander[X] ")),
        "Wander[X]"
    );
    let paper = ActionGrammar::new(Profile::Paper, tools());
    assert_eq!(paper.display(text, &paper.parse(text)), text);
    assert_eq!(
        default.valid_actions(),
        "Search[...], Lookup[...], Finish[...], Calculate[...]"
    );
}
