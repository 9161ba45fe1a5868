//! The transparency harness: one differential test of the promise that how an evaluation is run
//! never changes what it finds. For every method (the seven, Reflexion's trials, epochs), every
//! API and every server behaviour, an evaluation over a scripted model server is run once as the
//! reference, then again each other way; the answers, votes, backoff decisions and recorded steps
//! must be the same:
//!
//! - `--cache` on an empty directory (cold: the server answers what it answered the reference, the
//!   cache answers nothing), then on the directory it filled (warm: the server is asked nothing);
//!   only the runs' `cache` field (and with it `run.v2`) and the requests sent (`usage.requests`)
//!   differ;
//! - killed part-way (the future dropped, as a crash; or interrupted, as Ctrl-C) and run again,
//!   and two questions failing past the client's retries and asked again by the same command:
//!   the same runs as uninterrupted;
//! - `--shard 0/2` and `--shard 1/2`, then `merge`: the same runs as whole;
//! - `replay` of the reference's results file: the same answers, votes, backoffs and steps;
//! - for the methods that vote, `--sc-stop exact` (the reference) against all N: the same answer,
//!   the same backoff verdict, and its samples the first of all N's. `beta` against all N: its
//!   samples the first of all N's and `cot-sc-then-react`'s verdict judged over them; its answer
//!   and its backoff may differ from all N's — the allowed difference, counted in the report.
//!
//! The server (a small axum server: wiremock's sockets wait out Nagle's algorithm, 40 ms a request)
//! answers as a function of the request's content: the question and the step, read off the prompt
//! or the conversation, and for CoT's samples the place in the question's stream of samples (each
//! sampling request of a question takes the next ones). Its state is reset for each evaluation, as
//! if it were started again, and only a request answered with a reply moves it: a refusal, a
//! transient error or a retry takes no sample. A question's requests with the same prompt (CoT-SC
//! asking again for what a server did not send in one reply) are sent one after another by
//! [`InTurn`], in the order the client makes them, so that concurrent questions never move a
//! sample; the client numbers them itself, which is what the cache keys.
//!
//! A new feature is a line: a method is a row of [`METHODS`], an API an entry of [`APIS`], a server
//! behaviour an entry of [`BEHAVIOURS`] (a new kind of [`Behaviour`] also gets its arm in
//! `Server::answer`), a way of running an entry of [`VARIANTS`] (its arm in [`run_variant`]).
//! Combinations the library refuses (a method that does not take `--api tools`) are named in their
//! row's `refuses`, and checked to be refused before any request. The test prints its report (a
//! table of method × API × behaviour, the variants run in each cell, and the counts) to the
//! process's stderr, so a plain `cargo test` shows it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use react_docstore::analysis::attempts::Attempts;
use react_docstore::base::method::Method;
use react_docstore::base::method::{Reflect, ScStop, StopRule};
use react_docstore::docstore::ContextParagraph;
use react_docstore::docstore::{Docstore, DocstoreError, DocstoreSource};
use react_docstore::eval::{self, EvalConfig, EvalError, EvalServices, Progress, Resume};
use react_docstore::llm::cache::{Hosts, ReplyCache};
use react_docstore::llm::openai::{DEFAULT_MAX_RESPONSE_BYTES, RetryPolicy};
use react_docstore::llm::{
    Completion, ConverseRequest, Llm, LlmError, LlmRequest, Reply, SampleRequest, Samples, openai::Api,
    openai::OpenAiClient, openai::OpenAiConfig,
};
use react_docstore::record::questions::Contexts;
use react_docstore::record::results::ResultsError;
use react_docstore::record::selection::Selection;
use react_docstore::record::shard::Shard;
use react_docstore::solver::setup::AgentSetup;
use serde_json::{Value, json};

// ---------------------------------------------------------------- the tables

/// One method as an evaluation runs it, and the APIs the library refuses it on (checked).
struct MethodRow {
    name: &'static str,
    method: Method,
    attempts: Attempts,
    refuses: &'static [Api],
}

/// Every method: the seven of `--method`, Reflexion's trials and independent epochs.
const METHODS: &[MethodRow] = &[
    MethodRow {
        name: "react",
        method: Method::React,
        attempts: Attempts::Once,
        refuses: &[],
    },
    MethodRow {
        name: "act",
        method: Method::Act,
        attempts: Attempts::Once,
        refuses: &[Api::Tools],
    },
    MethodRow {
        name: "cot",
        method: Method::Cot,
        attempts: Attempts::Once,
        refuses: &[Api::Tools],
    },
    MethodRow {
        name: "standard",
        method: Method::Standard,
        attempts: Attempts::Once,
        refuses: &[Api::Tools],
    },
    MethodRow {
        name: "cot-sc",
        method: Method::CotSc,
        attempts: Attempts::Once,
        refuses: &[Api::Tools],
    },
    MethodRow {
        name: "react-then-cot-sc",
        method: Method::ReactThenCotSc,
        attempts: Attempts::Once,
        refuses: &[Api::Tools],
    },
    MethodRow {
        name: "cot-sc-then-react",
        method: Method::CotScThenReact,
        attempts: Attempts::Once,
        refuses: &[Api::Tools],
    },
    MethodRow {
        name: "react --trials 3 --reflect reflexion",
        method: Method::React,
        attempts: Attempts::Trials {
            trials: 3,
            reflect: Reflect::Reflexion,
        },
        refuses: &[Api::Tools],
    },
    MethodRow {
        name: "react --epochs 2",
        method: Method::React,
        attempts: Attempts::Epochs(2),
        refuses: &[],
    },
];

/// Every API.
const APIS: &[Api] = &[
    Api::Chat,
    Api::Completions,
    Api::Tools,
    Api::Responses,
    Api::ResponsesTools,
    Api::Anthropic,
    Api::AnthropicTools,
];

/// Whether the library refuses `row` on `api`: a method that takes no function calls refuses
/// every API that calls functions.
fn refuses(row: &MethodRow, api: Api) -> bool {
    row.refuses.contains(&api) || (api.calls_functions() && row.refuses.contains(&Api::Tools))
}

/// Whether `api` speaks Chat Completions or Completions, whose servers honour, ignore or refuse
/// `n`, `stop` and `max_tokens`.
fn speaks_chat_completions(api: Api) -> bool {
    matches!(api, Api::Chat | Api::Completions | Api::Tools)
}

/// The server behaviours an API meets. The Responses and Anthropic APIs': no `n` or `stop` is
/// ever sent, and the token cap has its own name (required by Anthropic), so the behaviours about
/// them are left out; their reasoning comes as reasoning items or `thinking` blocks (the
/// `reasoning` row) or a `<think>` block.
fn behaviours(api: Api) -> Vec<(&'static str, Behaviour)> {
    BEHAVIOURS
        .iter()
        .copied()
        .filter(|(_, behaviour)| {
            speaks_chat_completions(api)
                || matches!(
                    behaviour,
                    Behaviour::HonoursN
                        | Behaviour::Refuses("temperature")
                        | Behaviour::Transient
                        | Behaviour::Reasoning(Shape::Think | Shape::Field("reasoning"))
                )
        })
        .collect()
}

