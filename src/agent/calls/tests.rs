use std::collections::HashSet;

use serde_json::{Value, json};

use super::*;
use crate::agent::fewshot::Fewshot;
use crate::llm::{ReplyMessage, WireCall};

fn functions() -> FunctionSet {
    FunctionSet::new(["Calculate", "WebSearch", "GetInvoice"], &Toolbox::default())
}

fn call(id: Option<&str>, name: &str, arguments: Value) -> WireCall {
    WireCall {
        id: id.map(str::to_owned),
        name: name.to_owned(),
        arguments,
        passback: Default::default(),
    }
}

fn read(content: Option<&str>, calls: Vec<WireCall>) -> ReadReply {
    let message = ReplyMessage {
        content: content.map(str::to_owned),
        reasoning: Default::default(),
        tool_calls: calls,
        passback: Default::default(),
    };
    functions().read_reply(&message, 2, &mut HashSet::new())
}

fn actions(reply: &ReadReply) -> Vec<Result<Action, CallError>> {
    reply.calls.iter().map(|call| call.action.clone()).collect()
}

#[test]
fn functions_are_named_in_snake_case_with_one_string_argument() {
    assert_eq!(function_name("WebSearch"), "web_search");
    assert_eq!(function_name("Calculate"), "calculate");
    assert_eq!(function_name("GetInvoice"), "get_invoice");
    assert_eq!(function_name("HTTPGet"), "http_get");
    assert_eq!(function_name("my_tool2"), "my_tool2");
    let set = functions();
    let names: Vec<&str> = set.functions().iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "search",
            "lookup",
            "finish",
            "calculate",
            "web_search",
            "get_invoice"
        ]
    );
    let parameters: Vec<&str> = set.functions().iter().map(|f| f.parameter.as_str()).collect();
    assert_eq!(
        parameters,
        ["entity", "keyword", "answer", "expression", "query", "input"]
    );
    let specs = set.specs();
    assert_eq!(
        specs[0].parameters,
        json!({
            "type": "object",
            "properties": {"entity": {"type": "string", "description": set.functions()[0].parameter_description}},
            "required": ["entity"],
            "additionalProperties": false,
        })
    );
    assert!(specs.iter().all(|spec| !spec.description.is_empty()));
}

#[test]
fn a_tools_wording_comes_from_its_description() {
    let mut toolbox = Toolbox::default();
    toolbox.register(std::sync::Arc::new(crate::tools::calculator::Calculate));
    let set = FunctionSet::new(["Calculate"], &toolbox);
    let calculate = &set.functions()[3];
    assert_eq!(calculate.parameter, "expression");
    assert_eq!(
        calculate.description,
        "Evaluates an arithmetic expression and returns the result."
    );
    // A replay without the toolbox reads the same calls.
    let bare = FunctionSet::new(std::iter::empty(), &Toolbox::default()).including(&["Calculate".to_owned()]);
    assert_eq!(bare.functions()[3].parameter, "expression");
    assert_eq!(bare.functions()[3].name, "calculate");
}

#[test]
fn arguments_as_text_or_object_make_the_same_action() {
    let reply = read(
        Some("I need to search it."),
        vec![
            call(Some("a"), "search", json!("{\"entity\": \"Arthur's Magazine\"}")),
            call(Some("b"), "lookup", json!({"keyword": "1844"})),
            call(None, "calculate", json!("{\"expression\":\"1+2\"}")),
            call(Some("d"), "finish", json!({"answer": " yes "})),
        ],
    );
    assert_eq!(reply.thought, "I need to search it.");
    assert_eq!(
        actions(&reply),
        [
            Ok(Action::Search("Arthur's Magazine".into())),
            Ok(Action::Lookup("1844".into())),
            Ok(Action::Tool {
                name: "Calculate".into(),
                argument: "1+2".into()
            }),
            Ok(Action::Finish("yes".into())),
        ]
    );
    assert_eq!(reply.calls[0].written(), "Search[Arthur's Magazine]");
    assert_eq!(reply.calls[1].arguments, "{\"keyword\":\"1844\"}");
}

#[test]
fn missing_and_repeated_ids_are_made_unique() {
    let mut used = HashSet::from(["old".to_owned()]);
    let message = ReplyMessage {
        content: None,
        reasoning: Default::default(),
        tool_calls: vec![
            call(None, "search", json!({"entity": "A"})),
            call(Some("same"), "search", json!({"entity": "B"})),
            call(Some("same"), "search", json!({"entity": "C"})),
            call(Some("old"), "search", json!({"entity": "D"})),
            call(Some(" "), "search", json!({"entity": "E"})),
        ],
        passback: Default::default(),
    };
    let reply = functions().read_reply(&message, 3, &mut used);
    let ids: Vec<&str> = reply.calls.iter().map(|call| call.id.as_str()).collect();
    assert_eq!(ids, ["call_3_1", "same", "call_3_3", "call_3_4", "call_3_5"]);
    assert_eq!(used.len(), 6);
    // The same reply read again in a conversation that used these ids gets new ones.
    let again = functions().read_reply(&message, 3, &mut used);
    assert_eq!(again.calls[0].id, "call_3_1_2");
    assert_eq!(again.calls[1].id, "call_3_2");
}

