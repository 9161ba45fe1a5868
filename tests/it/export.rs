//! `export` and `--fewshot-from`: every format's shape field by field (the OpenAI chat lines
//! against the fine-tuning rules), the trajectories byte for byte against the scratchpad a replay
//! rebuilds, a `tools` run as a tool-calling conversation, the filters, an export that keeps
//! nothing, and the few-shot prompt a scripted server sees when examples are drawn from runs.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use react_docstore::agent::trace::TracePrinter;
use react_docstore::apps::replay::replay_run;
use react_docstore::record::files::read_runs;
use react_docstore::record::recorded::RecordedRun;
use react_docstore::record::run::Run;

use crate::fixture;

const METHODS: [&str; 7] = [
    "react",
    "act",
    "cot",
    "standard",
    "cot-sc",
    "react-then-cot-sc",
    "cot-sc-then-react",
];

/// `react-docstore export` with `args` in `dir`: (status, the file written, stderr).
fn export(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = dir.join("out.data");
    let _ = std::fs::remove_file(&out);
    let output = crate::binary()
        .arg("export")
        .args(args)
        .arg("--out")
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        std::fs::read_to_string(&out).unwrap_or_default(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// `source` exported as `--format openai-chat --with-examples --all`, which must succeed: its
/// lines, and what it said on stderr.
#[track_caller]
fn chat_with_examples(dir: &Path, source: &str) -> (Vec<Value>, String) {
    let (status, written, stderr) = export(
        dir,
        &[source, "--format", "openai-chat", "--with-examples", "--all"],
    );
    assert_eq!(status, 0, "{stderr}");
    (lines(&written), stderr)
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn keys(value: &Value) -> BTreeSet<&str> {
    value.as_object().unwrap().keys().map(String::as_str).collect()
}

/// What OpenAI's fine-tuning refuses in a chat line (its documented format): other top-level
/// keys than `messages` (and `tools`), a role it does not know, a content that is not a string,
/// keys a role does not take, a system message after the first, no assistant message, a call to a
/// function not among `tools`, two calls under one id, a tool message answering no call of the
/// assistant message before it (or one answered already), a call unanswered when the next
/// assistant message comes (the last message's calls are the example's end), a call whose
/// arguments are not a JSON object in a string, a function without its name, description and
/// schema.
fn fine_tuning_errors(line: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let allowed: BTreeSet<&str> = ["messages", "tools"].into();
    if !keys(line).is_subset(&allowed) {
        errors.push(format!("top-level keys {:?}", keys(line)));
    }
    let messages = line["messages"].as_array().cloned().unwrap_or_default();
    let offered: BTreeSet<&str> = line["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    let mut call_ids = BTreeSet::new();
    // The calls of the last assistant message not yet answered by a tool message.
    let mut unanswered: BTreeSet<String> = BTreeSet::new();
    let mut n_assistant = 0;
    for (idx, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if !message["content"].is_string() {
            errors.push(format!("message {idx}: content is not a string"));
        }
        let allowed: BTreeSet<&str> = match role {
            "system" | "user" => ["role", "content"].into(),
            "assistant" => ["role", "content", "tool_calls"].into(),
            "tool" => ["role", "content", "tool_call_id"].into(),
            other => {
                errors.push(format!("message {idx}: role {other:?}"));
                continue;
            }
        };
        if !keys(message).is_subset(&allowed) {
            errors.push(format!("message {idx}: keys {:?}", keys(message)));
        }
        if role == "system" && idx != 0 {
            errors.push(format!("message {idx}: a system message after the first"));
        }
        if role == "assistant" {
            n_assistant += 1;
            if !unanswered.is_empty() {
                errors.push(format!(
                    "message {idx}: calls {unanswered:?} not answered before it"
                ));
            }
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let id = call["id"].as_str().unwrap_or("");
                if id.is_empty() || call["type"] != "function" || !call["function"]["name"].is_string() {
                    errors.push(format!("message {idx}: call {call}"));
                }
                if !offered.contains(call["function"]["name"].as_str().unwrap_or("")) {
                    errors.push(format!(
                        "message {idx}: a call to a function not among `tools`: {call}"
                    ));
                }
                if call_ids.contains(id) {
                    errors.push(format!("message {idx}: the call id {id:?} again"));
                }
                unanswered.insert(id.to_owned());
                let arguments: Option<Value> = call["function"]["arguments"]
                    .as_str()
                    .and_then(|text| serde_json::from_str(text).ok());
                if !arguments.is_some_and(|arguments| arguments.is_object()) {
                    errors.push(format!("message {idx}: arguments of {call}"));
                }
                call_ids.insert(id.to_owned());
            }
        }
        if role == "tool" && !unanswered.remove(message["tool_call_id"].as_str().unwrap_or("")) {
            errors.push(format!(
                "message {idx}: answers no call of the assistant message before it, or one answered already"
            ));
        }
    }
    if n_assistant == 0 {
        errors.push("no assistant message".to_owned());
    }
    if messages.last().is_some_and(|last| last["role"] != "assistant") {
        errors.push("the last message is not the assistant's".to_owned());
    }
    for tool in line["tools"].as_array().into_iter().flatten() {
        let function = &tool["function"];
        if tool["type"] != "function"
            || !function["name"].is_string()
            || !function["description"].is_string()
            || !function["parameters"].is_object()
        {
            errors.push(format!("tool {tool}"));
        }
    }
    errors
}

/// The recorded runs every export format is checked on: each method's results file, and the
/// runs of `fixtures/runs/function-calls/` and `fixtures/runs/tools/`.
fn every_method_and_tools_runs() -> Vec<String> {
    let mut sources: Vec<String> = METHODS
        .iter()
        .map(|method| format!("fixtures/runs/methods/{method}.results.jsonl"))
        .collect();
    sources.extend([
        "fixtures/runs/function-calls".into(),
        "fixtures/runs/tools".into(),
    ]);
    sources
}

#[test]
fn openai_chat_lines_of_every_method_and_of_tools_runs_follow_the_fine_tuning_rules() {
    let dir = tempfile::tempdir().unwrap();
    let sources = every_method_and_tools_runs();
    for source in &sources {
        let (status, written, stderr) = export(dir.path(), &[source, "--format", "openai-chat", "--all"]);
        assert_eq!(status, 0, "{source}: {stderr}");
        let lines = lines(&written);
        assert!(!lines.is_empty(), "{source}");
        for line in &lines {
            let errors = fine_tuning_errors(line);
            assert!(errors.is_empty(), "{source}: {errors:?}\n{line}");
        }
    }
}

#[test]
fn the_fine_tuning_check_refuses_what_openai_refuses() {
    let good = json!({"messages": [
        {"role": "system", "content": "s"}, {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"entity\":\"x\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "o"}, {"role": "assistant", "content": "a"}],
        "tools": [{"type": "function", "function": {"name": "search", "description": "d", "parameters": {"type": "object"}}}]});
    assert_eq!(fine_tuning_errors(&good), Vec::<String>::new());
    let bad = [
        json!({"messages": [{"role": "user", "content": "q"}]}),
        json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": null}]}),
        json!({"messages": [{"role": "assistant", "content": "a"}], "id": 1}),
        json!({"messages": [{"role": "user", "content": "q"}, {"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]}),
        json!({"messages": [{"role": "tool", "tool_call_id": "c9", "content": "o"}, {"role": "assistant", "content": "a"}]}),
        json!({"messages": [{"role": "assistant", "content": "", "name": "x"}]}),
        // A call to a function not offered (`serach`), answered.
        json!({"messages": [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "serach", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "o"}, {"role": "assistant", "content": "a"}],
            "tools": [{"type": "function", "function": {"name": "search", "description": "d", "parameters": {"type": "object"}}}]}),
        // A call answered twice, and one never answered.
        json!({"messages": [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "o"}, {"role": "tool", "tool_call_id": "c1", "content": "o"},
            {"role": "assistant", "content": "a"}],
            "tools": [{"type": "function", "function": {"name": "search", "description": "d", "parameters": {"type": "object"}}}]}),
        json!({"messages": [{"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
            {"role": "assistant", "content": "a"}],
            "tools": [{"type": "function", "function": {"name": "search", "description": "d", "parameters": {"type": "object"}}}]}),
    ];
    for line in bad {
        assert!(!fine_tuning_errors(&line).is_empty(), "{line}");
    }
}

/// Each run of `source` replayed (the path `replay` takes), its whole scratchpad.
async fn replayed_scratchpads(source: &Path) -> Vec<(Run, String)> {
    let mut scratchpads = Vec::new();
    for RecordedRun { run, .. } in read_runs(source).unwrap() {
        let episode = replay_run(&run, None, None, &|_, _| None, &mut TracePrinter::silent()).await;
        scratchpads.push((run, episode.scratchpad.text().to_owned()));
    }
    scratchpads
}

#[tokio::test]
async fn text_trajectories_are_the_replayed_scratchpad_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    for source in [
        "fixtures/runs/methods/react.results.jsonl",
        "fixtures/compare/trial-1.results.jsonl",
    ] {
        let (exported, stderr) = chat_with_examples(dir.path(), source);
        let scratchpads = replayed_scratchpads(&fixture(source.trim_start_matches("fixtures/"))).await;
        assert_eq!(exported.len(), scratchpads.len(), "{stderr}");
        for (line, (run, scratchpad)) in exported.iter().zip(&scratchpads) {
            // Each message is its piece of the scratchpad without the newline that ends it.
            let joined: String = line["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|message| format!("{}\n", message["content"].as_str().unwrap()))
                .collect();
            // A run cut short ends with the model's last step: the observation after it is left out.
            match run.stopped {
                Some(react_docstore::record::run::Stopped::Finish) => {
                    assert_eq!(joined, *scratchpad, "{}", run.question)
                }
                _ => assert!(scratchpad.starts_with(&joined), "{}", run.question),
            }
        }
    }
}

#[test]
fn alpaca_and_sharegpt_hold_the_same_turns_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let source = "fixtures/runs/methods/react.results.jsonl";
    let (_, chat, _) = export(dir.path(), &[source, "--format", "openai-chat"]);
    let (status, alpaca, stderr) = export(dir.path(), &[source, "--format", "alpaca"]);
    assert_eq!(status, 0, "{stderr}");
    let (status, sharegpt, stderr) = export(dir.path(), &[source, "--format", "sharegpt"]);
    assert_eq!(status, 0, "{stderr}");
    let alpaca: Value = serde_json::from_str(&alpaca).unwrap();
    let alpaca = alpaca.as_array().unwrap();
    let chat = lines(&chat);
    let sharegpt = lines(&sharegpt);
    assert_eq!((alpaca.len(), sharegpt.len()), (chat.len(), chat.len()));
    assert_eq!(chat.len(), 2);
    for ((chat, alpaca), sharegpt) in chat.iter().zip(alpaca).zip(&sharegpt) {
        let messages = chat["messages"].as_array().unwrap();
        let contents: Vec<&str> = messages.iter().map(|m| m["content"].as_str().unwrap()).collect();
        // Alpaca: the instruction and the question; nothing as input; the trajectory.
        assert_eq!(keys(alpaca), ["input", "instruction", "output"].into());
        assert_eq!(alpaca["input"], "");
        assert_eq!(alpaca["instruction"], format!("{}\n{}", contents[0], contents[1]));
        assert_eq!(alpaca["output"], contents[2..].join("\n"));
        assert!(contents[1].starts_with("Question: ") && contents[2].starts_with("Thought 1: "));
        // ShareGPT: the same turns, `system`, then `human` and `gpt` by turns.
        assert_eq!(keys(sharegpt), ["conversations"].into());
        let turns = sharegpt["conversations"].as_array().unwrap();
        let roles: Vec<&str> = turns.iter().map(|turn| turn["from"].as_str().unwrap()).collect();
        let expected: Vec<&str> = messages
            .iter()
            .map(|m| match m["role"].as_str().unwrap() {
                "system" => "system",
                "user" => "human",
                _ => "gpt",
            })
            .collect();
        assert_eq!(roles, expected);
        for (turn, content) in turns.iter().zip(&contents) {
            assert_eq!(keys(turn), ["from", "value"].into());
            assert_eq!(turn["value"], *content);
        }
    }
}

#[test]
fn a_tools_run_exports_as_the_conversation_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (exported, stderr) =
        chat_with_examples(dir.path(), "fixtures/runs/function-calls/grand-ole-opry.json");
    let line = &exported[0];
    let names: Vec<&str> = line["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "lookup", "finish"]);
    let messages = line["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    // The search; a reply that calls nothing and the reminder; two calls in one reply, the one
    // to `serach` (no function of `tools`) left out with its reply; the answer.
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert!(
        stderr.contains("left out       1 call to a function not among `tools` (`serach`), with its reply"),
        "{stderr}"
    );
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("Here are some examples.")
    );
    let run = Run::read(&fixture("runs/function-calls/grand-ole-opry.json")).unwrap();
    // Every reply as the server sent it: its text, its calls' names and arguments (but the call
    // to a function not offered).
    let replies: Vec<_> = run.steps.iter().flat_map(|step| step.replies.clone()).collect();
    let assistants: Vec<&Value> = messages.iter().filter(|m| m["role"] == "assistant").collect();
    assert_eq!(assistants.len(), replies.len());
    for (message, reply) in assistants.iter().zip(&replies) {
        assert_eq!(message["content"], reply.content.clone().unwrap_or_default());
        let calls = message["tool_calls"].as_array().cloned().unwrap_or_default();
        let offered: Vec<_> = reply
            .tool_calls
            .iter()
            .filter(|call| names.contains(&call.name.as_str()))
            .collect();
        assert_eq!(calls.len(), offered.len());
        for (call, sent) in calls.iter().zip(offered) {
            assert_eq!(call["function"]["name"], sent.name);
            let arguments: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
            let sent_arguments: Value = match &sent.arguments {
                Value::String(text) => serde_json::from_str(text).unwrap(),
                other => other.clone(),
            };
            assert_eq!(arguments, sent_arguments);
        }
    }
    // The tool messages answer the calls before them, with the recorded observations.
    assert_eq!(messages[3]["tool_call_id"], messages[2]["tool_calls"][0]["id"]);
    assert_eq!(messages[3]["content"], run.steps[0].observation.clone().unwrap());
    assert_eq!(messages[7]["tool_call_id"], messages[6]["tool_calls"][0]["id"]);
    assert_eq!(messages[7]["content"], run.steps[1].observation.clone().unwrap());
    assert!(
        fine_tuning_errors(line).is_empty(),
        "{:?}",
        fine_tuning_errors(line)
    );
    // Without `--with-examples` the system message is the instruction alone.
    let (_, written, _) = export(
        dir.path(),
        &[
            "fixtures/runs/function-calls/grand-ole-opry.json",
            "--format",
            "openai-chat",
            "--all",
        ],
    );
    let system = lines(&written)[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(messages[0]["content"].as_str().unwrap().starts_with(&system));
    assert!(
        system.starts_with("Solve a question answering task by calling functions.")
            && !system.contains("Here are some examples")
    );
}

/// The stderr summary's `dropped` line.
fn dropped(stderr: &str) -> &str {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("dropped"))
        .map_or("", str::trim)
}

#[test]
fn the_default_keeps_right_finished_runs_and_the_filters_say_what_they_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let trial_1 = "fixtures/compare/trial-1.results.jsonl";
    // Trial 1: 34 right, 10 that did not finish, the rest wrong.
    let (status, written, stderr) = export(dir.path(), &[trial_1, "--format", "openai-chat"]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(lines(&written).len(), 34);
    assert!(
        stderr.contains("runs read      100, kept 34 (34 examples)"),
        "{stderr}"
    );
    assert_eq!(dropped(&stderr), "10 unfinished, 56 not right");
    assert!(stderr.contains("per example (estimated: bytes / 4)"), "{stderr}");
    // `--min-f1` keeps the partly right ones too; `--all` every run.
    let (_, written, stderr) = export(
        dir.path(),
        &[trial_1, "--format", "openai-chat", "--min-f1", "0.5"],
    );
    let partly = lines(&written).len();
    assert!(partly > 34, "{stderr}");
    let (_, written, _) = export(dir.path(), &[trial_1, "--format", "openai-chat", "--all"]);
    assert_eq!(lines(&written).len(), 100);
    // `--method`: these are `react` runs.
    let (status, _, stderr) = export(dir.path(), &[trial_1, "--format", "alpaca", "--method", "cot"]);
    assert_eq!(status, 2);
    assert!(stderr.contains("100 of another method"), "{stderr}");
    // `--exclude`: the questions of the evaluation split, by id (and by text).
    let (_, written, stderr) = export(
        dir.path(),
        &[
            trial_1,
            "--format",
            "sharegpt",
            "--exclude",
            "fixtures/docstore/hotpotqa-distractor-3.json",
        ],
    );
    assert_eq!(lines(&written).len(), 33, "{stderr}");
    assert!(!written.contains("Jonny Craig and Pete Doherty"));
    assert_eq!(dropped(&stderr), "3 excluded, 10 unfinished, 54 not right");
    // By text, the question normalised as answers are (case, punctuation, articles), whatever its id.
    let questions = dir.path().join("dev.jsonl");
    std::fs::write(
        &questions,
        "{\"_id\": \"other\", \"question\": \"which of JONNY CRAIG and Pete Doherty has been a member of the more bands\", \"answer\": \"x\"}\n",
    )
    .unwrap();
    let (_, written, stderr) = export(
        dir.path(),
        &[
            trial_1,
            "--format",
            "sharegpt",
            "--exclude",
            questions.to_str().unwrap(),
        ],
    );
    assert_eq!(lines(&written).len(), 33, "{stderr}");
    assert!(stderr.contains("1 excluded"), "{stderr}");
}

#[test]
fn trials_and_attempts_one_example_per_question_unless_every_attempt() {
    let dir = tempfile::tempdir().unwrap();
    // Trial 1 and a trial 2 of the same runs: the second right attempt of a question is left
    // out, unless `--every-attempt`; `--trial 2` keeps only the second.
    let text = std::fs::read_to_string(fixture("runs/methods/react.results.jsonl")).unwrap();
    let mut trials = String::new();
    for trial in [1, 2] {
        for line in text.lines() {
            let mut run: Value = serde_json::from_str(line).unwrap();
            run["trial"] = json!(trial);
            trials.push_str(&format!("{run}\n"));
        }
    }
    let path = dir.path().join("trials.results.jsonl");
    std::fs::write(&path, trials).unwrap();
    let path = path.to_str().unwrap();
    let (_, written, stderr) = export(dir.path(), &[path, "--format", "openai-chat"]);
    assert_eq!(lines(&written).len(), 2);
    assert_eq!(dropped(&stderr), "2 unfinished, 2 question already given");
    let (_, written, _) = export(dir.path(), &[path, "--format", "openai-chat", "--every-attempt"]);
    // The same text twice is written once.
    assert_eq!(lines(&written).len(), 2);
    let (_, written, stderr) = export(dir.path(), &[path, "--format", "openai-chat", "--trial", "2"]);
    assert_eq!(lines(&written).len(), 2);
    assert!(stderr.contains("3 of another trial"), "{stderr}");
    // CoT-SC: the right samples are the examples, one per question unless every attempt.
    let cot_sc = "fixtures/runs/methods/cot-sc.results.jsonl";
    let (_, one, _) = export(dir.path(), &[cot_sc, "--format", "openai-chat"]);
    let (_, every, _) = export(
        dir.path(),
        &[cot_sc, "--format", "openai-chat", "--every-attempt"],
    );
    assert_eq!(lines(&one).len(), 3);
    let every = lines(&every);
    assert!(every.len() > 3);
    let texts: BTreeSet<String> = every.iter().map(|line| line.to_string()).collect();
    assert_eq!(texts.len(), every.len(), "an identical sample is written once");
    for line in &every {
        let answer = line["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(answer.starts_with("Thought: Let's think step by step.") && answer.contains("\nAnswer: "));
    }
}

#[test]
fn an_export_that_keeps_nothing_is_an_error_naming_why_and_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let (status, written, stderr) = export(
        dir.path(),
        &[
            "fixtures/runs/methods/standard.results.jsonl",
            "--format",
            "openai-chat",
        ],
    );
    assert_eq!(status, 2);
    assert_eq!(written, "");
    assert!(!dir.path().join("out.data").exists());
    assert!(
        stderr.contains("no example to write: 3 runs read, every one dropped (3 not right); `--all` keeps"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------- --fewshot-from

/// A `/completions` server that answers every question at once, every request kept.
async fn answering_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"choices": [{"text": " I know it.\nAction 1: Finish[Gesellschaft mit beschränkter Haftung]"}]}),
        ))
        .mount(&server)
        .await;
    server
}

async fn prompts(server: &MockServer) -> Vec<String> {
    crate::request_bodies(server)
        .await
        .iter()
        .map(|body| body["prompt"].as_str().unwrap().to_owned())
        .collect()
}

/// `eval` of the three questions of `fixtures/docstore/hotpotqa-distractor-3.json`, each over its
/// own context paragraphs (`--docstore distractor`).
const EVAL_DISTRACTOR_3: [&str; 4] = [
    "eval",
    "fixtures/docstore/hotpotqa-distractor-3.json",
    "--docstore",
    "distractor",
];

/// The binary in the repository root, `args` first, asking `server` through `/completions` with
/// examples drawn from Reflexion's trial 1 (`--shots shots`).
fn drawing_from_trial_1(server: &MockServer, args: &[&str], shots: &str) -> std::process::Command {
    drawing_from(
        server,
        args,
        Path::new("fixtures/compare/trial-1.results.jsonl"),
        shots,
    )
}

/// [`drawing_from_trial_1`] with the examples drawn from `source`.
fn drawing_from(server: &MockServer, args: &[&str], source: &Path, shots: &str) -> std::process::Command {
    let mut command = crate::binary();
    command
        .args(args)
        .args(crate::completions_model(&server.uri()))
        .arg("--fewshot-from")
        .arg(source)
        .args(["--shots", shots])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    command
}

fn eval_fewshot_from(server: &MockServer, results: &Path, shots: &str) -> std::process::Output {
    drawing_from_trial_1(server, &EVAL_DISTRACTOR_3, shots)
        .args(["--seed", "7", "--out"])
        .arg(results)
        .output()
        .unwrap()
}

/// Shards of one evaluation draw the same examples, none a question of any shard (Jonny Craig's
/// right run in trial 1 is kept out of every shard's draw, not only the one that asks it), so
/// their results merge as one evaluation.
#[tokio::test(flavor = "multi_thread")]
async fn shards_drawing_fewshot_from_draw_the_same_examples_and_merge() {
    let server = answering_server().await;
    let dir = tempfile::tempdir().unwrap();
    let mut fewshots = Vec::new();
    let mut files = Vec::new();
    for shard in ["0/2", "1/2"] {
        let results = dir.path().join(format!("shard-{}.results.jsonl", &shard[..1]));
        let output = drawing_from_trial_1(&server, &EVAL_DISTRACTOR_3, "33")
            .args(["--seed", "7", "--shard", shard, "--out"])
            .arg(&results)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{shard}: {stderr}");
        for RecordedRun { run, .. } in read_runs(&results).unwrap() {
            // The examples written beside the shard's results, which its runs name.
            let examples = std::fs::read_to_string(run.fewshot.unwrap()).unwrap();
            assert!(!examples.contains("Jonny Craig"), "{shard}");
            fewshots.push(examples);
        }
        files.push(results);
    }
    assert_eq!(fewshots.len(), 3);
    assert!(fewshots.iter().all(|fewshot| fewshot == &fewshots[0]));
    let merged = crate::binary()
        .arg("merge")
        .args(&files)
        .arg("--out")
        .arg(dir.path().join("merged.jsonl"))
        .output()
        .unwrap();
    crate::assert_exit_0(&merged);
}

/// `--fewshot-from` reads a directory of results files as one evaluation, as `export` and
/// `score` do: two files answering one question two ways are refused before any call.
#[tokio::test(flavor = "multi_thread")]
async fn fewshot_from_refuses_results_that_are_not_one_evaluation() {
    let server = answering_server().await;
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("compare/trial-1.results.jsonl")).unwrap();
    let first = text.lines().next().unwrap();
    let mut other: Value = serde_json::from_str(first).unwrap();
    other["answer"] = json!("another answer");
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    std::fs::write(shards.join("a.jsonl"), format!("{first}\n")).unwrap();
    std::fs::write(shards.join("b.jsonl"), format!("{other}\n")).unwrap();
    let output = drawing_from(&server, &EVAL_DISTRACTOR_3, &shards, "1")
        .arg("--out")
        .arg(dir.path().join("dev.results.jsonl"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a.jsonl") && stderr.contains("b.jsonl"),
        "{stderr}"
    );
    assert!(prompts(&server).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn fewshot_from_draws_k_right_runs_never_a_question_asked_the_same_for_every_question() {
    let server = answering_server().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("dev.results.jsonl");
    // Trial 1 holds 34 right runs, one of them on a question of this evaluation (Jonny Craig):
    // 33 can be drawn, not 34.
    let output = eval_fewshot_from(&server, &results, "34");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("holds 33 right runs in the ReAct"), "{stderr}");
    assert!(prompts(&server).await.is_empty());

    let output = eval_fewshot_from(&server, &results, "33");
    crate::assert_exit_0(&output);
    let prompts = prompts(&server).await;
    assert_eq!(prompts.len(), 3);
    let questions: Vec<String> = read_runs(&results)
        .unwrap()
        .into_iter()
        .map(|recorded| recorded.run.question)
        .collect();
    let prefixes: Vec<&str> = prompts
        .iter()
        .map(|prompt| {
            let asked = questions
                .iter()
                .find(|question| prompt.ends_with(&format!("Question: {question}\nThought 1:")))
                .unwrap();
            &prompt[..prompt.len() - format!("Question: {asked}\nThought 1:").len()]
        })
        .collect();
    // One prefix, byte for byte, for every question: the instruction and the 33 examples.
    assert!(prefixes.iter().all(|prefix| prefix == &prefixes[0]));
    let prefix = prefixes[0];
    assert_eq!(prefix.matches("\nQuestion: ").count(), 33);
    for question in &questions {
        assert!(!prefix.contains(question.as_str()), "{question}");
    }
    // The examples are written beside the results, and each run names them with their digest.
    let examples = dir.path().join("dev.results.fewshot.txt");
    let text = std::fs::read_to_string(&examples).unwrap();
    assert!(prefix.ends_with(&text));
    for RecordedRun { run, .. } in read_runs(&results).unwrap() {
        assert_eq!(run.fewshot.as_deref(), Some(examples.to_str().unwrap()));
        let source = run.fewshot_from.unwrap();
        assert_eq!((source.shots, source.seed), (33, 7));
        assert_eq!(
            source.digest,
            react_docstore::base::digest::digest(text.as_bytes())
        );
    }
    // The same seed draws the same examples again: resuming is allowed, and changes nothing.
    let output = eval_fewshot_from(&server, &results, "33");
    crate::assert_exit_0(&output);
    assert_eq!(std::fs::read_to_string(&examples).unwrap(), text);
    // Other examples are refused: the results file's runs were made with these.
    let output = eval_fewshot_from(&server, &results, "32");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("an evaluation never mixes prompts"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&examples).unwrap(), text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_made_with_fewshot_from_replays_and_exports_its_exact_prompt() {
    let server = answering_server().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("dev.results.jsonl");
    let output = eval_fewshot_from(&server, &results, "3");
    crate::assert_exit_0(&output);
    let prompts = prompts(&server).await;
    // Replay: the recorded answers, with no model.
    let replay = crate::binary().arg("replay").arg(&results).output().unwrap();
    crate::assert_exit_0(&replay);
    assert_eq!(String::from_utf8_lossy(&replay.stdout).lines().count(), 3);
    // Export with the examples: the prompt the server saw, then what the model wrote.
    let (status, written, stderr) = export(
        dir.path(),
        &[
            results.to_str().unwrap(),
            "--format",
            "openai-chat",
            "--with-examples",
        ],
    );
    assert_eq!(status, 0, "{stderr}");
    let line = &lines(&written)[0];
    let messages = line["messages"].as_array().unwrap();
    let seen = format!(
        "{}\n{}\n",
        messages[0]["content"].as_str().unwrap(),
        messages[1]["content"].as_str().unwrap()
    );
    assert!(
        prompts
            .iter()
            .any(|prompt| *prompt == format!("{seen}Thought 1:")),
        "{seen}"
    );
    // A changed examples file is noticed: the run no longer rebuilds as it ran.
    let examples = dir.path().join("dev.results.fewshot.txt");
    let mut text = std::fs::read_to_string(&examples).unwrap();
    text.push_str("Question: one more?\nThought 1: no.\nAction 1: Finish[no]\n");
    std::fs::write(&examples, text).unwrap();
    let (status, _, stderr) = export(
        dir.path(),
        &[results.to_str().unwrap(), "--format", "openai-chat"],
    );
    assert_eq!(status, 2);
    assert!(stderr.contains("changed since the run"), "{stderr}");
    // Replay still replays the recorded answers, and says its prompt is not the run's.
    let replay = crate::binary().arg("replay").arg(&results).output().unwrap();
    assert_eq!(replay.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&replay.stderr);
    assert_eq!(stderr.matches("changed since the run").count(), 3, "{stderr}");
}

#[test]
fn ask_fewshot_from_needs_a_run_file_to_write_beside() {
    let output = crate::binary()
        .args([
            "ask",
            "What is 2+2?",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .args([
            "--fewshot-from",
            "fixtures/compare/trial-1.results.jsonl",
            "--shots",
            "2",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("give `--record FILE`"), "{stderr}");
}

/// The examples `--fewshot-from` would draw from `source` for `method`, no question excluded.
async fn drawn(
    source: &str,
    method: react_docstore::base::method::Method,
    shots: usize,
) -> (String, react_docstore::agent::fewshot::Fewshot) {
    use react_docstore::base::task::Task;
    use react_docstore::trajectories::fewshot_from::FewshotFrom;
    let dir = tempfile::tempdir().unwrap();
    let from = FewshotFrom {
        results: fixture(source),
        runs: read_runs(&fixture(source))
            .unwrap()
            .into_iter()
            .map(|recorded| recorded.run)
            .collect(),
        shots,
        seed: 0,
    };
    let beside = dir.path().join("r.results.jsonl");
    let drawn = from
        .draw(
            method,
            Task::HotpotQa,
            react_docstore::base::profile::Profile::Default,
            &Default::default(),
            &beside,
            react_docstore::trajectories::fewshot_from::OtherExamples::Replace,
        )
        .await
        .unwrap();
    (
        std::fs::read_to_string(dir.path().join("r.results.fewshot.txt")).unwrap(),
        drawn.fewshot,
    )
}

#[tokio::test]
async fn drawn_examples_take_the_methods_few_shot_format() {
    use react_docstore::agent::fewshot::Format;
    use react_docstore::base::method::Method;
    // Act: ReAct's right runs without their thoughts.
    let (text, fewshot) = drawn("compare/trial-1.results.jsonl", Method::Act, 4).await;
    assert_eq!(fewshot.format, Format::Act);
    assert_eq!(text.matches("Question: ").count(), 4);
    assert!(!text.contains("Thought") && text.contains("\nAction 1: Search["));
    // CoT: a right sample of each CoT-SC run, after `Thought:`.
    let (text, fewshot) = drawn("runs/methods/cot-sc.results.jsonl", Method::Cot, 3).await;
    assert_eq!(fewshot.format, Format::Cot);
    assert!(text.starts_with("Question: ") && text.ends_with('\n'));
    assert_eq!(text.matches("Question: ").count(), 3);
    assert_eq!(text.matches("\nThought: Let's think step by step.").count(), 3);
    assert_eq!(text.matches("\nAnswer: ").count(), 3);
}

#[test]
fn a_run_ended_by_an_error_gives_its_finished_steps_with_all_and_nothing_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("runs/methods/react.results.jsonl")).unwrap();
    let mut run: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    run["steps"] = json!([run["steps"][0].clone(), {"n": 2, "completions": []}]);
    run["answer"] = Value::Null;
    run["stopped"] = json!("error");
    run["error"] = json!("model server: HTTP 500");
    let path = dir.path().join("error.results.jsonl");
    std::fs::write(&path, format!("{run}\n")).unwrap();
    let path = path.to_str().unwrap();
    let (status, _, stderr) = export(dir.path(), &[path, "--format", "openai-chat"]);
    assert_eq!(status, 2);
    assert!(stderr.contains("(1 unfinished)"), "{stderr}");
    let (status, written, stderr) = export(dir.path(), &[path, "--format", "openai-chat", "--all"]);
    assert_eq!(status, 0, "{stderr}");
    let line = &lines(&written)[0];
    let roles: Vec<&str> = line["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"]);
    assert!(fine_tuning_errors(line).is_empty());
    // Every format ends such a run with the model's last step, never the observation after it.
    let last_step = line["messages"][2]["content"].as_str().unwrap().to_owned();
    let (status, written, stderr) = export(dir.path(), &[path, "--format", "sharegpt", "--all"]);
    assert_eq!(status, 0, "{stderr}");
    let conversation = lines(&written)[0]["conversations"].as_array().unwrap().clone();
    let last = conversation.last().unwrap();
    assert_eq!(
        (last["from"].as_str(), last["value"].as_str()),
        (Some("gpt"), Some(last_step.as_str()))
    );
    let (status, written, stderr) = export(dir.path(), &[path, "--format", "alpaca", "--all"]);
    assert_eq!(status, 0, "{stderr}");
    let alpaca: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(alpaca[0]["output"].as_str(), Some(last_step.as_str()));
}

#[test]
fn a_recorded_fewshot_from_evaluation_replays_and_exports_the_prompt_it_was_made_with() {
    let results = "fixtures/export/fewshot-from.results.jsonl";
    let replay = crate::binary()
        .args(["replay", results])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&replay.stderr);
    assert_eq!(replay.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("few-shot file"), "{stderr}");
    // Its runs, `fewshot_from` included, fit the run file's schema.
    for line in std::fs::read_to_string(fixture("export/fewshot-from.results.jsonl"))
        .unwrap()
        .lines()
    {
        let run: Value = serde_json::from_str(line).unwrap();
        assert!(run["fewshot_from"]["digest"].is_string());
        let errors = crate::docs::validate_run(&run);
        assert!(errors.is_empty(), "{errors:?}");
    }
    assert!(
        stderr.contains("3 runs replayed, 3 answered; EM 0.6667"),
        "{stderr}"
    );
    let dir = tempfile::tempdir().unwrap();
    let (status, written, stderr) = export(
        dir.path(),
        &[results, "--format", "openai-chat", "--with-examples"],
    );
    assert_eq!(status, 0, "{stderr}");
    let examples = std::fs::read_to_string(fixture("export/fewshot-from.results.fewshot.txt")).unwrap();
    let lines = lines(&written);
    assert_eq!(lines.len(), 2);
    for line in &lines {
        // The bundled instruction, then the two drawn examples, as every question saw them.
        let system = format!("{}\n", line["messages"][0]["content"].as_str().unwrap());
        assert!(system.starts_with("Solve a question answering task"));
        assert!(system.ends_with(&examples), "{system}");
        assert_eq!(examples.matches("\nQuestion: ").count(), 2);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_fewshot_from_never_draws_the_question_asked_and_writes_beside_its_run_file() {
    let server = answering_server().await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("jonny.json");
    let question = "Which of Jonny Craig and Pete Doherty has been a member of more bands ?";
    let ask = |shots: &str| {
        drawing_from_trial_1(&server, &["ask", question], shots)
            .arg("--record")
            .arg(&record)
            .output()
            .unwrap()
    };
    // Trial 1's 34 right runs hold this very question: 33 can be drawn.
    let output = ask("34");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("holds 33 right runs"));
    let output = ask("33");
    crate::assert_exit_0(&output);
    let prompt = &prompts(&server).await[0];
    assert_eq!(prompt.matches("Question: Which of Jonny Craig").count(), 1);
    assert!(prompt.ends_with(
        "Question: Which of Jonny Craig and Pete Doherty has been a member of more bands ?\nThought 1:"
    ));
    let run = Run::read(&record).unwrap();
    let examples = dir.path().join("jonny.fewshot.txt");
    assert_eq!(run.fewshot.as_deref(), Some(examples.to_str().unwrap()));
    let text = std::fs::read_to_string(&examples).unwrap();
    assert_eq!(
        run.fewshot_from.unwrap().digest,
        react_docstore::base::digest::digest(text.as_bytes())
    );
    assert!(prompt.contains(&text));
}

#[test]
fn exclude_reads_ids_only_where_the_file_has_them() {
    // Runs of a file without ids are numbered by position, as are the questions of another such
    // file: the same number is not the same question.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("runs/methods/react.results.jsonl")).unwrap();
    let mut run: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    run["id"] = json!("0");
    let results = dir.path().join("positions.results.jsonl");
    std::fs::write(&results, format!("{run}\n")).unwrap();
    let questions = dir.path().join("other.jsonl");
    std::fs::write(
        &questions,
        "{\"question\": \"Who wrote Hamlet?\", \"answer\": \"Shakespeare\"}\n",
    )
    .unwrap();
    let args = [
        results.to_str().unwrap(),
        "--format",
        "openai-chat",
        "--exclude",
        questions.to_str().unwrap(),
    ];
    let (status, written, stderr) = export(dir.path(), &args);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(lines(&written).len(), 1);
    // A question file with ids excludes by id, whatever the text.
    let with_ids = "{\"_id\": \"a1\", \"question\": \"Who wrote Hamlet?\", \"answer\": \"Shakespeare\"}\n\
                    {\"_id\": \"0\", \"question\": \"Who wrote Faust?\", \"answer\": \"Goethe\"}\n";
    std::fs::write(&questions, with_ids).unwrap();
    let (status, _, stderr) = export(dir.path(), &args);
    assert_eq!(status, 2);
    assert!(stderr.contains("(1 excluded)"), "{stderr}");
}

// ---------------------------------------------------------------- runs that train on nothing

/// `run` as `eval` records a run whose first model call failed: the question, no step the model
/// wrote.
fn first_call_failed(mut run: Value) -> Value {
    run["steps"] = json!([{"n": 1, "completions": []}]);
    run["answer"] = Value::Null;
    run["stopped"] = json!("error");
    run["error"] = json!("model server: HTTP 500");
    run
}

/// A results file of ReAct's first run with its first model call failed, and its second run.
fn results_with_a_failed_first_call(dir: &Path) -> String {
    let text = std::fs::read_to_string(fixture("runs/methods/react.results.jsonl")).unwrap();
    let mut lines = text.lines();
    let failed = first_call_failed(serde_json::from_str(lines.next().unwrap()).unwrap());
    let path = dir.join("failed.results.jsonl");
    std::fs::write(&path, format!("{failed}\n{}\n", lines.next().unwrap())).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn an_export_of_every_run_leaves_out_a_run_with_no_model_turn_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let results = results_with_a_failed_first_call(dir.path());
    for format in ["openai-chat", "sharegpt", "alpaca"] {
        let (status, written, stderr) = export(dir.path(), &[&results, "--format", format, "--all"]);
        assert_eq!(status, 0, "{format}: {stderr}");
        assert!(stderr.contains("kept 1 (1 examples)"), "{format}: {stderr}");
        assert_eq!(dropped(&stderr), "1 without a model turn", "{format}");
        let examples = match format {
            "alpaca" => serde_json::from_str::<Value>(&written)
                .unwrap()
                .as_array()
                .unwrap()
                .clone(),
            _ => lines(&written),
        };
        assert_eq!(examples.len(), 1, "{format}");
        let example = &examples[0];
        let model_wrote = match format {
            "openai-chat" => example["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["role"] == "assistant"),
            "sharegpt" => example["conversations"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["from"] == "gpt"),
            _ => !example["output"].as_str().unwrap().is_empty(),
        };
        assert!(model_wrote, "{format}: {example}");
    }
    // A tools run whose first call failed: the system message and the question, nothing else.
    let tools = dir.path().join("failed-tools.json");
    let run: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("runs/function-calls/grand-ole-opry.json")).unwrap(),
    )
    .unwrap();
    std::fs::write(&tools, first_call_failed(run).to_string()).unwrap();
    for format in ["openai-chat", "sharegpt", "alpaca"] {
        let (status, _, stderr) = export(
            dir.path(),
            &[tools.to_str().unwrap(), "--format", format, "--all"],
        );
        assert_eq!(status, 2, "{format}: {stderr}");
        assert!(stderr.contains("(1 without a model turn)"), "{format}: {stderr}");
    }
}

/// What LLaMA-Factory's ShareGPT reader (`SharegptDatasetConverter`) skips as an abnormal
/// example: after an optional `system` turn, the turns must alternate `human` or `observation`
/// and `gpt` or `function_call`, from the human's, and end with the model's (an even count).
fn llama_factory_errors(line: &Value) -> Vec<String> {
    let mut turns = line["conversations"].as_array().cloned().unwrap_or_default();
    if turns.first().is_some_and(|turn| turn["from"] == "system") {
        turns.remove(0);
    }
    let mut errors = Vec::new();
    for (idx, turn) in turns.iter().enumerate() {
        let accepted = if idx % 2 == 0 {
            ["human", "observation"]
        } else {
            ["gpt", "function_call"]
        };
        if !accepted.contains(&turn["from"].as_str().unwrap_or("")) || !turn["value"].is_string() {
            errors.push(format!("turn {idx}: {turn}"));
        }
    }
    if turns.is_empty() || turns.len() % 2 != 0 {
        errors.push(format!(
            "{} turns after the system's: not an even count",
            turns.len()
        ));
    }
    errors
}

#[test]
fn sharegpt_lines_of_every_method_of_tools_runs_and_of_failed_runs_are_read_by_llama_factory() {
    let dir = tempfile::tempdir().unwrap();
    let mut sources = every_method_and_tools_runs();
    sources.push(results_with_a_failed_first_call(dir.path()));
    for source in &sources {
        let (status, written, stderr) = export(dir.path(), &[source, "--format", "sharegpt", "--all"]);
        assert_eq!(status, 0, "{source}: {stderr}");
        for line in lines(&written) {
            let errors = llama_factory_errors(&line);
            assert!(errors.is_empty(), "{source}: {errors:?}\n{line}");
        }
    }
}

// ---------------------------------------------------------------- tools the run describes

#[tokio::test(flavor = "multi_thread")]
async fn a_run_made_with_a_command_tool_exports_with_the_prompt_line_it_recorded() {
    let prompt = exported_prompt_is_the_prompt_seen(&["--tool", "Weather=cat"]).await;
    assert!(
        prompt.contains("(4) Weather[input], which runs the command `cat`"),
        "{prompt}"
    );
}

/// `ask --today` records its date line: the export rebuilds the prompt with it.
#[tokio::test]
async fn a_run_made_with_today_exports_with_its_date_line() {
    let prompt = exported_prompt_is_the_prompt_seen(&["--today", "2026-11-22"]).await;
    assert!(prompt.contains("\nToday is 2026-11-22.\n"), "{prompt}");
}

/// Records an `ask` run made with `args`, exports it with its examples: the system message and
/// the question are the prompt the server received. That prompt.
async fn exported_prompt_is_the_prompt_seen(args: &[&str]) -> String {
    let server = answering_server().await;
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("run.json");
    let output = crate::binary()
        .args(["ask", "What is the weather in Paris?"])
        .args(args)
        .args(crate::completions_model(&server.uri()))
        .arg("--record")
        .arg(&record)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    crate::assert_exit_0(&output);
    let prompt = prompts(&server).await[0].clone();
    let (exported, _) = chat_with_examples(dir.path(), record.to_str().unwrap());
    let line = &exported[0];
    // The prompt the server saw: the system message, the question, the label the model continued.
    let seen = format!(
        "{}\n{}\nThought 1:",
        line["messages"][0]["content"].as_str().unwrap(),
        line["messages"][1]["content"].as_str().unwrap()
    );
    assert_eq!(seen, prompt);
    prompt
}

#[test]
fn a_run_naming_a_tool_whose_prompt_line_it_does_not_record_is_not_exported_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("runs/methods/react.results.jsonl")).unwrap();
    let mut run: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    // As runs made with `--tool Weather=…` were recorded before they described their tools.
    run["tools"] = json!(["Weather"]);
    let path = dir.path().join("weather.results.jsonl");
    std::fs::write(&path, format!("{run}\n")).unwrap();
    let (status, written, stderr) = export(
        dir.path(),
        &[path.to_str().unwrap(), "--format", "openai-chat", "--all"],
    );
    assert_eq!((status, written.as_str()), (2, ""), "{stderr}");
    assert!(
        stderr.contains(
            "weather.results.jsonl, line 1: not exported: it used the tool `Weather`, whose prompt line the run does not record"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("(1 not rebuilt)"), "{stderr}");
}

// ---------------------------------------------------------------- the draw

#[tokio::test]
async fn fewshot_from_draws_a_questions_first_attempt_whatever_the_order_of_the_file() {
    use react_docstore::base::task::Task;
    use react_docstore::trajectories::fewshot_from::{FewshotFrom, OtherExamples};
    let text = std::fs::read_to_string(fixture("compare/trial-1.results.jsonl")).unwrap();
    let right: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|run| run["em"] == 1 && run["stopped"] == "finish")
        .take(2)
        .collect();
    // Two right attempts at one question: trial 2 (first in the file) and trial 1.
    let mut second = right[0].clone();
    second["trial"] = json!(2);
    let mut first = right[1].clone();
    first["trial"] = json!(1);
    for field in ["id", "question"] {
        first[field] = second[field].clone();
    }
    let thought = |run: &Value| run["steps"][0]["thought"].as_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let mut draws = Vec::new();
    for order in [[&second, &first], [&first, &second]] {
        let from = FewshotFrom {
            results: dir.path().join("source.results.jsonl"),
            runs: order
                .iter()
                .map(|run| serde_json::from_value::<Run>((*run).clone()).unwrap())
                .collect(),
            shots: 1,
            seed: 0,
        };
        let beside = dir.path().join("r.results.jsonl");
        from.draw(
            react_docstore::base::method::Method::React,
            Task::HotpotQa,
            react_docstore::base::profile::Profile::Default,
            &Default::default(),
            &beside,
            OtherExamples::Replace,
        )
        .await
        .unwrap();
        draws.push(std::fs::read_to_string(dir.path().join("r.results.fewshot.txt")).unwrap());
    }
    assert_eq!(draws[0], draws[1]);
    assert!(draws[0].contains(&thought(&first)), "{}", draws[0]);
    assert!(!draws[0].contains(&thought(&second)), "{}", draws[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn extending_an_evaluation_that_drew_a_question_it_now_asks_names_that_question() {
    let server = answering_server().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("dev.results.jsonl");
    let eval = |limit: &[&str]| {
        drawing_from_trial_1(&server, &EVAL_DISTRACTOR_3, "33")
            .args(limit)
            .args(["--seed", "7", "--out"])
            .arg(&results)
            .output()
            .unwrap()
    };
    // The first question alone: Jonny Craig's right run (the second question) may be drawn, and is.
    let output = eval(&["--limit", "1"]);
    crate::assert_exit_0(&output);
    let examples = dir.path().join("dev.results.fewshot.txt");
    let drawn = std::fs::read_to_string(&examples).unwrap();
    assert!(drawn.contains("Jonny Craig"));
    // The three questions, with the same `--fewshot-from`, `--shots` and `--seed`: Jonny Craig's
    // question is now asked, so it is no example any more, and the refusal says so.
    let output = eval(&[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "`5adf2fa35542993344016c11` (position 1867) drawn there is now a question of this evaluation"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("the same `--fewshot-from`"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&examples).unwrap(), drawn);
}

/// `export` of results files with a single run's file (`ask --save`) beside them still reads the
/// results files as one evaluation: two answering one question two ways are refused, naming both.
#[test]
fn a_run_file_beside_results_files_does_not_excuse_them_from_being_one_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("compare/trial-1.results.jsonl")).unwrap();
    let first = text.lines().next().unwrap();
    let mut other: Value = serde_json::from_str(first).unwrap();
    other["answer"] = json!("another answer");
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    std::fs::write(runs.join("a.jsonl"), format!("{first}\n")).unwrap();
    std::fs::write(runs.join("b.jsonl"), format!("{other}\n")).unwrap();
    let (code, _, stderr) = export(
        dir.path(),
        &[runs.to_str().unwrap(), "--all", "--format", "openai-chat"],
    );
    assert_eq!(code, 2, "{stderr}");
    std::fs::write(runs.join("asked.json"), first).unwrap();
    let (code, written, stderr) = export(
        dir.path(),
        &[runs.to_str().unwrap(), "--all", "--format", "openai-chat"],
    );
    assert_eq!(code, 2, "exported {written}: {stderr}");
    assert!(
        stderr.contains("a.jsonl") && stderr.contains("b.jsonl"),
        "{stderr}"
    );
    // Without the disagreement, the run file's run is read beside the evaluation's.
    std::fs::remove_file(runs.join("b.jsonl")).unwrap();
    let (code, _, stderr) = export(
        dir.path(),
        &[runs.to_str().unwrap(), "--all", "--format", "openai-chat"],
    );
    assert_eq!(code, 0, "{stderr}");
    let words: Vec<&str> = stderr.split_whitespace().collect();
    assert!(words.windows(3).any(|w| w == ["runs", "read", "2,"]), "{stderr}");
}