/// What the scripted server does besides answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    /// `n` choices for `n` asked.
    HonoursN,
    /// One choice, whatever `n` asks.
    IgnoresN,
    /// A 400 naming the parameter when a request carries it (as OpenAI's reasoning models do).
    Refuses(&'static str),
    /// Each reply is first a 429 or a 503, then given when asked again.
    Transient,
    /// Thinks before it answers: the reasoning in a field of the message (or of the choice), or
    /// in a leading `<think>` block of the text.
    Reasoning(Shape),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Field(&'static str),
    Think,
}

/// Every server behaviour, as the report names it.
const BEHAVIOURS: &[(&str, Behaviour)] = &[
    ("honours-n", Behaviour::HonoursN),
    ("ignores-n", Behaviour::IgnoresN),
    ("refuses-n", Behaviour::Refuses("n")),
    ("refuses-stop", Behaviour::Refuses("stop")),
    ("refuses-temp", Behaviour::Refuses("temperature")),
    ("refuses-max", Behaviour::Refuses("max_tokens")),
    ("429/503", Behaviour::Transient),
    ("reasoning", Behaviour::Reasoning(Shape::Field("reasoning"))),
    (
        "reasoning_content",
        Behaviour::Reasoning(Shape::Field("reasoning_content")),
    ),
    ("<think>", Behaviour::Reasoning(Shape::Think)),
];

/// Each way of running an evaluation that must find what the reference found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    CacheCold,
    CacheWarm,
    Resumed,
    /// Two questions failing past the client's retries (503), then the same command again.
    ErredAndResumed,
    Sharded,
    Replayed,
    /// The methods that vote: `--sc-stop exact` (the reference) against all N.
    ExactVsAllN,
    /// The methods that vote: `--sc-stop beta` against all N, within its allowed difference.
    BetaVsAllN,
}

/// Every variant, its letter in the report, and whether only the methods that vote have it.
const VARIANTS: &[(Variant, char, bool)] = &[
    (Variant::CacheCold, 'c', false),
    (Variant::CacheWarm, 'w', false),
    (Variant::Resumed, 'r', false),
    (Variant::ErredAndResumed, 'f', false),
    (Variant::Sharded, 's', false),
    (Variant::Replayed, 'p', false),
    (Variant::ExactVsAllN, 'e', true),
    (Variant::BetaVsAllN, 'b', true),
];

// ---------------------------------------------------------------- the script

/// CoT-SC's N and `--sc-stop`'s batch in every case.
const SAMPLES: usize = 12;
const SC_BATCH: usize = 3;
/// The step budget of the methods that act.
const MAX_STEPS: usize = 5;

/// One ReAct step as the model writes it: its thought and action; `fallback`: the text APIs get
/// the thought alone, and the action from the fallback call.
struct Step {
    thought: &'static str,
    action: &'static str,
    fallback: bool,
}

/// What the model answers a question with.
struct Script {
    id: &'static str,
    question: &'static str,
    gold: &'static str,
    /// ReAct's and Act's steps; the last one repeats past the end.
    steps: &'static [Step],
    /// Its steps once a reflection is shown (a later Reflexion trial).
    reflected: &'static [Step],
    /// Its stream of CoT samples (`None`: a sample without an answer line).
    samples: [Option<&'static str>; SAMPLES],
    standard: &'static str,
}

const fn step(thought: &'static str, action: &'static str) -> Step {
    Step {
        thought,
        action,
        fallback: false,
    }
}

const A: Option<&str> = Some("Arthur's Magazine");
const X: Option<&str> = Some("Chief of Protocol");
const Y: Option<&str> = Some("Saint Louis");
const Z: Option<&str> = Some("Chicago");

/// Four questions, so every way of ending is met. `tq0`: right at once, and an early `exact`
/// stop. `tq1`: a fallback call and a Lookup, and issue 45's vote that `exact` must ask to the end
/// under `cot-sc-then-react` (4 of the first 9, 7 of 12; decided at 9 for `cot-sc`). `tq2`: a
/// repeated search (ReAct's backoff), right after a reflection; a weak vote all N back off from
/// (5 of 12), which `beta` keeps (5 of the first 6). `tq3`: an empty `Finish[]`; a vote whose
/// answer all N (6 of 12, exactly half) and `beta` (the first 5 of 6) disagree on.
const SCRIPTS: [Script; 4] = [
    Script {
        id: "tq0",
        question: "Which magazine was started first, Arthur's Magazine or First for Women?",
        gold: "Arthur's Magazine",
        steps: &[
            step("I need to search Arthur's Magazine.", "Search[Arthur's Magazine]"),
            step(
                "It was started in 1844, before First for Women.",
                "Finish[Arthur's Magazine]",
            ),
        ],
        reflected: &[step("I know it.", "Finish[Arthur's Magazine]")],
        samples: [
            A,
            A,
            Some("First for Women"),
            A,
            A,
            A,
            Some("Arthur's"),
            A,
            A,
            A,
            A,
            A,
        ],
        standard: "Arthur's Magazine",
    },
    Script {
        id: "tq1",
        question: "What government position was held by the woman who portrayed Corliss Archer?",
        gold: "Chief of Protocol",
        steps: &[
            Step {
                thought: "I need to find who portrayed Corliss Archer.",
                action: "Search[Corliss Archer]",
                fallback: true,
            },
            step(
                "Shirley Temple played her; I look up her positions.",
                "Lookup[Chief]",
            ),
            step("She was Chief of Protocol.", "Finish[Chief of Protocol]"),
        ],
        reflected: &[step("I know it.", "Finish[Chief of Protocol]")],
        samples: [
            X,
            X,
            X,
            X,
            Some("ambassador"),
            Some("governor"),
            Some("senator"),
            Some("mayor"),
            Some("actress"),
            X,
            X,
            X,
        ],
        standard: "Ambassador",
    },
    Script {
        id: "tq2",
        question: "Where was the first governor after the Missouri Compromise from?",
        gold: "Bath, Maine",
        steps: &[step(
            "I need to search the Missouri Compromise.",
            "Search[Missouri Compromise]",
        )],
        reflected: &[
            step("This time I search the governor himself.", "Search[William King]"),
            step("He was from Bath.", "Finish[Bath, Maine]"),
        ],
        samples: [
            Some("Portland"),
            Some("Portland"),
            Some("Portland"),
            Some("Portland"),
            Some("Portland"),
            None,
            Some("Boston"),
            Some("Augusta"),
            Some("Bangor"),
            Some("Salem"),
            Some("Concord"),
            Some("Hartford"),
        ],
        standard: "Bath, Maine",
    },
    Script {
        id: "tq3",
        question: "Which city is the Gateway Arch in?",
        gold: "Saint Louis",
        steps: &[
            step(
                "The Gateway Arch stands by the Mississippi.",
                "Search[Gateway Arch]",
            ),
            step("I am not sure.", "Finish[]"),
        ],
        reflected: &[
            step("I search it again.", "Search[Gateway Arch]"),
            step("It is in St. Louis.", "Finish[St. Louis]"),
        ],
        samples: [Z, Z, Z, Z, Z, None, Y, Y, Y, Y, Y, Y],
        standard: "St. Louis",
    },
];

/// The questions whose model calls the first run of [`Variant::Resumed`] holds until it is killed.
const HELD: [usize; 2] = [1, 3];

/// The script of the question a prompt (or a conversation) asks, and its index.
fn script_of(text: &str) -> (usize, &'static Script) {
    let idx = SCRIPTS
        .iter()
        .position(|script| text.contains(script.question))
        .unwrap_or_else(|| panic!("no scripted question in {text:.200}"));
    (idx, &SCRIPTS[idx])
}

/// A text prompt's last question and what follows it.
fn after_question(prompt: &str) -> &str {
    let at = prompt.rfind("Question: ").expect("a prompt asks a question");
    &prompt[at..]
}

/// The argument of `Name[argument]`, and the function `--api tools` calls for it.
fn as_call(action: &str) -> Value {
    let (name, rest) = action.split_once('[').unwrap();
    let argument = rest.strip_suffix(']').unwrap();
    let (function, field) = match name {
        "Search" => ("search", "entity"),
        "Lookup" => ("lookup", "keyword"),
        _ => ("finish", "answer"),
    };
    json!({"name": function, "arguments": json!({field: argument}).to_string()})
}

// ---------------------------------------------------------------- the server

/// What one evaluation did to the server: each question's sample stream taken so far (by its
/// prompt), which replies already failed once, and what it answered.
#[derive(Debug, Default)]
struct ServerState {
    taken: HashMap<String, usize>,
    failed: HashSet<(String, usize)>,
    /// Requests received, refused and failed ones included.
    received: usize,
    /// Requests answered with a reply.
    answered: usize,
    /// Whether the questions of [`HELD`] get a 503, whatever is asked and however often.
    down: bool,
    /// What was wrong with the requests received, against the API's documented schema.
    violations: Vec<String>,
}

#[derive(Clone)]
struct Server {
    api: Api,
    behaviour: Behaviour,
    state: Arc<Mutex<ServerState>>,
}

/// A response: its status and JSON body.
type Answer = (u16, Value);

/// The 400 of a server that does not take `param`, in OpenAI's words (or Anthropic's).
fn refusal(api: Api, param: &str) -> Answer {
    if api.is_anthropic() {
        let message = format!("{param}: '{param}' is not supported with this model.");
        return anthropic::error(400, "invalid_request_error", &message);
    }
    let message = match param {
        "max_tokens" => "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.".to_owned(),
        _ => format!("Unsupported parameter: '{param}' is not supported with this model."),
    };
    let error = json!({"error": {
        "message": message, "type": "invalid_request_error", "param": param, "code": "unsupported_parameter",
    }});
    (400, error)
}

impl Server {
    /// The answer to one request body.
    fn answer(&self, body: &[u8]) -> Answer {
        let body: Value = serde_json::from_slice(body).unwrap();
        let mut state = self.state.lock().unwrap();
        state.received += 1;
        if let Behaviour::Refuses(param) = self.behaviour
            && body.get(param).is_some()
        {
            return refusal(self.api, param);
        }
        if self.api.is_anthropic()
            && let Err(refused) = anthropic::check_body(&body, self.behaviour)
        {
            return anthropic::error(400, "invalid_request_error", &refused);
        }
        if let Err(violation) = responses_request(self.api, &body) {
            state.violations.push(violation.clone());
            return (
                400,
                json!({"error": {"message": violation, "type": "invalid_request_error"}}),
            );
        }
        // What the request asks, whatever parameters it carries: the prompt or the conversation.
        let asked = match self.api {
            Api::Completions => body["prompt"].as_str().unwrap().to_owned(),
            Api::Chat => body["messages"][1]["content"].as_str().unwrap().to_owned(),
            Api::Tools | Api::AnthropicTools => body["messages"].to_string(),
            Api::Anthropic => anthropic::user_text(&body),
            Api::Responses => body["input"].as_str().unwrap().to_owned(),
            Api::ResponsesTools => body["input"].to_string(),
        };
        if state.down && HELD.contains(&script_of(&asked).0) {
            return (503, json!({"error": {"message": "down for maintenance"}}));
        }
        let taken = state.taken.get(&asked).copied().unwrap_or(0);
        if self.behaviour == Behaviour::Transient && state.failed.insert((asked.clone(), taken)) {
            let status = if asked.len().is_multiple_of(2) { 429 } else { 503 };
            if self.api.is_anthropic() {
                // Anthropic's overloaded status.
                let status = if status == 503 { 529 } else { status };
                return anthropic::error(status, "overloaded_error", "Overloaded");
            }
            return (status, json!({"error": {"message": "busy"}}));
        }
        let n = body["n"].as_u64().unwrap_or(1) as usize;
        let n = if self.behaviour == Behaviour::IgnoresN {
            1
        } else {
            n
        };
        let (texts, n_taken) = match self.api {
            Api::Tools => (vec![tools_reply(&body)], 0),
            Api::AnthropicTools => (vec![anthropic::tools_reply(&body)], 0),
            Api::ResponsesTools => (vec![responses_tools_reply(&body)], 0),
            _ => text_replies(&asked, n, taken),
        };
        *state.taken.entry(asked).or_insert(0) += n_taken;
        state.answered += 1;
        if self.api.is_anthropic() {
            let (content, calls) = texts.into_iter().next().unwrap();
            return (200, anthropic::message(self.behaviour, content, calls));
        }
        if matches!(self.api, Api::Responses | Api::ResponsesTools) {
            return (200, self.response(&body, texts));
        }
        let choices: Vec<Value> = texts
            .into_iter()
            .enumerate()
            .map(|(idx, (content, calls))| self.choice(idx, content, calls))
            .collect();
        let n_choices = choices.len();
        let response = json!({
            "id": "cmpl-1", "object": "chat.completion", "model": "m",
            "choices": choices,
            "usage": {"prompt_tokens": 100, "completion_tokens": 10 * n_choices,
                      "completion_tokens_details": {"reasoning_tokens": 4 * n_choices}},
        });
        (200, response)
    }

