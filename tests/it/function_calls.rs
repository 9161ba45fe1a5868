//! `--api tools`: the client against local servers answering in each server's tool-call shapes
//! (real llama-cpp-python exchanges, the documented shapes of OpenAI, vLLM, llama.cpp, Ollama and
//! TGI), the agent's conversation end to end through the command line, and the replay of a tools
//! run with no model.

use std::collections::HashSet;
use std::process::Command;

use react_docstore::agent::action::Action;
use react_docstore::agent::calls::FunctionSet;
use react_docstore::llm::{CallPurpose, ConverseRequest, Llm, LlmError, Message, openai::Api};
use react_docstore::record::run::Run;
use react_docstore::tools::Toolbox;
use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use crate::fixture;
use crate::llm::{Sequence, client, model_server};

fn fixture_json(path: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(&format!("openai/tools/{path}"))).unwrap()).unwrap()
}

/// A real llama-cpp-python exchange: its request and its response body.
fn llama_cpp(name: &str) -> (Value, Value) {
    let exchange = fixture_json(&format!("llama-cpp-python/{name}.json"));
    (exchange["request"].clone(), exchange["response"].clone())
}

/// An OpenAI-shaped reply (the documented body) with this text and these calls.
fn reply(content: Option<&str>, calls: &[(&str, Value)]) -> Value {
    let mut body = fixture_json("documented/openai.json");
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(idx, (name, arguments))| {
            json!({"id": format!("call_{idx}_{name}"), "type": "function",
                   "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    body["choices"][0]["message"]["content"] = json!(content);
    body["choices"][0]["message"]["tool_calls"] = json!(calls);
    body
}

fn bodies(replies: Vec<Value>) -> Sequence {
    Sequence::new(
        replies
            .into_iter()
            .map(|body| ResponseTemplate::new(200).set_body_json(body))
            .collect(),
    )
}

fn functions() -> FunctionSet {
    FunctionSet::new(std::iter::empty(), &Toolbox::default())
}

/// One turn of the client against a server answering `body`.
async fn converse_once(body: ResponseTemplate) -> (Result<react_docstore::llm::Reply, LlmError>, Vec<Value>) {
    let server = model_server("chat/completions", Sequence::new(vec![body])).await;
    let llm = client(&server, Api::Tools);
    let messages = [
        Message::System("Solve it by calling functions.".into()),
        Message::User(
            "Question: Which magazine was started first Arthur's Magazine or First for Women?".into(),
        ),
    ];
    let specs = functions().specs();
    let result = llm
        .converse(ConverseRequest {
            messages: &messages,
            functions: &specs,
            step: 1,
            purpose: CallPurpose::Step,
        })
        .await;
    (result, crate::request_bodies(&server).await)
}

/// A server, its reply body, the thought and the calls (actions, ids) read from it.
type Case<'a> = (&'a str, Value, &'a str, Vec<Result<Action, String>>, Vec<&'a str>);

#[tokio::test]
async fn every_servers_reply_shape_reads_as_the_calls_it_holds() {
    let search = |entity: &str| Ok(Action::Search(entity.to_owned()));
    let (_, real) = llama_cpp("first-turn-auto");
    let cases: Vec<Case> = vec![
        // `function_call` names `lookup:`; `tool_calls` is read.
        (
            "llama-cpp-python",
            real,
            "",
            vec![search("First for Women")],
            vec!["call__0_search_cmpl-6455cc67-cfa4-486e-a641-df5d0bbc29ae"],
        ),
        (
            "openai",
            fixture_json("documented/openai.json"),
            "",
            vec![search("Arthur's Magazine"), search("First for Women")],
            vec!["call_abc123", "call_abc456"],
        ),
        (
            "vllm",
            fixture_json("documented/vllm-hermes.json"),
            "I need to search Arthur's Magazine and First for Women, and find which was started first.",
            vec![search("Arthur's Magazine")],
            vec!["chatcmpl-tool-5e2a4d6f0b8c4e1f9a3b7c2d1e0f4a5b"],
        ),
        (
            "qwen in text",
            fixture_json("documented/qwen-text-embedded.json"),
            "I need to search Arthur's Magazine first.",
            vec![search("Arthur's Magazine")],
            vec!["call_1_1"],
        ),
        (
            "llama.cpp --jinja",
            fixture_json("documented/llama-cpp-jinja.json"),
            "",
            vec![search("Arthur's Magazine")],
            vec!["DzOQ3jUZeWmsDYOkDQtc0fGyUBZ1VRRl"],
        ),
        (
            "ollama",
            fixture_json("documented/ollama.json"),
            "",
            vec![search("Arthur's Magazine")],
            vec!["call_r1pqdl2x"],
        ),
        // Arguments as an object, the same id twice.
        (
            "tgi",
            fixture_json("documented/tgi.json"),
            "",
            vec![search("Arthur's Magazine"), search("First for Women")],
            vec!["0", "call_1_2"],
        ),
    ];
    for (server, body, thought, expected, ids) in cases {
        let (result, _) = converse_once(ResponseTemplate::new(200).set_body_json(body)).await;
        let reply = result.unwrap_or_else(|error| panic!("{server}: {error}"));
        let read = functions().read_reply(&reply.message, 1, &mut HashSet::new());
        assert_eq!(read.thought, thought, "{server}");
        let actions: Vec<Result<Action, String>> = read
            .calls
            .iter()
            .map(|call| call.action.clone().map_err(|error| error.to_string()))
            .collect();
        assert_eq!(actions, expected, "{server}");
        let read_ids: Vec<&str> = read.calls.iter().map(|call| call.id.as_str()).collect();
        assert_eq!(read_ids, ids, "{server}");
        assert!(reply.usage.is_some(), "{server}");
    }
}

#[tokio::test]
async fn the_request_offers_the_functions_and_no_stop() {
    let (_, body) = llama_cpp("first-turn-auto");
    let (_, requests) = converse_once(ResponseTemplate::new(200).set_body_json(body)).await;
    let request = &requests[0];
    assert_eq!(request["tool_choice"], "auto");
    assert!(request.get("stop").is_none(), "{request}");
    let names: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "lookup", "finish"]);
    assert_eq!(request["tools"][0]["type"], "function");
    assert_eq!(
        request["tools"][0]["function"]["parameters"]["required"],
        json!(["entity"])
    );
    assert_eq!(request["messages"][0]["role"], "system");
    assert_eq!(request["messages"][1]["role"], "user");
}