#[test]
fn the_entities_of_a_servers_html_escaping_are_decoded_and_nothing_else() {
    // llama-cpp-python's reply (fixtures/openai/tools/llama-cpp-python/second-turn.json).
    let reply = read(
        None,
        vec![call(
            Some("x"),
            "search",
            json!("{ \"entity\": \"First for Women&#34;\" }"),
        )],
    );
    assert_eq!(actions(&reply), [Ok(Action::Search("First for Women\"".into()))]);
    let cases = [
        ("Arthur&#39;s Magazine", "Arthur's Magazine"),
        ("AT&amp;T &lt;b&gt;", "AT&T <b>"),
        // Decoded once: what was written `&lt;` stays `&lt;`.
        ("&amp;lt;", "&lt;"),
        // Only whole entities of the escaping: `&not` without its `;`, other named and numeric
        // entities, a bare `&` are the model's own text.
        ("AT&amp;T &not done", "AT&T &not done"),
        (
            "Beyonc&eacute; &#233; &quot;x&quot; &#x27; R&D & co &amp",
            "Beyonc&eacute; &#233; &quot;x&quot; &#x27; R&D & co &amp",
        ),
        ("&&amp;;", "&&;"),
    ];
    for (argument, expected) in cases {
        let reply = read(None, vec![call(None, "search", json!({"entity": argument}))]);
        assert_eq!(
            actions(&reply),
            [Ok(Action::Search(expected.into()))],
            "{argument}"
        );
    }
}

#[test]
fn calls_outside_the_schema_are_refused_with_what_was_wrong() {
    let cases = [
        (call(None, "", json!({})), "the call names no function"),
        (
            call(None, "serach", json!({"entity": "x"})),
            "there is no function `serach`",
        ),
        (
            call(None, "search", json!("{\"entity\": ")),
            "the arguments of `search` are not a JSON object (EOF while parsing a value at line 1 column 11)",
        ),
        (
            call(None, "search", json!("[\"x\"]")),
            "the arguments of `search` are not a JSON object (found an array)",
        ),
        (
            call(None, "search", json!({})),
            "`search` needs the argument `entity`",
        ),
        (
            call(None, "finish", json!({"answer": 1889})),
            "`finish`'s argument `answer` must be a string, not a number",
        ),
        (
            call(None, "lookup", json!({"keyword": "  "})),
            "`lookup`'s argument `keyword` is empty",
        ),
        (
            call(None, "search", json!({"entity": "x", "query": "y"})),
            "`search` takes only `entity`, not `query`",
        ),
        (
            call(None, "search", Value::Null),
            "`search` needs the argument `entity`",
        ),
    ];
    for (wire, message) in cases {
        let reply = read(None, vec![wire.clone()]);
        let error = reply.calls[0].action.clone().unwrap_err();
        assert_eq!(error.to_string(), message, "{wire:?}");
    }
    let set = functions();
    assert_eq!(
        set.invalid_call_observation(&CallError::NoName),
        "Invalid call: the call names no function. Valid calls are search({\"entity\": string}), lookup({\"keyword\": string}), finish({\"answer\": string}), calculate({\"expression\": string}), web_search({\"query\": string}), get_invoice({\"input\": string})."
    );
    let refused = read(None, vec![call(None, "serach", json!({"entity": "x"}))]);
    assert_eq!(refused.calls[0].written(), "serach({\"entity\":\"x\"})");
}

#[test]
fn function_names_match_whatever_their_case_and_separators() {
    let reply = read(
        None,
        vec![
            call(None, "Search", json!({"entity": "A"})),
            call(None, "webSearch", json!({"query": "q"})),
            call(None, "web-search", json!({"query": "r"})),
        ],
    );
    assert!(actions(&reply).iter().all(Result::is_ok), "{reply:?}");
}

