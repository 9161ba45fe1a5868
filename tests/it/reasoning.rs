//! Reasoning replies: a scripted server that thinks before it answers, in each of the three shapes
//! servers hand the thinking back in (`reasoning`, `reasoning_content`, a leading `<think>` block),
//! through `--api chat`, `completions` and `tools`. The evaluation scores what was scripted, no
//! later request carries the reasoning (but `--api tools` sends it back under its own field), each
//! step records what was sent, a reply cut inside its thinking stops the run with `max_tokens`,
//! and `replay` gives the same answers and reasoning with no model.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::{binary, fixture, request_bodies, serve_posts};

/// Where the scripted server puts its thinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A field of the message (or of the choice, for `/completions`): `reasoning` or
    /// `reasoning_content`.
    Field(&'static str),
    /// A leading `<think>…</think>` in the content or text.
    Think,
    /// An unclosed `<think>`: the token cap cut the reply inside its thinking.
    CutThink,
    /// The field, and no content at all: the cap cut it before any answer.
    CutField(&'static str),
}

/// The questions of `fixtures/hotpotqa/official.json` (distractor paragraphs), each with what the
/// model does: a search first, or the answer at once. The third answer is wrong: EM 2/3.
const SCRIPT: [(&str, Option<&str>, &str); 3] = [
    (
        "Missouri Compromise",
        Some("William King (governor)"),
        "Bath, Maine",
    ),
    ("Wallace and Gromit", None, "Creature Comforts"),
    ("Woman's Era", None, "weekly"),
];

/// The reasoning of question `question_idx`'s step `step`: unique, so that a request that carries
/// it is found.
fn reasoning_of(question_idx: usize, step: usize) -> String {
    format!(
        "PRIVATE-THOUGHT q{question_idx} s{step}: the user asks something; let me\nthink it over before I act."
    )
}

/// Which API the test speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    Chat,
    Completions,
    Tools,
}

impl Api {
    fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Tools => "tools",
        }
    }
}

/// A model server that thinks, in `shape`, then follows [`SCRIPT`].
struct Thinker {
    api: Api,
    shape: Shape,
}

impl Thinker {
    /// The question a request is about and its step: the text APIs' prompt ends with
    /// `Thought N:` (`Action N:` for a fallback call); a tools conversation has had one tool message per step before.
    fn locate(&self, body: &Value) -> (usize, usize) {
        let text = body.to_string();
        let question_idx = SCRIPT
            .iter()
            .position(|(words, ..)| text.contains(words))
            .expect("a scripted question");
        let step = match self.api {
            Api::Tools => {
                let messages = body["messages"].as_array().unwrap();
                1 + messages
                    .iter()
                    .filter(|message| message["role"] == "tool")
                    .count()
            }
            Api::Chat | Api::Completions => {
                let prompt = match self.api {
                    Api::Completions => body["prompt"].as_str().unwrap().to_owned(),
                    _ => body["messages"][1]["content"].as_str().unwrap().to_owned(),
                };
                // Reflexion's reflection call: step 0.
                if prompt.trim_end().ends_with("Reflection:") {
                    return (question_idx, 0);
                }
                // `… Thought N:` (a step), or `… Action N:` (the fallback call for a missing action).
                let label = prompt.trim_end().trim_end_matches(':');
                let digits = label.len() - label.trim_end_matches(|c: char| c.is_ascii_digit()).len();
                label[label.len() - digits..].parse().unwrap()
            }
        };
        (question_idx, step)
    }
}