#[tokio::test]
async fn a_server_that_refuses_tools_says_so_in_one_line_naming_the_api() {
    for name in ["vllm-no-tool-parser", "llama-cpp-no-jinja", "ollama-no-tools"] {
        let body = fixture_json(&format!("documented/{name}.json"));
        let (result, requests) = converse_once(ResponseTemplate::new(400).set_body_json(body)).await;
        let error = result.unwrap_err();
        assert!(
            matches!(error, LlmError::ToolsRejected { .. }),
            "{name}: {error:?}"
        );
        assert!(error.is_permanent(), "{name}");
        let message = error.to_string();
        assert!(!message.contains('\n'), "{message}");
        assert!(message.contains("`--api tools`"), "{message}");
        assert!(message.contains("`--api chat`"), "{message}");
        assert_eq!(requests.len(), 1, "{name}: a refusal is not retried");
    }
    // Their like: the field named as the refused parameter, other servers' words.
    let like = [
        json!({"error": {"message": "Unsupported parameter: 'tools' is not supported with this model.", "type": "invalid_request_error", "param": "tools", "code": "unsupported_parameter"}}),
        json!({"error": "model does not support tools"}),
        json!({"error": {"message": "Tool calling is not enabled for this model"}}),
    ];
    for body in like {
        let (result, _) = converse_once(ResponseTemplate::new(400).set_body_json(body.clone())).await;
        let error = result.unwrap_err();
        assert!(
            matches!(error, LlmError::ToolsRejected { .. }),
            "{body}: {error:?}"
        );
    }
    // A 400 about one conversation — an echoed call, a `tool` message — or about something else
    // is that question's error, not a refusal of tools: another question may go through.
    let per_conversation = [
        json!({"error": {"message": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "type": "invalid_request_error", "param": "messages.[3].role", "code": null}}),
        json!({"error": {"message": "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1_2", "param": "messages"}}),
        json!({"object": "error", "message": "Tool call id has to be 9 characters long, got call_1_1", "type": "BadRequestError", "code": 400}),
        json!({"error": {"message": "Unknown tool 'serach' in the tool call"}}),
        json!({"error": {"message": "maximum context length is 8192 tokens"}}),
    ];
    for body in per_conversation {
        let (result, _) = converse_once(ResponseTemplate::new(400).set_body_json(body.clone())).await;
        let error = result.unwrap_err();
        assert!(matches!(error, LlmError::Rejected { .. }), "{body}: {error:?}");
        assert!(!error.is_permanent(), "{body}");
    }
}