    /// Serves on a local port until the handle is aborted: its base URL. The sockets are set
    /// `TCP_NODELAY`, which wiremock's are not: with Nagle's algorithm and delayed ACKs, each
    /// request would wait some 40 ms.
    async fn start(self) -> (String, tokio::task::JoinHandle<()>) {
        use axum::serve::ListenerExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
            let (status, answer) = self.answer(&body);
            async move {
                let status = axum::http::StatusCode::from_u16(status).unwrap();
                let content_type = [(axum::http::header::CONTENT_TYPE, "application/json")];
                (status, content_type, answer.to_string())
            }
        });
        let serving = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{address}"), serving)
    }

    /// One choice in the API's shape, with its reasoning in the server's.
    fn choice(&self, idx: usize, content: String, calls: Option<Value>) -> Value {
        let reasoning = format!("Thinking it over: {}", content.trim().replace('\n', " "));
        let content = match self.behaviour {
            Behaviour::Reasoning(Shape::Think) => format!("<think>\n{reasoning}\n</think>\n\n{content}"),
            _ => content,
        };
        let mut choice = match self.api {
            Api::Completions => json!({"index": idx, "text": content, "finish_reason": "stop"}),
            Api::Chat => {
                json!({"index": idx, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"})
            }
            Api::Tools => json!({"index": idx, "message": {"role": "assistant", "content": content,
                "tool_calls": calls.unwrap_or(json!([]))}, "finish_reason": "tool_calls"}),
            Api::Anthropic | Api::AnthropicTools => unreachable!("answered by `anthropic::message`"),
            Api::Responses | Api::ResponsesTools => unreachable!("a Responses reply has no choices"),
        };
        if let Behaviour::Reasoning(Shape::Field(field)) = self.behaviour {
            match self.api {
                Api::Completions => choice[field] = json!(reasoning),
                _ => choice["message"][field] = json!(reasoning),
            }
        }
        choice
    }
}

// ---------------------------------------------------------------- the Responses API

/// What is wrong with a request to `/responses`, against OpenAI's documented schema: no `stop`,
/// `n`, `messages` or `max_tokens`; `store: false` and the reasoning's encrypted content asked
/// for; the text protocol's `instructions` and `input` text; the function-calling protocol's
/// function tools and input items, every earlier turn's reasoning item back unchanged before its
/// call, each call answered by a `function_call_output`.
fn responses_request(api: Api, body: &Value) -> Result<(), String> {
    if !matches!(api, Api::Responses | Api::ResponsesTools) {
        return Ok(());
    }
    for absent in [
        "stop",
        "n",
        "messages",
        "prompt",
        "max_tokens",
        "max_completion_tokens",
    ] {
        if body.get(absent).is_some() {
            return Err(format!("`{absent}` is no field of the Responses API"));
        }
    }
    if body["store"] != json!(false) || body["include"] != json!(["reasoning.encrypted_content"]) {
        return Err(format!("store {} include {}", body["store"], body["include"]));
    }
    if !body["max_output_tokens"].is_u64() {
        return Err("no `max_output_tokens`".to_owned());
    }
    if api == Api::Responses {
        return match (body["instructions"].as_str(), body["input"].as_str()) {
            (Some(_), Some(_)) => Ok(()),
            _ => Err("a text request is `instructions` and an `input` text".to_owned()),
        };
    }
    let tools = body["tools"].as_array().ok_or("no `tools`")?;
    if tools.iter().any(|tool| {
        tool["type"] != "function" || !tool["name"].is_string() || !tool["parameters"].is_object()
    }) || body["tool_choice"] != "auto"
    {
        return Err(format!("not function tools: {}", body["tools"]));
    }
    let input = body["input"].as_array().ok_or("`input` is no list of items")?;
    if input[0]["role"] != "system" || input[1]["role"] != "user" {
        return Err("the input does not open with the system and user messages".to_owned());
    }
    let (_, script) = script_of(&body["input"].to_string());
    let mut turn = 0;
    for (idx, item) in input.iter().enumerate().skip(2) {
        match item["type"].as_str() {
            Some("reasoning") => {
                turn += 1;
                if *item != reasoning_item(script, turn) {
                    return Err(format!("turn {turn}'s reasoning item came back changed: {item}"));
                }
            }
            Some("message") if item["role"] == "assistant" => {}
            Some("function_call") => {
                let answered = &input[idx + 1..]
                    .iter()
                    .find(|later| later["type"] == "function_call_output");
                if answered.is_none_or(|output| output["call_id"] != item["call_id"]) {
                    return Err(format!("call {} has no output after it", item["call_id"]));
                }
            }
            Some("function_call_output") => {}
            _ => return Err(format!("input item {idx} is unknown: {item}")),
        }
    }
    let outputs = input
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .count();
    if turn != outputs {
        return Err(format!("{turn} reasoning items for {outputs} earlier turns"));
    }
    Ok(())
}

/// The reasoning item of turn `turn` of `script`'s conversation: opaque encrypted content that
/// must come back unchanged.
fn reasoning_item(script: &Script, turn: usize) -> Value {
    json!({"id": format!("rs_{}_{turn}", script.id), "type": "reasoning",
           "encrypted_content": format!("gAAAAB{}x{turn}/+=", script.id),
           "summary": [{"type": "summary_text", "text": format!("Turn {turn} of {}.", script.id)}]})
}

/// A Responses function-calling turn: the step's thought, and its action as a call.
fn responses_tools_reply(body: &Value) -> (String, Option<Value>) {
    let (_, script) = script_of(&body["input"].to_string());
    let number = 1 + body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .count();
    let step = &script.steps[(number - 1).min(script.steps.len() - 1)];
    let mut call = as_call(step.action);
    call["call_id"] = json!(format!("call_{}_{number}", script.id));
    (step.thought.to_owned(), Some(call))
}

impl Server {
    /// A response of the Responses API: per reply (one: the API has no `n`) its reasoning (a
    /// reasoning item, or a `<think>` block in the text), a message and its call.
    fn response(&self, body: &Value, texts: Vec<(String, Option<Value>)>) -> Value {
        let mut output = Vec::new();
        for (content, call) in texts {
            let thinking = format!("Thinking it over: {}", content.trim().replace('\n', " "));
            let content = match self.behaviour {
                Behaviour::Reasoning(Shape::Think) => format!("<think>\n{thinking}\n</think>\n\n{content}"),
                _ => content,
            };
            if self.api == Api::ResponsesTools {
                let (_, script) = script_of(&body["input"].to_string());
                let turn = 1 + body["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|item| item["type"] == "reasoning")
                    .count();
                output.push(reasoning_item(script, turn));
            } else if let Behaviour::Reasoning(Shape::Field(_)) = self.behaviour {
                output.push(json!({"id": "rs_1", "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": thinking}]}));
            }
            output.push(
                json!({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": content, "annotations": []}]}),
            );
            if let Some(call) = call {
                output.push(
                    json!({"id": "fc_1", "type": "function_call", "status": "completed",
                    "call_id": call["call_id"], "name": call["name"], "arguments": call["arguments"]}),
                );
            }
        }
        json!({"id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
               "model": "m", "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
               "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                         "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 4},
                         "total_tokens": 110}})
    }
}