impl Respond for Thinker {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let (question_idx, step) = self.locate(&body);
        let (_, search, answer) = SCRIPT[question_idx];
        let (thought, action, call) = match (step, search) {
            (1, Some(entity)) => (
                format!("I need to search {entity}."),
                format!("Search[{entity}]"),
                json!({"name": "search", "arguments": json!({"entity": entity}).to_string()}),
            ),
            _ => (
                format!("So the answer is {answer}."),
                format!("Finish[{answer}]"),
                json!({"name": "finish", "arguments": json!({"answer": answer}).to_string()}),
            ),
        };
        let reasoning = reasoning_of(question_idx, step);
        let text = match (self.api, step) {
            (_, 0) => " I answered too fast; next time I search first.".to_owned(),
            (Api::Tools, _) => thought,
            (Api::Chat | Api::Completions, _) => format!(" {thought}\nAction {step}: {action}"),
        };
        let (content, field, finish) = match self.shape {
            Shape::Field(field) => (Some(text), Some(field), "stop"),
            Shape::Think => (
                Some(format!("<think>\n{reasoning}\n</think>\n\n{text}")),
                None,
                "stop",
            ),
            Shape::CutThink => (Some(format!("<think>\n{reasoning}")), None, "length"),
            Shape::CutField(field) => (None, Some(field), "length"),
        };
        let mut choice = match self.api {
            Api::Completions => json!({"index": 0, "text": content.unwrap_or_default()}),
            Api::Chat => json!({"index": 0, "message": {"role": "assistant", "content": content}}),
            Api::Tools => {
                let calls = match self.shape {
                    Shape::CutThink | Shape::CutField(_) => json!([]),
                    _ => {
                        json!([{"id": format!("call_{question_idx}_{step}"), "type": "function", "function": call}])
                    }
                };
                json!({"index": 0, "message": {"role": "assistant", "content": content, "tool_calls": calls}})
            }
        };
        choice["finish_reason"] = json!(finish);
        if let Some(field) = field {
            match self.api {
                Api::Completions => choice[field] = json!(reasoning),
                _ => choice["message"][field] = json!(reasoning),
            }
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "cmpl-1",
            "object": "chat.completion",
            "model": "m",
            "choices": [choice],
            "usage": {"prompt_tokens": 100, "completion_tokens": 40,
                      "completion_tokens_details": {"reasoning_tokens": 25}},
        }))
    }
}