/// Answers a tools conversation: the question that holds `REFUSED` searches, and its second turn
/// (the echoed call and its answer) is refused with OpenAI's 400 about a `tool` message; every
/// other question finishes at once.
struct RefusesOneConversation;

const REFUSED: &str = "Missouri Compromise";

impl wiremock::Respond for RefusesOneConversation {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let refused = messages[1]["content"].as_str().unwrap().contains(REFUSED);
        match (refused, messages.len()) {
            (true, 2) => ResponseTemplate::new(200)
                .set_body_json(reply(None, &[("search", json!({"entity": REFUSED}))])),
            (true, _) => ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                "type": "invalid_request_error", "param": "messages.[3].role", "code": null}})),
            (false, _) => ResponseTemplate::new(200)
                .set_body_json(reply(None, &[("finish", json!({"answer": "Bath, Maine"}))])),
        }
    }
}

/// A server that refuses one question's echoed call fails that question only: the evaluation
/// goes on to the others.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_conversation_ends_its_question_not_the_evaluation() {
    let server = model_server("chat/completions", RefusesOneConversation).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tools.jsonl");
    let output = react(&["eval"], &server.uri())
        .arg(fixture("hotpotqa/official.json"))
        .args([
            "--docstore",
            "distractor",
            "--api",
            "tools",
            "--concurrency",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let runs: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let stopped: Vec<&str> = runs.iter().map(|run| run["stopped"].as_str().unwrap()).collect();
    assert_eq!(stopped, ["error", "finish", "finish"], "{stderr}");
    assert!(
        runs[0]["error"]
            .as_str()
            .unwrap()
            .contains("messages with role 'tool'"),
        "{}",
        runs[0]
    );
}

/// The binary with the model at `server` (unless empty) and the test corpus as its docstore.
fn react(args: &[&str], server: &str) -> Command {
    let mut command = crate::binary();
    command.args(args);
    if !server.is_empty() {
        command.args(["--base-url", &format!("{server}/v1"), "--model", "gpt-4o-mini"]);
    }
    command
}

/// `ask QUESTION --api tools --json` on the test corpus with `args`, against `server`: the run it
/// printed, once it succeeded.
fn ask_json(question: &str, args: &[&str], server: &wiremock::MockServer) -> Value {
    let corpus = crate::test_corpus();
    let output = react(
        &["ask", question, "--api", "tools", "--docstore", &corpus, "--json"],
        &server.uri(),
    )
    .args(args)
    .output()
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

const QUESTION: &str =
    "Which building was the Grand Ole Opry's home before it moved to the Grand Ole Opry House?";

/// What the model says, turn by turn: a search with its reasoning, a reply that calls nothing
/// (answered by the reminder), two calls in one reply (the second misspelt), a lookup, the answer.
fn scripted_replies() -> Vec<Value> {
    vec![
        reply(
            Some("I need to search Grand Ole Opry and find where it was held before."),
            &[("search", json!({"entity": "Grand Ole Opry"}))],
        ),
        reply(Some("It moved in 1974; I should look up its earlier home."), &[]),
        reply(
            None,
            &[
                ("lookup", json!({"keyword": "Ryman"})),
                ("serach", json!({"entity": "Ryman Auditorium"})),
            ],
        ),
        reply(
            Some("The Opry was held at the Ryman Auditorium before 1974."),
            &[("finish", json!({"answer": "Ryman Auditorium"}))],
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_with_tools_runs_the_conversation_and_its_run_replays_with_no_model() {
    let server = model_server("chat/completions", bodies(scripted_replies())).await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("run.json");
    let corpus = crate::test_corpus();
    let record_arg = record.display().to_string();
    let output = react(
        &[
            "ask",
            QUESTION,
            "--api",
            "tools",
            "--docstore",
            &corpus,
            "--record",
            &record_arg,
        ],
        &server.uri(),
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Ryman Auditorium\n");

    let run = Run::read(&record).unwrap();
    assert_eq!(run.api, Some(Api::Tools));
    let actions: Vec<&str> = run
        .steps
        .iter()
        .map(|step| step.action.as_deref().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "Search[Grand Ole Opry]",
            "Lookup[Ryman]",
            "serach({\"entity\":\"Ryman Auditorium\"})",
            "Finish[Ryman Auditorium]"
        ]
    );
    // Step 1 asked twice (the reply, the reminder's answer); step 3 ran the reply's second call.
    let replies: Vec<usize> = run.steps.iter().map(|step| step.replies.len()).collect();
    assert_eq!(replies, [1, 2, 0, 1]);
    assert_eq!(run.usage.llm_calls, 4);
    assert_eq!(run.usage.fallback_calls, 1);
    assert_eq!(run.usage.invalid_actions, 1);
    assert_eq!(run.usage.prompt_tokens, 4 * 1062);
    assert_eq!(
        run.steps[0].thought.as_deref(),
        Some("I need to search Grand Ole Opry and find where it was held before.")
    );
    assert_eq!(
        run.steps[1].thought.as_deref(),
        Some("It moved in 1974; I should look up its earlier home.")
    );
    assert!(
        run.steps[0]
            .observation
            .as_deref()
            .unwrap()
            .starts_with("The Grand Ole Opry is")
    );
    assert!(
        run.steps[1]
            .observation
            .as_deref()
            .unwrap()
            .starts_with("(Result 1 / "),
        "{:?}",
        run.steps[1]
    );
    assert!(
        run.steps[2]
            .observation
            .as_deref()
            .unwrap()
            .starts_with("Invalid call: there is no function `serach`. Valid calls are search("),
    );
    assert!(stderr.contains("Action 1: Search[Grand Ole Opry]"), "{stderr}");

    // The conversation as the server saw it.
    let requests = crate::request_bodies(&server).await;
    assert_eq!(requests.len(), 4);
    let roles = |request: &Value| -> Vec<String> {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| message["role"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(roles(&requests[1]), ["system", "user", "assistant", "tool"]);
    assert_eq!(
        roles(&requests[2]),
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(
        roles(&requests[3]),
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "tool",
            "tool"
        ]
    );
    let last = &requests[3]["messages"];
    assert_eq!(last[1]["content"], format!("Question: {QUESTION}"));
    assert_eq!(last[3]["tool_call_id"], "call_0_search");
    assert!(
        last[5]["content"]
            .as_str()
            .unwrap()
            .starts_with("Call one of the functions to go on: search(")
    );
    // An assistant message carrying calls says `""`, never `null` (llama-cpp-python answers 500).
    assert_eq!(last[6]["content"], "");
    assert_eq!(
        last[6]["tool_calls"][1]["function"]["arguments"],
        "{\"entity\":\"Ryman Auditorium\"}"
    );
    assert_eq!(last[7]["tool_call_id"], "call_0_lookup");
    assert_eq!(last[8]["tool_call_id"], "call_1_serach");
    assert!(last[8]["content"].as_str().unwrap().starts_with("Invalid call:"));
    let system = last[0]["content"].as_str().unwrap();
    assert!(
        system.contains("Call: search({\"entity\":\"Colorado orogeny\"})"),
        "{system}"
    );

    // The replay: no model, no docstore, the same run.
    let replayed = react(&["replay", "--json"], "").arg(&record).output().unwrap();
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    let mut replayed: Value = serde_json::from_slice(&replayed.stdout).unwrap();
    replayed.as_object_mut().unwrap().remove("source");
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(replayed, recorded);
    if std::env::var_os("REACT_WRITE_FIXTURES").is_some() {
        std::fs::copy(&record, fixture("runs/function-calls/grand-ole-opry.json")).unwrap();
    }
}

/// Calls a server left in the reply's text (Hermes' `<tool_call>`) are echoed as that text, once:
/// not again as made-up `tool_calls` (one with no name and arguments that are not JSON, for a block
/// that does not parse). Each is answered by its `tool` message; the broken one by the invalid-call
/// observation only.
#[tokio::test(flavor = "multi_thread")]
async fn calls_in_the_text_are_echoed_as_the_text_the_server_sent() {
    let text = "I should search it.\n<tool_call>{not json}</tool_call>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"entity\": \"Grand Ole Opry\"}}\n</tool_call>";
    let mut in_text = fixture_json("documented/qwen-text-embedded.json");
    in_text["choices"][0]["message"]["content"] = json!(text);
    let replies = vec![
        in_text,
        reply(None, &[("finish", json!({"answer": "Ryman Auditorium"}))]),
    ];
    let server = model_server("chat/completions", bodies(replies)).await;
    let run = ask_json(QUESTION, &[], &server);
    assert_eq!(run["steps"][1]["action"], "Search[Grand Ole Opry]");
    assert_eq!(run["usage"]["invalid_actions"], 1);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let messages = second["messages"].as_array().unwrap();
    let echoed = &messages[2];
    assert_eq!(
        echoed,
        &json!({"role": "assistant", "content": text}),
        "the reply as the server sent it, nothing more"
    );
    let answers: Vec<(&str, &str)> = messages[3..]
        .iter()
        .map(|message| {
            assert_eq!(message["role"], "tool");
            (
                message["tool_call_id"].as_str().unwrap(),
                message["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(answers.len(), 2, "{messages:?}");
    assert_eq!(answers[0].0, "call_1_1");
    assert!(
        answers[0].1.starts_with(
            "Invalid call: the reply's text holds a call that cannot be read (key must be a string"
        ),
        "{}",
        answers[0].1
    );
    assert_eq!(answers[1].0, "call_1_2");
    assert!(
        answers[1].1.starts_with("The Grand Ole Opry is"),
        "{}",
        answers[1].1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn recorded_tools_runs_replay_byte_for_byte() {
    // What replay derives from each recording's replies, written out by hand: each step's thought
    // and action, the answer, the counts of invalid calls and fallback calls.
    let invalid_serach = "Invalid call: there is no function `serach`. Valid calls are \
                          search({\"entity\": string}), lookup({\"keyword\": string}), finish({\"answer\": string}).";
    let smollm2_search = "The exact title of the article to search, as the title of its Wikipedia page, e.g. \"Colorado orogeny\".";
    let expected = [
        (
            // A scripted one: a reply with no call, then two calls in one reply, one invalid.
            "grand-ole-opry",
            vec![
                (
                    "I need to search Grand Ole Opry and find where it was held before.".to_owned(),
                    "Search[Grand Ole Opry]".to_owned(),
                ),
                (
                    "It moved in 1974; I should look up its earlier home.".to_owned(),
                    "Lookup[Ryman]".to_owned(),
                ),
                (
                    String::new(),
                    "serach({\"entity\":\"Ryman Auditorium\"})".to_owned(),
                ),
                (
                    "The Opry was held at the Ryman Auditorium before 1974.".to_owned(),
                    "Finish[Ryman Auditorium]".to_owned(),
                ),
            ],
            "Ryman Auditorium",
            (1, 1),
        ),
        (
            // A real one from llama-cpp-python's server: a small model copying the functions'
            // descriptions, odd characters included.
            "llama-cpp-smollm2",
            vec![
                (String::new(), format!("Search[{smollm2_search}]")),
                (
                    String::new(),
                    "Lookup[The exact title of the article to search, as the title of its Wikipedia page, e.g. \u{321}\u{3b8}\u{3c4}]"
                        .to_owned(),
                ),
                (
                    String::new(),
                    "Finish[The exact answer, as short as the examples\u{321}\u{3b8}\u{3c4}\"]".to_owned(),
                ),
            ],
            "The exact answer, as short as the examples\u{321}\u{3b8}\u{3c4}\"",
            (0, 0),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, steps, answer, (invalid_actions, fallback_calls)) in expected {
        let path = fixture(&format!("runs/function-calls/{name}.json"));
        let recorded = std::fs::read_to_string(&path).unwrap();
        // Replayed without what it derives, so that nothing derived can be copied.
        let stripped = dir.path().join(format!("{name}.json"));
        let mut run = crate::replay::without_derived_fields(&serde_json::from_str(&recorded).unwrap());
        if name == "grand-ole-opry" {
            // The answer to an invalid call is the agent's, not the world's.
            run["steps"][2].as_object_mut().unwrap().remove("observation");
        }
        std::fs::write(&stripped, run.to_string()).unwrap();
        let output = react(&["replay", "--json"], "").arg(&stripped).output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let replayed: Run = serde_json::from_slice(&output.stdout).unwrap();
        let derived: Vec<(String, String)> = replayed
            .steps
            .iter()
            .map(|step| (step.thought.clone().unwrap(), step.action.clone().unwrap()))
            .collect();
        assert_eq!(derived, steps, "{name}");
        assert_eq!(replayed.answer.as_deref(), Some(answer), "{name}");
        assert_eq!(
            replayed.stopped,
            Some(react_docstore::record::run::Stopped::Finish),
            "{name}"
        );
        assert_eq!(
            (replayed.usage.invalid_actions, replayed.usage.fallback_calls),
            (invalid_actions, fallback_calls),
            "{name}"
        );
        assert_eq!(replayed.api, Some(Api::Tools));
        if name == "grand-ole-opry" {
            assert_eq!(replayed.steps[2].observation.as_deref(), Some(invalid_serach));
        }
        // And the rest is the recording's: written as `--record` writes runs, the file byte for byte.
        let written = format!("{}\n", serde_json::to_string_pretty(&replayed).unwrap());
        assert_eq!(written, recorded, "{name}");
        let trace = react(&["replay"], "").arg(&path).output().unwrap();
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
        settings.set_prepend_module_to_snapshot(true);
        settings.bind(|| {
            insta::assert_snapshot!(
                format!("function_calls_replay_trace_{name}"),
                String::from_utf8_lossy(&trace.stderr)
            )
        });
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_that_never_calls_counts_as_an_invalid_step_and_repeats_stop_the_run() {
    let silent = reply(Some("I think the answer is Nashville."), &[]);
    let server = model_server("chat/completions", bodies(vec![silent])).await;
    let corpus = crate::test_corpus();
    let output = react(
        &["ask", QUESTION, "--api", "tools", "--docstore", &corpus, "--json"],
        &server.uri(),
    )
    .output()
    .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(run["stopped"], "repeated_action");
    let steps = run["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    assert_eq!(steps[0]["action"], "I think the answer is Nashville.");
    assert!(
        steps[0]["observation"]
            .as_str()
            .unwrap()
            .starts_with("Invalid call: the reply calls no function. Valid calls are search(")
    );
    assert_eq!(run["usage"]["llm_calls"], 8);
    assert_eq!(run["usage"]["fallback_calls"], 4);
    assert_eq!(run["usage"]["invalid_actions"], 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_paper_profile_refuses_tools_before_any_call() {
    let output = react(
        &["ask", QUESTION, "--api", "tools", "--profile", "paper"],
        "http://127.0.0.1:9",
    )
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`--api tools` needs `--profile default`"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_in_each_format_makes_results_compare_can_pair() {
    let questions = fixture("hotpotqa/official.json");
    let dir = tempfile::tempdir().unwrap();
    let finish_call = reply(
        Some("I know it."),
        &[("finish", json!({"answer": "Bath, Maine"}))],
    );
    let tools = model_server("chat/completions", bodies(vec![finish_call])).await;
    let chat = model_server(
        "chat/completions",
        Sequence::chat(&["Thought 1: I know it.\nAction 1: Finish[Bath, Maine]"]),
    )
    .await;
    let mut outs = Vec::new();
    for (api, server) in [("tools", &tools), ("chat", &chat)] {
        let out = dir.path().join(format!("{api}.jsonl"));
        let output = react(&["eval"], &server.uri())
            .arg(&questions)
            .args(["--docstore", "distractor", "--api", api, "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{api}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let runs: Vec<Value> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(runs.len(), 3, "{api}");
        assert!(runs.iter().all(|run| run["api"] == api), "{api}");
        outs.push(out);
    }
    // Resuming the tools file with another API is refused, naming both (and runs nothing).
    let before = std::fs::read(&outs[0]).unwrap();
    let resumed = react(&["eval"], &chat.uri())
        .arg(&questions)
        .args(["--docstore", "distractor", "--api", "chat", "--out"])
        .arg(&outs[0])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not one evaluation: they differ in API — ")
            && stderr.contains("line 1 has `tools`, this command has `chat` (--api sets it)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&outs[0]).unwrap(),
        before,
        "the file is left as it was"
    );
    let compared = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .arg("compare")
        .args(&outs)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        compared.status.success(),
        "{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    let comparison: Value = serde_json::from_slice(&compared.stdout).unwrap();
    // The report says which format each file was asked in.
    let page = dir.path().join("formats.html");
    let reported: Vec<&std::path::Path> = outs.iter().map(|out| out.as_path()).collect();
    crate::report::write_report(&reported, &page, &[]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<tr><th>API</th><td>tools</td><td>chat</td></tr>"),
        "no API row"
    );
    assert_eq!(comparison["n"], 3);
    assert_eq!(comparison["both_right"], 1);
    assert_eq!(comparison["both_wrong"], 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_with_tools_rewrites_follow_ups_with_a_plain_call_and_answers_with_functions() {
    let replies = vec![
        reply(
            Some("I need to search Grand Ole Opry."),
            &[("search", json!({"entity": "Grand Ole Opry"}))],
        ),
        reply(None, &[("finish", json!({"answer": "George D. Hay"}))]),
        // The follow-up's rewrite: plain text, asked without functions.
        reply(Some("When did George D. Hay found the Grand Ole Opry?"), &[]),
        reply(None, &[("finish", json!({"answer": "November 28, 1925"}))]),
    ];
    let server = model_server("chat/completions", bodies(replies)).await;
    let corpus = crate::test_corpus();
    let mut child = react(&["chat", "--api", "tools", "--docstore", &corpus], &server.uri())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"Who founded the Grand Ole Opry?\nWhen did he found it?\n")
            .unwrap();
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "George D. Hay\nNovember 28, 1925\n"
    );
    let requests = crate::request_bodies(&server).await;
    let offered: Vec<bool> = requests
        .iter()
        .map(|request| request.get("tools").is_some())
        .collect();
    assert_eq!(offered, [true, true, false, true]);
    assert_eq!(
        requests[3]["messages"][1]["content"],
        "Question: When did George D. Hay found the Grand Ole Opry?"
    );
}

#[tokio::test]
async fn a_hostile_reply_is_kept_within_bounds() {
    use react_docstore::llm::openai::{
        MAX_ARGUMENT_BYTES, MAX_CALLS_PER_REPLY, MAX_COMPLETION_BYTES, MAX_NAME_BYTES,
    };
    let mut calls: Vec<Value> = (0..40)
        .map(|idx| {
            json!({"id": format!("c{idx}"), "type": "function",
                          "function": {"name": "search", "arguments": "{\"entity\": \"x\"}"}})
        })
        .collect();
    calls[0]["id"] = json!("i".repeat(100_000));
    calls[1]["function"]["name"] = json!("n".repeat(100_000));
    calls[2]["function"]["arguments"] = json!(format!("{{\"entity\": \"{}\"}}", "a".repeat(50_000)));
    calls[3]["function"]["arguments"] = json!({"entity": "b".repeat(50_000)});
    let mut body = fixture_json("documented/openai.json");
    body["choices"][0]["message"]["tool_calls"] = json!(calls);
    body["choices"][0]["message"]["content"] = json!("t".repeat(200_000));
    let (result, _) = converse_once(ResponseTemplate::new(200).set_body_json(body)).await;
    let message = result.unwrap().message;
    assert_eq!(message.tool_calls.len(), MAX_CALLS_PER_REPLY);
    assert_eq!(message.content.unwrap().len(), MAX_COMPLETION_BYTES);
    assert_eq!(message.tool_calls[0].id, None);
    assert_eq!(message.tool_calls[1].name.len(), MAX_NAME_BYTES);
    for idx in [2, 3] {
        let arguments = message.tool_calls[idx].arguments.as_str().unwrap();
        assert_eq!(arguments.len(), MAX_ARGUMENT_BYTES);
    }
    // Cut arguments no longer parse: the call is refused, not run with half an entity.
    let read = functions().read_reply(
        &react_docstore::llm::ReplyMessage {
            content: None,
            reasoning: Default::default(),
            tool_calls: message.tool_calls,
            passback: Default::default(),
        },
        1,
        &mut HashSet::new(),
    );
    assert!(read.calls[2].action.is_err());
    assert!(read.calls[3].action.is_err());
    assert_eq!(read.calls[0].id, "call_1_1");
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_that_are_on_are_functions_too() {
    let replies = vec![
        reply(
            Some("I need 1889 / 5 rounded down."),
            &[("calculate", json!({"expression": "floor(1889 / 5)"}))],
        ),
        reply(None, &[("shout", json!({"input": "done"}))]),
        reply(None, &[("finish", json!({"answer": "377"}))]),
    ];
    let server = model_server("chat/completions", bodies(replies)).await;
    let shout = format!("Shout=sh {}", fixture("tools/shout.sh").display());
    let run = ask_json(
        "How many five-year periods are there in 1889?",
        &["--tools", "calculate", "--tool", &shout],
        &server,
    );
    assert_eq!(run["answer"], "377");
    assert_eq!(run["tools"], json!(["Calculate", "Shout"]));
    assert_eq!(run["steps"][0]["action"], "Calculate[floor(1889 / 5)]");
    assert_eq!(run["steps"][0]["observation"], "377");
    assert_eq!(run["steps"][1]["action"], "Shout[done]");
    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let offered: Vec<(&str, &str)> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            let function = &tool["function"];
            let parameters = function["parameters"]["required"][0].as_str().unwrap();
            (function["name"].as_str().unwrap(), parameters)
        })
        .collect();
    assert_eq!(
        offered,
        [
            ("search", "entity"),
            ("lookup", "keyword"),
            ("finish", "answer"),
            ("calculate", "expression"),
            ("shout", "input")
        ]
    );
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("(4) calculate(expression): Evaluates an arithmetic expression"),
        "{system}"
    );
    assert!(
        system.contains("Call: calculate({\"expression\":\"floor(1889 / 5)\"})"),
        "{system}"
    );
}