/// The replies to a text prompt (`n` of them for CoT's samples, from place `taken` of the
/// question's stream), and how many samples they took.
fn text_replies(prompt: &str, n: usize, taken: usize) -> (Vec<(String, Option<Value>)>, usize) {
    let (_, script) = script_of(after_question(prompt));
    let tail = after_question(prompt);
    let one = |text: String| (vec![(text, None)], 0);
    if prompt.ends_with("Reflection:") {
        return one(
            " I stopped before finding the answer. Next time I will search for it directly.".to_owned(),
        );
    }
    if prompt.ends_with("\nAnswer:") {
        return one(format!(" {}", script.standard));
    }
    if prompt.ends_with("\nThought:") {
        let texts = (taken..taken + n)
            .map(|place| {
                // The place in the text: a sample served twice, or out of its place, shows.
                let text = match script.samples[place % SAMPLES] {
                    Some(answer) => format!(" Sample {place}: let's think about {answer}.\nAnswer: {answer}"),
                    None => format!(" Sample {place}: I cannot tell."),
                };
                (text, None)
            })
            .collect();
        return (texts, n);
    }
    let steps = if prompt.contains("Reflections:\n- ") {
        script.reflected
    } else {
        script.steps
    };
    let number = tail.matches("\nObservation ").count() + 1;
    let step = &steps[(number - 1).min(steps.len() - 1)];
    if prompt
        .trim_end()
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == ':')
        .ends_with("Action ")
    {
        // An Act step, or ReAct's fallback call: the action alone.
        return one(format!(" {}", step.action));
    }
    if step.fallback {
        return one(format!(" {}", step.thought));
    }
    one(format!(" {}\nAction {number}: {}", step.thought, step.action))
}

/// A tool-calling turn: the step's thought, and its action as a call.
fn tools_reply(body: &Value) -> (String, Option<Value>) {
    let (_, script) = script_of(&body["messages"].to_string());
    let messages = body["messages"].as_array().unwrap();
    let number = 1 + messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .count();
    let step = &script.steps[(number - 1).min(script.steps.len() - 1)];
    let call = json!([{"id": format!("call_{}_{number}", script.id), "type": "function", "function": as_call(step.action)}]);
    (step.thought.to_owned(), Some(call))
}

/// Anthropic's Messages API as the scripted server speaks it (`--api anthropic` and
/// `anthropic-tools`): requests checked, replies in the documented shape.
mod anthropic {
    use super::{Answer, Behaviour, Shape, as_call, script_of};
    use serde_json::{Value, json};

    /// An error in Anthropic's shape.
    pub fn error(status: u16, kind: &str, message: &str) -> Answer {
        (
            status,
            json!({"type": "error", "error": {"type": kind, "message": message}}),
        )
    }