#[test]
fn calls_written_into_the_text_are_read() {
    // Hermes / Qwen through a server without a tool parser.
    let reply = read(
        Some(
            "I should search.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"entity\": \"Milhouse\"}}\n</tool_call>",
        ),
        Vec::new(),
    );
    assert_eq!(reply.thought, "I should search.");
    assert_eq!(actions(&reply), [Ok(Action::Search("Milhouse".into()))]);
    assert_eq!(reply.calls[0].id, "call_2_1");
    // Mistral.
    let reply = read(
        Some("[TOOL_CALLS][{\"name\": \"lookup\", \"arguments\": {\"keyword\": \"named\"}}]"),
        Vec::new(),
    );
    assert_eq!(reply.thought, "");
    assert_eq!(actions(&reply), [Ok(Action::Lookup("named".into()))]);
    // Llama 3.1's built-in tag, `parameters` for `arguments`.
    let reply = read(
        Some("<|python_tag|>{\"name\": \"finish\", \"parameters\": {\"answer\": \"Richard Nixon\"}}"),
        Vec::new(),
    );
    assert_eq!(actions(&reply), [Ok(Action::Finish("Richard Nixon".into()))]);
    // The whole text a call, in a fence.
    let reply = read(
        Some("```json\n{\"name\": \"search\", \"arguments\": {\"entity\": \"Adam Clayton Powell\"}}\n```"),
        Vec::new(),
    );
    assert_eq!(
        actions(&reply),
        [Ok(Action::Search("Adam Clayton Powell".into()))]
    );
    // JSON that is not a call stays text.
    let reply = read(Some("{\"answer\": \"yes\"}"), Vec::new());
    assert!(reply.calls.is_empty());
    assert_eq!(reply.thought, "{\"answer\": \"yes\"}");
    // A call block that does not parse is refused, saying so.
    let reply = read(Some("<tool_call>{\"name\": search}</tool_call>"), Vec::new());
    let error = reply.calls[0].action.clone().unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the reply's text holds a call that cannot be read (expected value"),
        "{error}"
    );
    // Plain text: no call.
    let reply = read(Some(" The answer is 1844. "), Vec::new());
    assert!(reply.calls.is_empty());
    assert_eq!(reply.thought, "The answer is 1844.");
}

/// The bundled examples as tool-call transcripts, kept in `fewshot/*.tools.txt`. Set
/// `REACT_WRITE_FEWSHOT=1` to write them again after a change.
#[test]
fn bundled_transcripts_are_generated_from_the_text_examples() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fewshot");
    let no_tools = FunctionSet::new(std::iter::empty(), &Toolbox::default());
    let cases = [
        ("hotpotqa", Fewshot::hotpotqa().examples, no_tools.clone()),
        ("fever", Fewshot::fever().examples, no_tools),
        (
            "calculate",
            crate::tools::calculator::EXAMPLES.to_owned(),
            FunctionSet::new(["Calculate"], &Toolbox::default()),
        ),
        (
            "websearch",
            crate::tools::websearch::EXAMPLES.to_owned(),
            FunctionSet::new(["WebSearch"], &Toolbox::default()),
        ),
    ];
    for (name, text, set) in cases {
        let transcript = Transcript::of(&text, &set);
        let mut generated = String::new();
        if !transcript.preamble.is_empty() {
            generated.push_str(&transcript.preamble);
            generated.push_str("\n\n");
        }
        generated.push_str(&transcript.examples);
        let path = dir.join(format!("{name}.tools.txt"));
        if std::env::var_os("REACT_WRITE_FEWSHOT").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            kept,
            generated,
            "{} is not what the examples make: run `REACT_WRITE_FEWSHOT=1 cargo test --lib calls::tests`",
            path.display()
        );
        // Every example action became a call.
        assert!(!generated.contains("Call: Search["), "{name}");
        assert_eq!(
            generated.matches("\nCall: ").count(),
            text.matches("\nAction ").count(),
            "{name}"
        );
    }
}

#[test]
fn transcripts_follow_the_examples_line_for_line() {
    let text = "\nQuestion: What is 2+2?\nThought 1: Easy.\nAction 1: Finish[4]\nQuestion: Who?\nThought 1: Search.\nAction 1: Search[Milhouse \"Van\" Houten]\nObservation 1: Milhouse is a character.\nThought 2: Odd.\nAction 2: Frobnicate[x]\n";
    let transcript = Transcript::of(text, &functions());
    assert_eq!(transcript.preamble, "");
    assert_eq!(
        transcript.examples,
        "Question: What is 2+2?\nAssistant: Easy.\nCall: finish({\"answer\":\"4\"})\n\nQuestion: Who?\nAssistant: Search.\nCall: search({\"entity\":\"Milhouse \\\"Van\\\" Houten\"})\nResult: Milhouse is a character.\nAssistant: Odd.\nCall: Frobnicate[x]\n"
    );
    let system = system_message(&[transcript], &functions(), Some("2026-11-24"));
    assert!(system.starts_with("Solve a question answering task by calling functions. "));
    assert!(system.contains("\n(1) search(entity): Searches the exact entity on Wikipedia"));
    assert!(system.contains("\n(6) get_invoice(input): Runs the action GetInvoice.\nToday is 2026-11-24.\n"));
    assert!(system.ends_with("Call: Frobnicate[x]\n"));
    let fever = Transcript::of(&Fewshot::fever().examples, &functions());
    assert!(
        fever
            .preamble
            .starts_with("Determine if there is Observation that SUPPORTS or REFUTES a Claim")
    );
    let system = system_message(&[fever], &functions(), None);
    assert!(system.starts_with("Determine if there is Observation"));
    assert!(system.contains(" Work by calling functions. Before each call"));
}