/// `eval` of the official questions on their distractor paragraphs against `server`, results in
/// `out`: its `--json` summary.
fn eval(server: &wiremock::MockServer, api: Api, out: &Path, args: &[&str]) -> Value {
    let output = binary()
        .arg("eval")
        .arg(fixture("hotpotqa/official.json"))
        .args(["--docstore", "distractor", "--model", "m", "--api", api.as_str()])
        .args(["--base-url", &format!("{}/v1", server.uri()), "--json", "--out"])
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.code().is_some_and(|code| code < 2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The runs of a results file (or of `replay --json`'s lines), by question id.
fn runs(text: &str) -> Vec<Value> {
    let mut runs: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|run| run.get("question").is_some())
        .collect();
    runs.sort_by_key(|run| run["id"].as_str().unwrap_or_default().to_owned());
    runs
}

/// `replay --json` of `out`, with no model and no docstore: its runs.
fn replay(out: &Path) -> Vec<Value> {
    let output = binary().arg("replay").arg(out).arg("--json").output().unwrap();
    assert!(
        output.status.code().is_some_and(|code| code < 2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    runs(&String::from_utf8_lossy(&output.stdout))
}

/// Each question's step reasoning, in step order.
fn step_reasoning(runs: &[Value]) -> Vec<Vec<Value>> {
    runs.iter()
        .map(|run| {
            run["steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|step| step["reasoning"].clone())
                .collect()
        })
        .collect()
}

/// What a question's steps reasoned, as the script sent it.
fn scripted_reasoning(run: &Value) -> Vec<Value> {
    let question = run["question"].as_str().unwrap();
    let question_idx = SCRIPT
        .iter()
        .position(|(words, ..)| question.contains(words))
        .unwrap();
    let n_steps = run["steps"].as_array().unwrap().len();
    (1..=n_steps)
        .map(|step| json!(reasoning_of(question_idx, step).trim()))
        .collect()
}

/// One shape through one API: EM as scripted, each step's reasoning as sent, none of it in a
/// later request of a text API, the v2 format and the reasoning tokens, and a replay that gives
/// the same answers and reasoning. Returns the request bodies.
async fn check_shape(api: Api, shape: Shape, args: &[&str]) -> Vec<Value> {
    let server = serve_posts(Thinker { api, shape }).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    let summary = eval(&server, api, &out, args);
    assert_eq!(summary["n"], 3, "{summary}");
    assert!(
        (summary["em"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9,
        "{api:?} {shape:?}: {summary}"
    );

    let recorded = runs(&std::fs::read_to_string(&out).unwrap());
    let answers: Vec<&Value> = recorded.iter().map(|run| &run["answer"]).collect();
    for run in &recorded {
        assert_eq!(run["format"], "react-docstore.run.v2", "{run}");
        assert_eq!(run["stopped"], "finish", "{run}");
        let steps: Vec<Value> = run["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|step| step["reasoning"].clone())
            .collect();
        assert_eq!(steps, scripted_reasoning(run), "{api:?} {shape:?}");
        let n_calls = run["usage"]["llm_calls"].as_u64().unwrap();
        assert_eq!(run["usage"]["reasoning_tokens"], json!(25 * n_calls), "{run}");
        // The thought is what follows the reasoning.
        let thought = run["steps"][0]["thought"].as_str().unwrap();
        assert!(
            !thought.contains("PRIVATE-THOUGHT") && !thought.contains("think>"),
            "{thought}"
        );
    }

    let bodies = request_bodies(&server).await;
    if api != Api::Tools {
        for body in &bodies {
            let text = body.to_string();
            assert!(
                !text.contains("PRIVATE-THOUGHT"),
                "a request carries reasoning: {text}"
            );
        }
    }

    let replayed = replay(&out);
    let replayed_answers: Vec<&Value> = replayed.iter().map(|run| &run["answer"]).collect();
    assert_eq!(replayed_answers, answers);
    assert_eq!(step_reasoning(&replayed), step_reasoning(&recorded));
    let reasoning_tokens = |runs: &[Value]| -> Vec<Value> {
        runs.iter()
            .map(|run| run["usage"]["reasoning_tokens"].clone())
            .collect()
    };
    assert_eq!(reasoning_tokens(&replayed), reasoning_tokens(&recorded));
    bodies
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_replies_in_each_reasoning_shape_score_as_scripted_and_replay() {
    for shape in [
        Shape::Field("reasoning"),
        Shape::Field("reasoning_content"),
        Shape::Think,
    ] {
        check_shape(Api::Chat, shape, &[]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn completions_in_each_reasoning_shape_score_as_scripted_and_replay() {
    for shape in [
        Shape::Field("reasoning"),
        Shape::Field("reasoning_content"),
        Shape::Think,
    ] {
        check_shape(Api::Completions, shape, &[]).await;
    }
}

/// The assistant messages of the later requests of a tools conversation: each with its
/// reasoning fields and its content.
fn echoed_assistants(bodies: &[Value]) -> Vec<Value> {
    bodies
        .iter()
        .flat_map(|body| body["messages"].as_array().unwrap().clone())
        .filter(|message| message["role"] == "assistant")
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_replies_send_their_reasoning_back_under_the_field_they_came_in() {
    for field in ["reasoning", "reasoning_content"] {
        let bodies = check_shape(Api::Tools, Shape::Field(field), &[]).await;
        let echoed = echoed_assistants(&bodies);
        // Question 1 searched first: its second request echoes the first reply.
        assert!(!echoed.is_empty());
        for message in &echoed {
            let reasoning = message[field]
                .as_str()
                .unwrap_or_else(|| panic!("no `{field}`: {message}"));
            assert!(reasoning.starts_with("PRIVATE-THOUGHT q0 s1"), "{message}");
            let other = if field == "reasoning" {
                "reasoning_content"
            } else {
                "reasoning"
            };
            assert!(message.get(other).is_none(), "{message}");
        }
        // `--no-reasoning-echo`: no request carries any of it.
        let bodies = check_shape(Api::Tools, Shape::Field(field), &["--no-reasoning-echo"]).await;
        assert!(!echoed_assistants(&bodies).is_empty());
        for body in &bodies {
            assert!(!body.to_string().contains("PRIVATE-THOUGHT"), "{body}");
        }
    }
    // Inline thinking goes back in the content it came in, and without it when told.
    let bodies = check_shape(Api::Tools, Shape::Think, &[]).await;
    for message in echoed_assistants(&bodies) {
        assert!(
            message["content"]
                .as_str()
                .unwrap()
                .starts_with("<think>\nPRIVATE-THOUGHT q0 s1"),
            "{message}"
        );
    }
    let bodies = check_shape(Api::Tools, Shape::Think, &["--no-reasoning-echo"]).await;
    for body in &bodies {
        assert!(!body.to_string().contains("PRIVATE-THOUGHT"), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_cut_inside_its_thinking_stops_the_run_with_max_tokens() {
    for (api, shape) in [
        (Api::Chat, Shape::CutThink),
        (Api::Completions, Shape::CutField("reasoning_content")),
        (Api::Tools, Shape::CutField("reasoning")),
        (Api::Tools, Shape::CutThink),
    ] {
        let server = serve_posts(Thinker { api, shape }).await;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("results.jsonl");
        let summary = eval(&server, api, &out, &["--max-tokens", "512"]);
        assert_eq!(summary["em"], 0.0, "{summary}");
        let recorded = runs(&std::fs::read_to_string(&out).unwrap());
        assert_eq!(recorded.len(), 3);
        for run in &recorded {
            assert_eq!(run["stopped"], "max_tokens", "{api:?} {shape:?}: {run}");
            assert!(run.get("error_kind").is_none(), "{run}");
            let error = run["error"].as_str().unwrap();
            for words in [
                "`--max-tokens 512`",
                "chat_template_kwargs='{\"enable_thinking\":false}'",
                "reasoning_effort=low",
            ] {
                assert!(error.contains(words), "{words} not in {error}");
            }
            // No fallback call and no invalid action: one call, its reasoning recorded.
            assert_eq!(run["usage"]["llm_calls"], 1, "{run}");
            assert_eq!(run["usage"]["invalid_actions"], 0, "{run}");
            assert_eq!(
                step_reasoning(std::slice::from_ref(run)),
                [scripted_reasoning(run)]
            );
        }
        assert_eq!(request_bodies(&server).await.len(), 3, "{api:?} {shape:?}");
        let replayed = replay(&out);
        for run in &replayed {
            assert_eq!(run["stopped"], "max_tokens", "{run}");
            assert!(
                run["error"].as_str().unwrap().contains("`--max-tokens 512`"),
                "{run}"
            );
        }
        assert_eq!(step_reasoning(&replayed), step_reasoning(&recorded));
    }
}

/// `export` of a thinking model's results: without the reasoning by default, with it where each
/// format's users put it under `--reasoning keep`.
fn export(out: &Path, format: &str, args: &[&str]) -> String {
    let written = out.with_extension(format!("{format}.out"));
    let output = binary()
        .arg("export")
        .arg(out)
        .args(["--format", format, "--all", "--out"])
        .arg(&written)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_to_string(written).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_shows_in_the_trace_the_report_and_kept_exports_only() {
    let server = serve_posts(Thinker {
        api: Api::Chat,
        shape: Shape::Think,
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    eval(&server, Api::Chat, &out, &[]);

    for format in ["openai-chat", "sharegpt", "alpaca"] {
        let dropped = export(&out, format, &[]);
        assert!(!dropped.contains("PRIVATE-THOUGHT"), "{format}: {dropped}");
    }
    let sharegpt = export(&out, "sharegpt", &["--reasoning", "keep"]);
    assert!(
        sharegpt.contains(r#""from":"gpt","value":"<think>\nPRIVATE-THOUGHT q0 s1: the user asks something; let me\nthink it over before I act.\n</think>\n\nThought 1: I need to search"#),
        "{sharegpt}"
    );
    let alpaca = export(&out, "alpaca", &["--reasoning", "keep"]);
    assert!(alpaca.contains(r#"<think>\nPRIVATE-THOUGHT q1 s1"#), "{alpaca}");
    let openai = export(&out, "openai-chat", &["--reasoning", "keep"]);
    let first: Value = serde_json::from_str(openai.lines().next().unwrap()).unwrap();
    let assistant = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "assistant")
        .unwrap();
    assert!(
        assistant["reasoning"]
            .as_str()
            .unwrap()
            .starts_with("PRIVATE-THOUGHT"),
        "{assistant}"
    );
    assert!(
        !assistant["content"].as_str().unwrap().contains("PRIVATE-THOUGHT"),
        "{assistant}"
    );

    // The trace: one dimmed line, cut short, unless asked whole.
    let replayed = binary().arg("replay").arg(&out).output().unwrap();
    let trace = String::from_utf8_lossy(&replayed.stderr);
    assert!(
        trace.contains("Reasoning 1: PRIVATE-THOUGHT q0 s1: the user asks something; let me think it over before I act.\nThought 1:"),
        "{trace}"
    );
    let whole = binary()
        .arg("replay")
        .arg(&out)
        .arg("--show-reasoning")
        .output()
        .unwrap();
    let trace = String::from_utf8_lossy(&whole.stderr);
    assert!(trace.contains("let me\nthink it over"), "{trace}");

    // The report: folded under each step.
    let page = dir.path().join("report.html");
    crate::report::write_report(&[out.as_path()], &page, &[]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("PRIVATE-THOUGHT q0 s1"), "no reasoning in the page");
    assert!(
        html.contains("el('details', 'step reasoning')"),
        "no folded reasoning"
    );
}

/// CoT-SC's samples each think (`reasoning_content`) before they answer; the second question's
/// last sample is cut inside its thinking.
struct SamplingThinker;

impl Respond for SamplingThinker {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let text = body.to_string();
        let question_idx = SCRIPT
            .iter()
            .position(|(words, ..)| text.contains(words))
            .unwrap();
        let answer = SCRIPT[question_idx].2;
        let n = body["n"].as_u64().unwrap_or(1);
        let choices: Vec<Value> = (0..n)
            .map(|idx| {
                let cut = question_idx == 1 && idx == n - 1;
                let content = if cut {
                    String::new()
                } else {
                    format!(" So the answer is {answer}.\nAnswer: {answer}")
                };
                json!({"index": idx, "finish_reason": if cut { "length" } else { "stop" },
                       "message": {"role": "assistant", "content": content,
                                   "reasoning_content": format!("SAMPLE-THOUGHT q{question_idx} #{idx}")}})
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"choices": choices}))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cot_sc_samples_record_their_reasoning_and_one_cut_sample_stops_the_run() {
    let server = serve_posts(SamplingThinker).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    eval(
        &server,
        Api::Chat,
        &out,
        &["--method", "cot-sc", "--samples", "3"],
    );
    let recorded = runs(&std::fs::read_to_string(&out).unwrap());
    let sample_reasoning = |runs: &[Value]| -> Vec<Vec<Value>> {
        runs.iter()
            .map(|run| {
                run["samples"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|sample| sample["reasoning"].clone())
                    .collect()
            })
            .collect()
    };
    let stops: Vec<&Value> = recorded.iter().map(|run| &run["stopped"]).collect();
    for (run, reasoning) in recorded.iter().zip(sample_reasoning(&recorded)) {
        let question = run["question"].as_str().unwrap();
        let question_idx = SCRIPT
            .iter()
            .position(|(words, ..)| question.contains(words))
            .unwrap();
        let expected: Vec<Value> = (0..3)
            .map(|idx| json!(format!("SAMPLE-THOUGHT q{question_idx} #{idx}")))
            .collect();
        assert_eq!(reasoning, expected);
        let stop = if question_idx == 1 { "max_tokens" } else { "finish" };
        assert_eq!(run["stopped"], stop, "{run}");
    }
    for body in request_bodies(&server).await {
        assert!(!body.to_string().contains("SAMPLE-THOUGHT"), "{body}");
    }
    let replayed = replay(&out);
    assert_eq!(sample_reasoning(&replayed), sample_reasoning(&recorded));
    let replayed_stops: Vec<&Value> = replayed.iter().map(|run| &run["stopped"]).collect();
    assert_eq!(replayed_stops, stops);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reflection_records_its_reasoning_and_no_later_prompt_carries_it() {
    let server = serve_posts(Thinker {
        api: Api::Chat,
        shape: Shape::Field("reasoning_content"),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.jsonl");
    eval(
        &server,
        Api::Chat,
        &out,
        &["--trials", "2", "--reflect", "reflexion"],
    );
    let recorded = runs(&std::fs::read_to_string(&out).unwrap());
    // The wrong answer (question 3) is tried again after a reflection.
    let reflected: Vec<&Value> = recorded
        .iter()
        .filter(|run| run.get("reflection").is_some())
        .collect();
    assert_eq!(reflected.len(), 1, "{recorded:?}");
    assert_eq!(reflected[0]["trial"], 2);
    assert_eq!(
        reflected[0]["reflection_reasoning"],
        json!(reasoning_of(2, 0).trim())
    );
    assert_eq!(
        reflected[0]["reflections"],
        json!(["I answered too fast; next time I search first."])
    );
    for body in request_bodies(&server).await {
        assert!(!body.to_string().contains("PRIVATE-THOUGHT"), "{body}");
    }
    let replayed = replay(&out);
    let reflection_reasoning = |runs: &[Value]| -> Vec<Value> {
        runs.iter()
            .map(|run| run["reflection_reasoning"].clone())
            .collect()
    };
    assert_eq!(reflection_reasoning(&replayed), reflection_reasoning(&recorded));
}

/// One reply of a thinking model, as a server sends it for every request of a one-question `eval`.
#[derive(Debug, Clone, Copy)]
struct Canned {
    api: Api,
    /// The content (or `/completions` text); `None` sends `null` (no text at all).
    content: Option<&'static str>,
    /// Reasoning fields sent beside it.
    fields: &'static [(&'static str, &'static str)],
    /// With `--api tools`: whether the reply calls `finish` with `Paris`.
    calls_finish: bool,
    /// `None` sends no `finish_reason`.
    finish: Option<&'static str>,
}

impl Respond for Canned {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut choice = match self.api {
            Api::Completions => json!({"index": 0, "text": self.content}),
            Api::Chat => json!({"index": 0, "message": {"role": "assistant", "content": self.content}}),
            Api::Tools => {
                let calls = if self.calls_finish {
                    json!([{"id": "call_1", "type": "function",
                            "function": {"name": "finish", "arguments": "{\"answer\": \"Paris\"}"}}])
                } else {
                    json!([])
                };
                json!({"index": 0, "message": {"role": "assistant", "content": self.content, "tool_calls": calls}})
            }
        };
        for (field, text) in self.fields {
            match self.api {
                Api::Completions => choice[*field] = json!(text),
                _ => choice["message"][*field] = json!(text),
            }
        }
        if let Some(finish) = self.finish {
            choice["finish_reason"] = json!(finish);
        }
        ResponseTemplate::new(200).set_body_json(json!({"choices": [choice]}))
    }
}

/// How a one-question run ends.
#[derive(Debug, Clone, Copy)]
enum Ends {
    /// With `Finish[Paris]`, the step recording this reasoning.
    Answers(Option<&'static str>),
    /// Stopped as named, its error holding each of the words and none of the refused ones.
    Stops {
        stopped: &'static str,
        words: &'static [&'static str],
        never: &'static [&'static str],
    },
}

const ANSWER: &str = " I know it.\nAction 1: Finish[Paris]";
const THINKING_OFF: &str = "chat_template_kwargs='{\"enable_thinking\":false}'";
const THINKING_DOWN: &str = "reasoning_effort=low";
const SERVER_ENDED: &[&str] = &["the token cap did not cut it", "the server ended the reply"];

#[tokio::test(flavor = "multi_thread")]
async fn each_reasoning_shape_is_read_apart_and_a_reply_of_only_reasoning_says_what_ended_it() {
    let canned = |api, content, fields, finish| Canned {
        api,
        content,
        fields,
        calls_finish: false,
        finish,
    };
    let cut = |words| Ends::Stops {
        stopped: "max_tokens",
        words,
        never: &["did not cut it"],
    };
    let ended = Ends::Stops {
        stopped: "error",
        words: SERVER_ENDED,
        never: &["raise `--max-tokens`", "cut it inside its thinking"],
    };
    #[rustfmt::skip]
    let table: Vec<(&str, Canned, &[&str], Ends)> = vec![
        // A `</think>` that ends the reply closes no block: the reply is read, not taken for
        // reasoning (issue 45, item 8).
        ("trailing </think>, chat", canned(Api::Chat, Some(" I know it.\nAction 1: Finish[Paris]</think>"), &[], Some("stop")), &[], Ends::Answers(None)),
        ("trailing </think>, completions", canned(Api::Completions, Some(" I know it.\nAction 1: Finish[Paris]</think>\n"), &[], Some("stop")), &[], Ends::Answers(None)),
        ("trailing </think>, tools", Canned { calls_finish: true, ..canned(Api::Tools, Some("I know it.</think>"), &[], Some("tool_calls")) }, &[], Ends::Answers(None)),
        ("block, then a stray </think>", canned(Api::Chat, Some("<think>a</think> I know it.\nAction 1: Finish[Paris]</think>"), &[], Some("stop")), &[], Ends::Answers(Some("a"))),
        ("block the template opened", canned(Api::Chat, Some("hmm.\n</think>\n\n I know it.\nAction 1: Finish[Paris]"), &[], Some("stop")), &[], Ends::Answers(Some("hmm."))),
        ("empty block (thinking off)", canned(Api::Chat, Some("<think>\n\n</think>\n\n I know it.\nAction 1: Finish[Paris]"), &[], Some("stop")), &[], Ends::Answers(None)),
        ("`reasoning` field", canned(Api::Chat, Some(ANSWER), &[("reasoning", "r")], Some("stop")), &[], Ends::Answers(Some("r"))),
        ("both fields: `reasoning` first", canned(Api::Chat, Some(ANSWER), &[("reasoning", "a"), ("reasoning_content", "b")], Some("stop")), &[], Ends::Answers(Some("a"))),
        ("blank field", canned(Api::Completions, Some(ANSWER), &[("reasoning_content", "  \n")], Some("stop")), &[], Ends::Answers(None)),
        // Only reasoning, cut by the cap: the error names the cap and says to raise it.
        ("field, cut at 512", canned(Api::Chat, None, &[("reasoning_content", "r")], Some("length")), &["--max-tokens", "512"], cut(&["`--max-tokens 512`", "raise `--max-tokens` above 512", THINKING_OFF, THINKING_DOWN])),
        ("unclosed <think>, cut at 512, tools", canned(Api::Tools, Some("<think>r"), &[], Some("length")), &["--max-tokens", "512"], cut(&["`--max-tokens 512`", "raise `--max-tokens` above 512"])),
        ("no finish_reason reads as cut", canned(Api::Completions, Some("<think>r"), &[], None), &["--max-tokens", "300"], cut(&["`--max-tokens 300`"])),
        // `--max-tokens 0` sends no cap: the server's default cut it, and 0 is never to be raised
        // (issue 45, item 11).
        ("cut with --max-tokens 0", canned(Api::Chat, Some("<think>r"), &[], Some("length")), &["--max-tokens", "0"], Ends::Stops {
            stopped: "max_tokens",
            words: &["`--max-tokens 0` sends none", "the server's default", THINKING_OFF],
            never: &["raise `--max-tokens`", "`--max-tokens 256`"],
        }),
        // Only reasoning, ended by the server: not the cap's doing, and not called so (item 11).
        ("field, ended, chat", canned(Api::Chat, Some(""), &[("reasoning", "r")], Some("stop")), &["--max-tokens", "512"], ended),
        ("field, ended, completions", canned(Api::Completions, None, &[("reasoning_content", "r")], Some("stop")), &[], ended),
        ("unclosed <think>, ended", canned(Api::Chat, Some("<think>r"), &[], Some("stop")), &[], ended),
        ("field, ended, tools", canned(Api::Tools, None, &[("reasoning", "r")], Some("stop")), &[], ended),
    ];
    for (name, canned, args, ends) in table {
        let server = serve_posts(canned).await;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("results.jsonl");
        // A question that ends in an error makes `eval` exit 2: its line is what is checked.
        binary()
            .arg("eval")
            .arg(fixture("hotpotqa/official.json"))
            .args([
                "--docstore",
                "distractor",
                "--model",
                "m",
                "--api",
                canned.api.as_str(),
            ])
            .args([
                "--base-url",
                &format!("{}/v1", server.uri()),
                "--limit",
                "1",
                "--out",
            ])
            .arg(&out)
            .args(args)
            .output()
            .unwrap();
        let recorded = runs(&std::fs::read_to_string(&out).unwrap());
        assert_eq!(recorded.len(), 1, "{name}");
        let run = &recorded[0];
        check_ending(name, run, ends);
        // A replay ends the same way, with the same words.
        let replayed = replay(&out);
        for field in ["answer", "stopped", "error"] {
            assert_eq!(replayed[0][field], run[field], "{name}: replayed {field}");
        }
        assert_eq!(step_reasoning(&replayed), step_reasoning(&recorded), "{name}");
        println!("reasoning case: {name}: {}", run["stopped"]);
    }
}

/// Checks that `run` ended as `ends` says.
#[track_caller]
fn check_ending(name: &str, run: &Value, ends: Ends) {
    match ends {
        Ends::Answers(reasoning) => {
            assert_eq!(run["stopped"], "finish", "{name}: {run}");
            assert_eq!(run["answer"], "Paris", "{name}: {run}");
            assert_eq!(run["steps"][0]["reasoning"], json!(reasoning), "{name}: {run}");
            let step = &run["steps"][0];
            for field in ["thought", "action"] {
                let text = step[field].as_str().unwrap_or_default();
                assert!(!text.contains("think>"), "{name}: a tag is kept: {step}");
            }
        }
        Ends::Stops {
            stopped,
            words,
            never,
        } => {
            assert_eq!(run["stopped"], stopped, "{name}: {run}");
            assert_eq!(run["steps"][0]["reasoning"], "r", "{name}: {run}");
            let error = run["error"].as_str().unwrap();
            for words in words {
                assert!(error.contains(words), "{name}: `{words}` not in {error}");
            }
            for words in never {
                assert!(!error.contains(words), "{name}: `{words}` in {error}");
            }
        }
    }
}