    /// The prompt of a text request: its one user message's text blocks, joined.
    pub fn user_text(body: &Value) -> String {
        body["messages"][0]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|block| block["text"].as_str().unwrap())
            .collect()
    }

    /// The signature the server puts on its thinking: a function of the text, so an altered
    /// block shows.
    fn signature(thinking: &str) -> String {
        format!(
            "sig-{}-{}",
            thinking.len(),
            thinking.bytes().map(u64::from).sum::<u64>()
        )
    }

    /// What the API refuses: no `max_tokens`, fields of the other API, and (thinking on) an
    /// earlier assistant turn without its thinking block first or with its block altered.
    pub fn check_body(body: &Value, behaviour: Behaviour) -> Result<(), String> {
        if !body["max_tokens"].is_u64() {
            return Err("max_tokens: Field required".to_owned());
        }
        for field in ["n", "stop", "tool_choice", "max_completion_tokens"] {
            if body.get(field).is_some() {
                return Err(format!("{field}: Extra inputs are not permitted"));
            }
        }
        let thinks = behaviour == Behaviour::Reasoning(Shape::Field("reasoning"));
        for (idx, message) in body["messages"].as_array().unwrap().iter().enumerate() {
            if message["role"] != "assistant" || !thinks {
                continue;
            }
            let first = &message["content"][0];
            let thinking = first["thinking"].as_str().unwrap_or("");
            if first["type"] != "thinking" || first["signature"] != signature(thinking) {
                return Err(format!(
                    "messages.{idx}.content.0: expected a `thinking` block with its signature as sent"
                ));
            }
        }
        Ok(())
    }

    /// A tool-use turn: the step's thought as text, its action as a `tool_use` block.
    pub fn tools_reply(body: &Value) -> (String, Option<Value>) {
        let (_, script) = script_of(&body["messages"].to_string());
        let results = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
            .filter(|block| block["type"] == "tool_result")
            .count();
        let number = results + 1;
        let step = &script.steps[(number - 1).min(script.steps.len() - 1)];
        let call = as_call(step.action);
        let input: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
        let id = format!("toolu_{}_{number}", script.id);
        let block = json!({"type": "tool_use", "id": id, "name": call["name"], "input": input});
        (step.thought.to_owned(), Some(block))
    }

    /// A reply in the documented shape: a `thinking` block first when the server thinks in
    /// blocks, the text (a `<think>` block in it when it thinks in text), then the call.
    pub fn message(behaviour: Behaviour, content: String, call: Option<Value>) -> Value {
        let reasoning = format!("Thinking it over: {}", content.trim().replace('\n', " "));
        let mut blocks = Vec::new();
        let text = match behaviour {
            Behaviour::Reasoning(Shape::Think) => format!("<think>\n{reasoning}\n</think>\n\n{content}"),
            Behaviour::Reasoning(Shape::Field(_)) => {
                blocks.push(
                    json!({"type": "thinking", "thinking": reasoning, "signature": signature(&reasoning)}),
                );
                content
            }
            _ => content,
        };
        if !text.is_empty() {
            blocks.push(json!({"type": "text", "text": text}));
        }
        let stop_reason = if call.is_some() { "tool_use" } else { "end_turn" };
        blocks.extend(call);
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": blocks,
            "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": 20, "cache_read_input_tokens": 80, "cache_creation_input_tokens": 0,
                      "output_tokens": 10}})
    }
}

// ---------------------------------------------------------------- the client side

/// The client as the evaluation gets it: a question's requests with the same prompt one after
/// another, in the order made; with `hold`, those of the held questions never answered.
struct InTurn {
    llm: OpenAiClient,
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    hold: bool,
}

impl InTurn {
    fn turn(&self, prompt: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut turns = self.turns.lock().unwrap();
        Arc::clone(turns.entry(prompt.to_owned()).or_default())
    }

    async fn held(&self, text: &str) {
        if self.hold && HELD.contains(&script_of(text).0) {
            std::future::pending::<()>().await;
        }
    }
}

impl Llm for InTurn {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            self.held(after_question(request.prompt)).await;
            self.llm.complete(request).await
        })
    }

    fn converse<'a>(&'a self, request: ConverseRequest<'a>) -> BoxFuture<'a, Result<Reply, LlmError>> {
        Box::pin(async move {
            self.held(&format!("{:?}", request.messages)).await;
            self.llm.converse(request).await
        })
    }

    fn sample<'a>(&'a self, request: SampleRequest<'a>) -> BoxFuture<'a, Result<Samples, LlmError>> {
        Box::pin(async move {
            self.held(after_question(request.prompt)).await;
            let turn = self.turn(request.prompt);
            let _in_turn = turn.lock().await;
            self.llm.sample(request).await
        })
    }

    fn model(&self) -> &str {
        self.llm.model()
    }

    fn api(&self) -> Option<Api> {
        self.llm.api()
    }

    fn generation(&self) -> Option<react_docstore::llm::Generation> {
        self.llm.generation()
    }
}

/// Pages that name what was searched.
struct Pages;

struct Page;

impl DocstoreSource for Pages {
    fn open(&self, _: &[ContextParagraph]) -> Box<dyn Docstore> {
        Box::new(Page)
    }
}

impl Docstore for Page {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(async move {
            Ok(format!(
                "{entity} is the subject of this page. It dates from 1844."
            ))
        })
    }

    fn lookup(&mut self, keyword: &str) -> String {
        format!("(Result 1 / 1) The {keyword} of the office served two years.")
    }
}

// ---------------------------------------------------------------- one case

/// One method on one API against one server behaviour.
#[derive(Clone, Copy)]
struct Case {
    row: &'static MethodRow,
    api: Api,
    behaviour: Behaviour,
    behaviour_name: &'static str,
    /// Its place in the run: even cases are killed as a crash is, odd ones interrupted.
    number: usize,
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} / {}", self.row.name, self.api, self.behaviour_name)
    }
}

impl Case {
    fn votes(&self) -> bool {
        self.row.method.samples()
    }
}

/// How one evaluation of a case is run.
#[derive(Clone, Default)]
struct Way {
    sc_stop: Option<ScStop>,
    shard: Option<Shard>,
    cache: Option<PathBuf>,
    hold: bool,
}

/// A case's server, its directory and question file.
struct Bench {
    case: Case,
    dir: tempfile::TempDir,
    questions: PathBuf,
    /// The server's base URL, and its task (ended with the bench).
    server: String,
    serving: tokio::task::JoinHandle<()>,
    state: Arc<Mutex<ServerState>>,
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// What a case found: the variants it ran, runs compared, `beta`'s allowed differences, and
/// every difference that is not allowed.
#[derive(Default)]
struct Found {
    ran: Vec<char>,
    evaluations: usize,
    compared: usize,
    requests: usize,
    beta_other_answers: usize,
    beta_other_backoffs: usize,
    differences: Vec<String>,
}

const EXACT: ScStop = ScStop {
    rule: StopRule::Exact,
    batch: SC_BATCH,
    confidence: 0.95,
};

impl Bench {
    async fn new(case: Case) -> Bench {
        // In memory where there is a tmpfs: every cache entry and results line is synced to disk,
        // which is what a disk makes slow, and not what is tested here.
        let shm = Path::new("/dev/shm");
        let dir = match shm.is_dir() {
            true => tempfile::tempdir_in(shm),
            false => tempfile::tempdir(),
        }
        .unwrap();
        let questions = dir.path().join("questions.json");
        let records: Vec<Value> = SCRIPTS
            .iter()
            .map(|script| json!({"_id": script.id, "question": script.question, "answer": script.gold, "type": "bridge"}))
            .collect();
        std::fs::write(&questions, serde_json::to_string(&records).unwrap()).unwrap();
        let state = Arc::default();
        let (server, serving) = Server {
            api: case.api,
            behaviour: case.behaviour,
            state: Arc::clone(&state),
        }
        .start()
        .await;
        Bench {
            case,
            dir,
            questions,
            server,
            serving,
            state,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The reference's stopping rule: `exact` for the methods that vote.
    fn reference(&self) -> Way {
        Way {
            sc_stop: self.case.votes().then_some(EXACT),
            ..Way::default()
        }
    }

    fn config(&self, way: &Way, results: &Path) -> EvalConfig {
        let method = self.case.row.method;
        EvalConfig {
            questions: self.questions.clone(),
            selection: Selection {
                shard: way.shard,
                ..Selection::default()
            },
            contexts: Contexts::Unused,
            agent: AgentSetup {
                method,
                max_steps: method.acts().then_some(MAX_STEPS),
                samples: method.samples().then_some(SAMPLES),
                sc_stop: way.sc_stop,
                ..AgentSetup::default()
            },
            fewshot: Vec::new(),
            attempts: self.case.row.attempts,
            fewshot_from: None,
            concurrency: 4,
            results: results.to_owned(),
            resume: Resume::SkipDone,
            progress: Progress::Hidden,
            log: crate::Captured::default().log(),
        }
    }

    /// A new process's client: nothing learned of the server, the cache opened afresh.
    fn services(&self, way: &Way) -> EvalServices {
        let mut config = OpenAiConfig::new("m");
        config.base_url = format!("{}/v1", self.server);
        config.api = self.case.api;
        config.retry = RetryPolicy {
            max_retries: 4,
            min_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
            max_retry_after: Duration::from_secs(1),
        };
        let mut llm = OpenAiClient::new(config).unwrap();
        if let Some(dir) = &way.cache {
            llm = llm.with_cache(ReplyCache::open(dir, Hosts::Separate, DEFAULT_MAX_RESPONSE_BYTES).unwrap());
        }
        EvalServices {
            llm: Arc::new(InTurn {
                llm,
                turns: Mutex::default(),
                hold: way.hold,
            }),
            docstore: Arc::new(Pages),
            toolbox: Default::default(),
        }
    }

    /// Runs one evaluation to its end (the server as if started again): the server's counts.
    async fn evaluate(&self, way: &Way, results: &Path, found: &mut Found) -> (usize, usize) {
        *self.state.lock().unwrap() = ServerState::default();
        let mut summary;
        let mut attempts = 0;
        loop {
            summary = eval::evaluate(
                &self.config(way, results),
                &self.services(way),
                std::future::pending(),
            )
            .await;
            attempts += 1;
            if !matches!(summary, Err(EvalError::Results(ResultsError::Locked { .. }))) || attempts == 100 {
                break;
            }
            // The evaluation before this one on the same file is over, but a process another test
            // started at that moment may have been handed a copy of its descriptor, and so of its
            // lock, until it execs: wait for that lock to go, then open the file again.
            let file = std::fs::File::open(results).unwrap();
            file.lock().unwrap();
            file.unlock().unwrap();
        }
        if let Err(error) = summary {
            panic!("{}: {:#}", self.case, anyhow::Error::from(error));
        }
        found.evaluations += 1;
        let state = self.state.lock().unwrap();
        let case = self.case;
        found.differences.extend(
            state
                .violations
                .iter()
                .map(|violation| format!("{case}: request: {violation}")),
        );
        found.requests += state.received;
        (state.received, state.answered)
    }
}

/// The runs of a results file (or of `replay --json`'s lines) by question id and attempt.
fn runs_of(text: &str) -> BTreeMap<(String, String), Value> {
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|run| run.get("question").is_some())
        .map(|run| {
            let attempt = format!("trial {} epoch {}", run["trial"], run["epoch"]);
            ((run["id"].as_str().unwrap_or_default().to_owned(), attempt), run)
        })
        .collect()
}

fn read_runs(path: &Path) -> BTreeMap<(String, String), Value> {
    runs_of(&std::fs::read_to_string(path).unwrap())
}

/// A results line less what says how it was made rather than what it found: the cache's use,
/// the shard it came from, the split of the selection into shards, and `usage.requests`, the HTTP
/// requests sent (a reply from the cache is a call and no request; a transient error is a request
/// and no call), where `usage.llm_calls`, what the run asked, stays compared.
fn findings(run: &Value) -> Value {
    let mut run = run.clone();
    let fields = run.as_object_mut().unwrap();
    fields.remove("cache");
    fields.remove("shard");
    if let Some(usage) = fields.get_mut("usage").and_then(Value::as_object_mut) {
        usage.remove("requests");
    }
    if let Some(selection) = fields
        .get_mut("evaluation")
        .and_then(|evaluation| evaluation.get_mut("selection"))
        .and_then(Value::as_object_mut)
    {
        selection.remove("shards");
    }
    run
}

/// [`findings`] of a run made with `--cache` or without: the format too, which is `run.v2`
/// wherever a `cache` field is.
fn findings_either_way(run: &Value) -> Value {
    let mut run = findings(run);
    run.as_object_mut().unwrap().remove("format");
    run
}

/// What a replay makes again of a run: its answer, how it stopped, its steps, samples, vote and
/// backoff, Reflexion's memory, its score and its calls (the tokens are the server's, which a
/// recording does not keep per call).
const REPLAYED: [&str; 15] = [
    "answer",
    "stopped",
    "steps",
    "samples",
    "vote",
    "sc_stop",
    "backoff",
    "answered_by",
    "reflection",
    "reflections",
    "last_trial",
    "reflection_reasoning",
    "em",
    "f1",
    "error",
];

/// Compares two evaluations run by run, noting each difference; `what` names the variant.
fn compare(
    found: &mut Found,
    case: Case,
    what: &str,
    expected: &BTreeMap<(String, String), Value>,
    got: &BTreeMap<(String, String), Value>,
    view: impl Fn(&Value) -> Value,
) {
    if expected.keys().ne(got.keys()) {
        found.differences.push(format!(
            "{case}: {what}: runs {:?}, expected {:?}",
            got.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>()
        ));
        return;
    }
    for (key, run) in expected {
        found.compared += 1;
        let (expected, got) = (view(run), view(&got[key]));
        if expected != got {
            found
                .differences
                .push(format!("{case}: {what}: {key:?}: {}", differing(&expected, &got)));
        }
    }
}

/// The top-level fields two views differ in, each with both values (shortened).
fn differing(expected: &Value, got: &Value) -> String {
    let short = |value: Option<&Value>| {
        let text = value.map_or("(none)".to_owned(), Value::to_string);
        match text.char_indices().nth(400) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    };
    let (Some(expected), Some(got)) = (expected.as_object(), got.as_object()) else {
        return format!("expected {}, got {}", short(Some(expected)), short(Some(got)));
    };
    let names: std::collections::BTreeSet<&String> = expected.keys().chain(got.keys()).collect();
    names
        .into_iter()
        .filter(|name| expected.get(*name) != got.get(*name))
        .map(|name| {
            format!(
                "\n  {name}: expected {}\n  {:width$}       got {}",
                short(expected.get(name)),
                "",
                short(got.get(name)),
                width = name.len()
            )
        })
        .collect()
}

/// The fields of `run` named.
fn fields(run: &Value, names: &[&str]) -> Value {
    Value::Object(
        names
            .iter()
            .filter_map(|name| Some(((*name).to_owned(), run.get(*name)?.clone())))
            .collect(),
    )
}

/// Each sample's completion, answer and reasoning: what a sample is, whichever request it came in.
fn samples_of(run: &Value) -> Vec<Value> {
    run["samples"]
        .as_array()
        .map(|samples| {
            samples
                .iter()
                .map(|sample| fields(sample, &["completion", "answer", "reasoning"]))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the results file at `path` holds `n` lines (failing after a minute: a hang).
async fn results_reach(path: &Path, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let lines = std::fs::read_to_string(path)
            .map(|text| text.lines().count())
            .unwrap_or(0);
        if lines >= n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} never reached {n} lines",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Runs a case's reference, then each of its variants against it.
async fn run_case(case: Case) -> Found {
    let bench = Bench::new(case).await;
    let mut found = Found::default();
    let reference = bench.path("reference.jsonl");
    let (_, answered) = bench.evaluate(&bench.reference(), &reference, &mut found).await;
    let expected = read_runs(&reference);
    for &(variant, letter, votes_only) in VARIANTS {
        if votes_only && !case.votes() {
            continue;
        }
        run_variant(&bench, variant, &expected, answered, &mut found).await;
        found.ran.push(letter);
    }
    found
}

/// Runs `variant` of a case and compares it with the reference (`expected`, whose server
/// answered `answered` requests).
async fn run_variant(
    bench: &Bench,
    variant: Variant,
    expected: &BTreeMap<(String, String), Value>,
    answered: usize,
    found: &mut Found,
) {
    let case = bench.case;
    let reference = bench.reference();
    match variant {
        Variant::CacheCold | Variant::CacheWarm => {
            let run = Way {
                cache: Some(bench.path("cache")),
                ..reference
            };
            let (what, path) = match variant {
                Variant::CacheCold => ("--cache, cold", bench.path("cold.jsonl")),
                _ => ("--cache, warm", bench.path("warm.jsonl")),
            };
            let (received, answered_now) = bench.evaluate(&run, &path, found).await;
            let got = read_runs(&path);
            compare(found, case, what, expected, &got, findings_either_way);
            let (wanted_answered, all_hits) = match variant {
                Variant::CacheCold => (answered, false),
                _ => (0, true),
            };
            if answered_now != wanted_answered || (all_hits && received > 0) {
                found.differences.push(format!(
                    "{case}: {what}: the server got {received} requests and answered {answered_now}, expected {wanted_answered} answered"
                ));
            }
            for (key, run) in &got {
                let calls = run["cache"]["calls"].as_u64().unwrap_or(0);
                let hits = run["cache"]["hits"].as_array().map_or(0, Vec::len) as u64;
                if calls == 0 || hits != if all_hits { calls } else { 0 } {
                    found
                        .differences
                        .push(format!("{case}: {what}: {key:?} records {}", run["cache"]));
                }
            }
        }
        Variant::Resumed => resume(bench, expected, found).await,
        Variant::ErredAndResumed => {
            let path = bench.path("erred.jsonl");
            *bench.state.lock().unwrap() = ServerState {
                down: true,
                ..ServerState::default()
            };
            let summary = eval::evaluate(
                &bench.config(&reference, &path),
                &bench.services(&reference),
                std::future::pending(),
            )
            .await;
            found.evaluations += 1;
            let erred = read_runs(&path);
            let failed = erred
                .values()
                .filter(|run| run["error_kind"] == "transient")
                .count();
            if summary.is_err() || failed == 0 {
                found.differences.push(format!(
                    "{case}: failing questions: {failed} runs recorded as transient errors ({:?})",
                    summary.map(|summary| summary.done)
                ));
            }
            bench.evaluate(&reference, &path, found).await;
            compare(
                found,
                case,
                "failed and asked again",
                expected,
                &read_runs(&path),
                findings,
            );
        }
        Variant::Sharded => {
            let mut paths = Vec::new();
            for index in 0..2 {
                let path = bench.path(&format!("shard-{index}.jsonl"));
                let run = Way {
                    shard: Shard::new(index, 2),
                    ..reference.clone()
                };
                bench.evaluate(&run, &path, found).await;
                paths.push(path);
            }
            let merged = bench.path("merged.jsonl");
            let evaluation = react_docstore::record::evaluation::read_evaluation(&paths).unwrap();
            react_docstore::record::merge::write_results(&evaluation, &merged).unwrap();
            compare(
                found,
                case,
                "2 shards merged",
                expected,
                &read_runs(&merged),
                findings,
            );
        }
        Variant::Replayed => replayed(bench, expected, found).await,
        Variant::ExactVsAllN => {
            let path = bench.path("all-n.jsonl");
            bench.evaluate(&Way::default(), &path, found).await;
            let all_n = read_runs(&path);
            let decided = |run: &Value| {
                let mut view = fields(run, &["answer", "stopped", "backoff", "answered_by", "steps"]);
                view["vote"] = run["vote"]["answer"].clone();
                view
            };
            compare(
                found,
                case,
                "--sc-stop exact against all N",
                &all_n,
                expected,
                decided,
            );
            check_prefixes(found, case, "exact", &all_n, expected);
        }
        Variant::BetaVsAllN => beta(bench, found).await,
    }
}

/// Every run's samples are the first of all N's.
fn check_prefixes(
    found: &mut Found,
    case: Case,
    rule: &str,
    all_n: &BTreeMap<(String, String), Value>,
    stopped: &BTreeMap<(String, String), Value>,
) {
    for (key, run) in stopped {
        let (asked, all) = (samples_of(run), samples_of(&all_n[key]));
        if !all.starts_with(&asked) {
            found.differences.push(format!(
                "{case}: --sc-stop {rule}: {key:?}'s samples are not the first of all N's:\n  {asked:?}\n  {all:?}"
            ));
        }
    }
}

/// Killed (even cases: the evaluation's future dropped, as a crash) or interrupted (odd cases:
/// as Ctrl-C) once the questions not held are written, then run again.
async fn resume(bench: &Bench, expected: &BTreeMap<(String, String), Value>, found: &mut Found) {
    let case = bench.case;
    let path = bench.path("resumed.jsonl");
    let first_round = match case.row.attempts {
        Attempts::Epochs(epochs) => epochs as usize,
        _ => 1,
    };
    let written = (SCRIPTS.len() - HELD.len()) * first_round;
    let held = Way {
        hold: true,
        ..bench.reference()
    };
    *bench.state.lock().unwrap() = ServerState::default();
    let (config, services) = (bench.config(&held, &path), bench.services(&held));
    let what = if case.number.is_multiple_of(2) {
        tokio::select! {
            result = eval::evaluate(&config, &services, std::future::pending()) => {
                panic!("{case}: the held evaluation ended: {:?}", result.map(|summary| summary.done));
            }
            () = results_reach(&path, written) => "killed and resumed",
        }
    } else {
        let summary = eval::evaluate(&config, &services, results_reach(&path, written)).await;
        assert!(
            summary.as_ref().is_ok_and(|summary| summary.interrupted),
            "{case}: {:?}",
            summary.map(|summary| summary.done)
        );
        "interrupted and resumed"
    };
    found.evaluations += 1;
    bench.evaluate(&bench.reference(), &path, found).await;
    compare(found, case, what, expected, &read_runs(&path), findings);
}

/// `replay` of the reference's results file, with no model and no docstore.
async fn replayed(bench: &Bench, expected: &BTreeMap<(String, String), Value>, found: &mut Found) {
    use react_docstore::agent::trace::TracePrinter;
    use react_docstore::apps::replay::{Output, ReplayConfig, replay};
    let config = ReplayConfig {
        paths: vec![bench.path("reference.jsonl")],
        output: Output::Json,
        profile: None,
        max_steps: None,
        docstore: None,
        prices: None,
    };
    let mut stdout = Vec::new();
    let summary = replay(&config, &|_, _| None, &mut stdout, &mut TracePrinter::silent())
        .await
        .unwrap();
    let case = bench.case;
    if (summary.n_changed, summary.n_errors) != (0, 0) {
        found.differences.push(format!(
            "{case}: replay: {} changed, {} errors",
            summary.n_changed, summary.n_errors
        ));
    }
    let view = |run: &Value| {
        let mut view = fields(run, &REPLAYED);
        view["llm_calls"] = run["usage"]["llm_calls"].clone();
        view
    };
    let replayed = runs_of(&String::from_utf8(stdout).unwrap());
    compare(found, case, "replay", expected, &replayed, view);
}

/// `--sc-stop beta` against all N: its samples the first of all N's, its vote theirs, and
/// `cot-sc-then-react`'s verdict judged over the samples it asked. Its answer and its backoff
/// may differ from all N's: counted, not a difference.
async fn beta(bench: &Bench, found: &mut Found) {
    let case = bench.case;
    let path = bench.path("beta.jsonl");
    let run = Way {
        sc_stop: Some(ScStop {
            rule: StopRule::Beta,
            batch: SC_BATCH,
            confidence: 0.95,
        }),
        ..Way::default()
    };
    bench.evaluate(&run, &path, found).await;
    let (beta, all_n) = (read_runs(&path), read_runs(&bench.path("all-n.jsonl")));
    check_prefixes(found, case, "beta", &all_n, &beta);
    for (key, run) in &beta {
        found.compared += 1;
        let all = &all_n[key];
        found.beta_other_answers += usize::from(run["answer"] != all["answer"]);
        found.beta_other_backoffs += usize::from(run["backoff"] != all["backoff"]);
        let vote = &run["vote"];
        let weak = vote["answer"].is_null()
            || 2 * vote["votes"].as_u64().unwrap() < vote["samples"].as_u64().unwrap();
        if case.row.method == Method::CotScThenReact && weak != run["backoff"].is_object() {
            found.differences.push(format!(
                "{case}: --sc-stop beta: {key:?} backs off {} on {vote}",
                run["backoff"]
            ));
        }
    }
}

/// Each combination the library refuses is refused before any request: its message.
async fn refused(row: &'static MethodRow, api: Api) -> String {
    let case = Case {
        row,
        api,
        behaviour: Behaviour::HonoursN,
        behaviour_name: "honours-n",
        number: 0,
    };
    let bench = Bench::new(case).await;
    let run = bench.reference();
    let path = bench.path("refused.jsonl");
    let error = eval::evaluate(
        &bench.config(&run, &path),
        &bench.services(&run),
        std::future::pending(),
    )
    .await
    .err()
    .unwrap_or_else(|| panic!("{case}: the library took it"));
    assert!(
        matches!(error, EvalError::Setup(_) | EvalError::ReflectTools { .. }),
        "{case}: {error}"
    );
    assert_eq!(bench.state.lock().unwrap().received, 0, "{case}");
    format!("{} / {api}: {error}", row.name)
}

/// The report of the cases run, printed whatever the test harness captures.
fn report(found: &[(Case, Found)], refusals: &[String], seconds: f64) -> String {
    let mut text = String::new();
    let mut line = |line: String| {
        text.push_str(&line);
        text.push('\n');
    };
    line(format!(
        "transparency: {} methods x {} APIs x {} server behaviours; each cell lists the variants run against the reference",
        METHODS.len(),
        APIS.len(),
        BEHAVIOURS.len()
    ));
    line("  c --cache cold, w --cache warm, r killed (even cases) or interrupted (odd) and resumed, f 2 questions failing past retries then asked again,".to_owned());
    line("  s --shard 0/2 + 1/2 merged, p replay,".to_owned());
    line("  e --sc-stop exact = all N (answer, vote, backoff verdict; its samples the first of all N's), b --sc-stop beta within its allowed difference".to_owned());
    let mut header = format!("{:<38} {:<12}", "method", "api");
    for (name, _) in BEHAVIOURS {
        header.push_str(&format!(" {name:<width$}", width = name.len().max(8)));
    }
    line("  (only CoT-SC sends `n`, and `--api tools` sends no `stop`: elsewhere a server refusing them meets no request carrying them;".to_owned());
    line("  the Responses APIs send no `n`, `stop` or `max_tokens` at all)".to_owned());
    line(header.trim_end().to_owned());
    for row in METHODS {
        for &api in APIS {
            let mut cells = format!("{:<38} {:<12}", row.name, api.as_str());
            for &(name, behaviour) in BEHAVIOURS {
                let cell = found
                    .iter()
                    .find(|(case, _)| {
                        std::ptr::eq(case.row, row) && case.api == api && case.behaviour == behaviour
                    })
                    .map_or(
                        if refuses(row, api) { "refused" } else { "-" }.to_owned(),
                        |(_, found)| found.ran.iter().collect(),
                    );
                cells.push_str(&format!(" {cell:<width$}", width = name.len().max(8)));
            }
            line(cells.trim_end().to_owned());
        }
    }
    line("not run, refused by the library before any request (checked):".to_owned());
    for refusal in refusals {
        line(format!("  {refusal}"));
    }
    let sum = |part: fn(&Found) -> usize| found.iter().map(|(_, found)| part(found)).sum::<usize>();
    line(format!(
        "{} cases, {} evaluations, {} runs compared, {} requests served; --sc-stop beta: {} answers and {} backoffs other than all N's (allowed); {} differences; {seconds:.1} s",
        found.len(),
        sum(|found| found.evaluations),
        sum(|found| found.compared),
        sum(|found| found.requests),
        sum(|found| found.beta_other_answers),
        sum(|found| found.beta_other_backoffs),
        sum(|found| found.differences.len()),
    ));
    text
}

/// What a panic said.
fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|text| (*text).to_owned()))
        .unwrap_or_default()
}

/// Cases run at once, each on a thread of its own: the model client's work shares the cores, the
/// scripted servers answer on theirs.
const WORKERS: usize = 4;

/// Every method × API × server behaviour, every variant against its reference.
#[test]
fn every_way_of_running_an_evaluation_finds_what_the_reference_found() {
    let started = std::time::Instant::now();
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let mut cases = std::collections::VecDeque::new();
    let mut refusals = Vec::new();
    for row in METHODS {
        for &api in APIS {
            if refuses(row, api) {
                refusals.push(runtime().block_on(refused(row, api)));
                continue;
            }
            for (behaviour_name, behaviour) in behaviours(api) {
                let number = cases.len();
                cases.push_back(Case {
                    row,
                    api,
                    behaviour,
                    behaviour_name,
                    number,
                });
            }
        }
    }
    let cases = Mutex::new(cases);
    let found = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                let runtime = runtime();
                loop {
                    let Some(case) = cases.lock().unwrap_or_else(PoisonError::into_inner).pop_front() else {
                        break;
                    };
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        runtime.block_on(run_case(case))
                    }))
                    .unwrap_or_else(|panic| Found {
                        differences: vec![format!("{case}: panicked: {}", panic_message(&panic))],
                        ..Found::default()
                    });
                    found
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((case, result));
                }
            });
        }
    });
    let found = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    let report = report(&found, &refusals, started.elapsed().as_secs_f64());
    // Straight to the process's stderr: shown by a plain `cargo test` too.
    let _ = std::io::stderr().lock().write_all(report.as_bytes());
    let differences: Vec<&String> = found.iter().flat_map(|(_, found)| &found.differences).collect();
    assert!(
        differences.is_empty(),
        "{} differences; by variant, the cases that differ:\n{}\nthe first ones:\n{}",
        differences.len(),
        grouped(&differences),
        differences
            .iter()
            .take(12)
            .map(|difference| difference.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The differences (`{method} / {api} / {behaviour}: {variant}: …`) counted by variant, with the
/// methods and behaviours they were met with.
fn grouped(differences: &[&String]) -> String {
    type Counts<'a> = BTreeMap<&'a str, usize>;
    let mut by_variant: BTreeMap<&str, (usize, Counts<'_>, Counts<'_>)> = BTreeMap::new();
    for difference in differences {
        let mut parts = difference.splitn(3, ": ");
        let (case, variant) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let mut case_parts = case.split(" / ");
        let (method, behaviour) = (case_parts.next().unwrap_or(""), case_parts.nth(1).unwrap_or(""));
        let group = by_variant.entry(variant).or_default();
        group.0 += 1;
        *group.1.entry(method).or_default() += 1;
        *group.2.entry(behaviour).or_default() += 1;
    }
    by_variant
        .into_iter()
        .map(|(variant, (count, methods, behaviours))| {
            format!("  {variant}: {count} (methods {methods:?}; behaviours {behaviours:?})\n")
        })
        .collect()
}
