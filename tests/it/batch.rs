//! `eval --batch` against a scripted server that speaks a vendor's synchronous API and its batch
//! API — OpenAI's completions and Batch API (files, batches, output and error files), or
//! Anthropic's Messages API and Message Batches (batches, results; the objects of
//! `fixtures/anthropic-batches/`): a batched evaluation finds what the synchronous one finds, one
//! batch a round; killed with SIGKILL once its batch is submitted and run again, it attaches to
//! that batch and submits no request twice.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use react_docstore::llm::batch::ledger_path;
use serde_json::{Value, json};

use crate::{binary, fixture};

const QUESTIONS: &str = "docstore/hotpotqa-distractor-100.json";
const N_QUESTIONS: usize = 20;

/// The questions the server knows (the file's), by their text: their place and gold answer.
fn questions() -> HashMap<String, (usize, String)> {
    let text = std::fs::read_to_string(fixture(QUESTIONS)).unwrap();
    let questions: Vec<Value> = serde_json::from_str(&text).unwrap();
    questions
        .iter()
        .enumerate()
        .map(|(idx, question)| {
            let text = question["question"].as_str().unwrap().to_owned();
            (text, (idx, question["answer"].as_str().unwrap().to_owned()))
        })
        .collect()
}

/// The model's completions of `prompt` (`n` of them), a function of the prompt alone: the same
/// answer whether asked synchronously or in a batch. Standard answers half the questions right;
/// CoT's samples vote for the gold, for another answer, or (every fifth question) scatter, so
/// `cot-sc-then-react` backs off; ReAct searches, then finishes.
fn completions(questions: &HashMap<String, (usize, String)>, prompt: &str, n: usize) -> Vec<String> {
    // The question asked: the known one met last in the prompt (after the few-shot examples).
    let (at, asked) = questions
        .keys()
        .filter_map(|question| prompt.rfind(question.as_str()).map(|at| (at, question)))
        .max()
        .unwrap_or_else(|| panic!("no known question in {prompt:?}"));
    let (idx, gold) = &questions[asked];
    let tail = &prompt[at..];
    let right = |yes: bool| if yes { gold.clone() } else { format!("not {gold}") };
    if prompt.ends_with("\nAnswer:") {
        return vec![format!(" {}", right(idx % 2 == 0))];
    }
    if prompt.ends_with("\nThought:") {
        return (0..n)
            .map(|sample| {
                let answer = match idx % 5 {
                    0 => format!("guess {sample}"),
                    _ if (sample + idx) % 3 == 0 => "something else".to_owned(),
                    _ => right(idx % 4 != 1),
                };
                format!(" Let me think ({sample}).\nAnswer: {answer}")
            })
            .collect();
    }
    let number = tail.matches("\nObservation ").count() + 1;
    let action = if number == 1 {
        let words: Vec<&str> = asked.split_whitespace().take(3).collect();
        format!("Search[{}]", words.join(" "))
    } else {
        format!("Finish[{}]", right(idx % 3 != 0))
    };
    vec![format!(
        " Step {number} of question {idx}.\nAction {number}: {action}"
    )]
}

/// The function-calling model's next call in the conversation `body` (Chat Completions' or
/// Anthropic's): its step, the function and its arguments. It searches the question's first
/// three words, then finishes as [`completions`]' ReAct does.
fn tool_call(questions: &HashMap<String, (usize, String)>, body: &Value) -> (usize, &'static str, Value) {
    let messages = body["messages"].as_array().unwrap();
    let user = messages.iter().find(|message| message["role"] == "user").unwrap();
    let text = user["content"]
        .as_str()
        .or_else(|| user["content"][0]["text"].as_str())
        .unwrap();
    let (asked, (idx, gold)) = questions
        .iter()
        .filter(|(question, _)| text.contains(question.as_str()))
        .max_by_key(|(question, _)| question.len())
        .unwrap_or_else(|| panic!("no known question in {text:.300}"));
    let answered = messages
        .iter()
        .filter(|message| message["role"] == "tool" || message["content"][0]["type"] == "tool_result")
        .count();
    let step = answered + 1;
    if step == 1 {
        let words: Vec<&str> = asked.split_whitespace().take(3).collect();
        (step, "search", json!({"entity": words.join(" ")}))
    } else {
        let answer = if idx % 3 != 0 {
            gold.clone()
        } else {
            format!("not {gold}")
        };
        (step, "finish", json!({"answer": answer}))
    }
}

/// Which vendor's batch API a test speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vendor {
    OpenAi,
    Anthropic,
}

impl Vendor {
    /// Its function-calling API, as `--api` names it.
    fn tools_api(self) -> &'static str {
        match self {
            Vendor::OpenAi => "tools",
            Vendor::Anthropic => "anthropic-tools",
        }
    }
}

/// Why a batch gave a request no reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lost {
    /// Failed inside the batch (asked again).
    Failed,
    Expired,
    Canceled,
}

/// A request's reply from a batch (by custom id): the body, or why there is none.
type Reply = Result<Value, Lost>;

/// The key the scripted server takes from Anthropic's clients, as `x-api-key`.
const ANTHROPIC_KEY: &str = "sk-ant-batch-test";

/// What the server saw of the batch APIs.
#[derive(Default)]
struct Seen {
    /// Uploaded files (OpenAI) and the requests of created message batches (Anthropic): their
    /// lines (custom id, body).
    files: HashMap<String, Vec<(String, Value)>>,
    /// Batches: input file, looks left before it ends, when it was created.
    batches: BTreeMap<String, (String, usize, String)>,
    /// Each ended batch's results: by custom id, the reply body, or none (failed inside it).
    ended: HashMap<String, Vec<(String, Reply)>>,
    /// Batches asked to cancel: each ends at its next look, its first half answered.
    cancelling: Vec<String>,
    /// Every request body a batch held, with how often.
    submitted: HashMap<String, usize>,
    /// Batches created while another was not yet ended and read.
    overlapping: usize,
    /// The batch whose results were not yet read, if any.
    open_batch: Option<String>,
    /// Bodies that already failed once inside a batch.
    failed: Vec<String>,
    synchronous: usize,
    /// Every request body sent synchronously, with how often (CoT-SC's samples through
    /// Anthropic's API, which has no `n`, are the same request asked again).
    synchronous_bodies: HashMap<String, usize>,
    /// Requests without Anthropic's headers.
    unauthenticated: usize,
}

/// The model behind a batch server: `n` completions of a prompt.
type Script = Arc<dyn Fn(&str, usize) -> Vec<String> + Send + Sync>;

#[derive(Clone)]
struct Server {
    vendor: Vendor,
    /// The evals ask through the vendor's function-calling API (`--api tools`,
    /// `anthropic-tools`).
    tools: bool,
    /// The questions, for a function-calling conversation ([`tool_call`]).
    questions: Arc<HashMap<String, (usize, String)>>,
    script: Script,
    seen: Arc<Mutex<Seen>>,
    /// Looks at a batch before it ends.
    looks: Arc<Mutex<usize>>,
    /// How many requests fail once inside a batch (a 500 in OpenAI's error file, an
    /// `overloaded_error` result in Anthropic's).
    failing: usize,
    /// Every batch expires without an answer.
    expiring: bool,
    /// The server's base URL, once it listens.
    base_url: Arc<Mutex<String>>,
}

/// `secs` since the Unix epoch as RFC 3339 UTC, to the microsecond as Anthropic's API gives it.
fn rfc3339(secs: u64, micros: u32) -> String {
    let (days, time) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (hours, minutes, seconds) = (time / 3600, time % 3600 / 60, time % 60);
    format!("{year:04}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{micros:06}Z")
}

fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    rfc3339(now.as_secs(), now.subsec_micros())
}

/// A fixture of Anthropic's batches, read as JSON.
fn batch_fixture(name: &str) -> Value {
    let path = fixture(&format!("anthropic-batches/{name}"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The line of `results.jsonl` whose result is of `kind` (the first such).
fn result_fixture(kind: &str) -> Value {
    let text = std::fs::read_to_string(fixture("anthropic-batches/results.jsonl")).unwrap();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["result"]["type"] == kind)
        .unwrap()
}

impl Server {
    fn new(vendor: Vendor, failing: usize) -> Server {
        let questions = Arc::new(questions());
        Server {
            vendor,
            tools: false,
            questions: Arc::clone(&questions),
            script: Arc::new(move |prompt: &str, n| completions(&questions, prompt, n)),
            seen: Arc::default(),
            looks: Arc::new(Mutex::new(2)),
            failing,
            expiring: false,
            base_url: Arc::default(),
        }
    }

    /// The reply to `body`, a completions request or a Messages API request.
    fn reply(&self, body: &Value) -> Value {
        if body.get("tools").is_some() {
            let (step, name, input) = tool_call(&self.questions, body);
            let id = format!("call_{step}_{name}");
            let usage = json!({"prompt_tokens": 100, "completion_tokens": 10});
            return match self.vendor {
                Vendor::OpenAi => json!({"id": "chatcmpl", "object": "chat.completion",
                    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                        "role": "assistant", "content": format!("Step {step}."),
                        "tool_calls": [{"id": id, "type": "function",
                            "function": {"name": name, "arguments": input.to_string()}}]}}],
                    "usage": usage}),
                Vendor::Anthropic => {
                    let mut message = result_fixture("succeeded")["result"]["message"].clone();
                    message["model"] = body["model"].clone();
                    message["stop_reason"] = json!("tool_use");
                    message["content"] = json!([{"type": "text", "text": format!("Step {step}.")},
                        {"type": "tool_use", "id": id, "name": name, "input": input}]);
                    message
                }
            };
        }
        if let Some(messages) = body.get("messages") {
            let prompt: String = messages[0]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|block| block["text"].as_str().unwrap())
                .collect();
            let text = (self.script)(&prompt, 1).remove(0);
            let succeeded = result_fixture("succeeded");
            let mut message = succeeded["result"]["message"].clone();
            message["model"] = body["model"].clone();
            message["content"] = json!([{"type": "text", "text": text}]);
            return message;
        }
        let n = body["n"].as_u64().unwrap_or(1) as usize;
        let texts = (self.script)(body["prompt"].as_str().unwrap(), n);
        let choices: Vec<Value> = texts
            .into_iter()
            .enumerate()
            .map(|(idx, text)| json!({"index": idx, "text": text, "finish_reason": "stop"}))
            .collect();
        json!({"id": "cmpl", "object": "text_completion", "choices": choices,
               "usage": {"prompt_tokens": 100, "completion_tokens": 10}})
    }

    fn upload(&self, body: &[u8]) -> Value {
        let text = String::from_utf8_lossy(body);
        assert!(text.contains("name=\"purpose\"\r\n\r\nbatch\r\n"), "{text:.300}");
        let start = text.find("Content-Type: application/jsonl\r\n\r\n").unwrap() + 35;
        let end = text.rfind("\r\n--").unwrap();
        let lines = text[start..end]
            .lines()
            .map(|line| {
                let line: Value = serde_json::from_str(line).unwrap();
                let endpoint = if self.tools {
                    "/v1/chat/completions"
                } else {
                    "/v1/completions"
                };
                assert_eq!(line["url"], endpoint);
                (
                    line["custom_id"].as_str().unwrap().to_owned(),
                    line["body"].clone(),
                )
            })
            .collect();
        let mut seen = self.seen.lock().unwrap();
        let id = format!("file-{}", seen.files.len());
        seen.files.insert(id.clone(), lines);
        json!({"id": id, "object": "file", "purpose": "batch"})
    }

    /// A batch of `file`'s requests: its id.
    fn submit(&self, file: String) -> String {
        let looks = *self.looks.lock().unwrap();
        let mut seen = self.seen.lock().unwrap();
        let lines = seen.files[&file].clone();
        for (_, body) in &lines {
            *seen.submitted.entry(body.to_string()).or_default() += 1;
        }
        if seen.open_batch.is_some() {
            seen.overlapping += 1;
        }
        let id = match self.vendor {
            Vendor::OpenAi => format!("batch_{}", seen.batches.len()),
            Vendor::Anthropic => format!("msgbatch_{}", seen.batches.len()),
        };
        seen.open_batch = Some(id.clone());
        seen.batches.insert(id.clone(), (file, looks, now_rfc3339()));
        id
    }

    /// `POST /v1/batches`.
    fn create(&self, body: &Value) -> Value {
        assert_eq!(body["completion_window"], "24h");
        let id = self.submit(body["input_file_id"].as_str().unwrap().to_owned());
        json!({"id": id, "object": "batch", "status": "validating"})
    }

    /// `POST /v1/messages/batches`: its requests kept as a file.
    fn create_message_batch(&self, body: &Value) -> Value {
        let lines: Vec<(String, Value)> = body["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|request| {
                let custom_id = request["custom_id"].as_str().unwrap().to_owned();
                assert!(request["params"]["messages"].is_array(), "{request}");
                (custom_id, request["params"].clone())
            })
            .collect();
        let file = {
            let mut seen = self.seen.lock().unwrap();
            let file = format!("requests-{}", seen.files.len());
            seen.files.insert(file.clone(), lines);
            file
        };
        let id = self.submit(file);
        self.message_batch(&id)
    }

    /// Whether batch `id` has ended (answering every request, failing the first `failing`
    /// requests the server meets; a cancelled one answering only its first half), counting a
    /// look at it.
    fn ended(&self, id: &str) -> bool {
        let mut seen = self.seen.lock().unwrap();
        let (file, looks, _) = seen.batches[id].clone();
        if seen.ended.contains_key(id) {
            return true;
        }
        let cancelled = seen.cancelling.iter().any(|cancelling| cancelling == id);
        if !cancelled && looks > 0 && *self.looks.lock().unwrap() > 0 {
            seen.batches.get_mut(id).unwrap().1 -= 1;
            return false;
        }
        let mut results = Vec::new();
        let lines = seen.files[&file].clone();
        let n_lines = lines.len();
        for (at, (custom_id, body)) in lines.into_iter().enumerate() {
            let key = body.to_string();
            if self.expiring {
                results.push((custom_id, Err(Lost::Expired)));
            } else if cancelled && at >= n_lines / 2 {
                results.push((custom_id, Err(Lost::Canceled)));
            } else if seen.failed.len() < self.failing && !seen.failed.contains(&key) {
                seen.failed.push(key);
                results.push((custom_id, Err(Lost::Failed)));
            } else {
                results.push((custom_id, Ok(self.reply(&body))));
            }
        }
        seen.ended.insert(id.to_owned(), results);
        true
    }

    /// How many of an ended batch's requests were lost in each way.
    fn count_lost(&self, id: &str, lost: Lost) -> usize {
        let seen = self.seen.lock().unwrap();
        let results = &seen.ended[id];
        results
            .iter()
            .filter(|(_, reply)| reply.as_ref().err() == Some(&lost))
            .count()
    }

    /// `POST …/cancel`: the batch ends at its next look.
    fn cancel(&self, id: &str) {
        let mut seen = self.seen.lock().unwrap();
        assert!(seen.batches.contains_key(id), "cancel of an unknown batch {id}");
        seen.cancelling.push(id.to_owned());
    }

    /// `GET /v1/batches/{id}`: a batch as it is now; an ended one with its output and error files.
    fn batch(&self, id: &str) -> Value {
        if !self.ended(id) {
            return json!({"id": id, "status": "in_progress", "request_counts": {"total": 0, "completed": 0, "failed": 0}});
        }
        let n_failed = self.count_lost(id, Lost::Failed);
        let n_canceled = self.count_lost(id, Lost::Canceled);
        let mut seen = self.seen.lock().unwrap();
        let total = seen.ended[id].len();
        if self.expiring {
            seen.open_batch = None;
            return json!({"id": id, "status": "expired", "request_counts": {"total": total, "completed": 0, "failed": 0}});
        }
        let counts = json!({"total": total, "completed": total - n_failed - n_canceled, "failed": n_failed});
        let status = if seen.cancelling.iter().any(|cancelling| cancelling == id) {
            "cancelled"
        } else {
            "completed"
        };
        json!({"id": id, "status": status, "output_file_id": format!("{id}-output"),
               "error_file_id": format!("{id}-errors"), "request_counts": counts})
    }

    /// `GET /v1/messages/batches/{id}`: the fixture's batch in its state now.
    fn message_batch(&self, id: &str) -> Value {
        let ended = self.ended(id);
        let counts = ended
            .then(|| [Lost::Failed, Lost::Expired, Lost::Canceled].map(|lost| self.count_lost(id, lost)));
        let seen = self.seen.lock().unwrap();
        let (file, _, created_at) = &seen.batches[id];
        let mut batch = match counts {
            Some([errored, expired, canceled]) => {
                let mut batch = batch_fixture("message-batch-ended.json");
                let base = self.base_url.lock().unwrap().clone();
                batch["results_url"] = json!(format!("{base}/messages/batches/{id}/results"));
                let total = seen.ended[id].len();
                batch["request_counts"] = json!({"processing": 0,
                    "succeeded": total - errored - expired - canceled,
                    "errored": errored, "canceled": canceled, "expired": expired});
                batch
            }
            None => {
                let mut batch = batch_fixture("message-batch-in-progress.json");
                batch["request_counts"]["processing"] = json!(seen.files[file].len());
                batch
            }
        };
        batch["id"] = json!(id);
        batch["created_at"] = json!(created_at);
        batch
    }

    /// `GET /v1/messages/batches`: every batch, the latest first.
    fn message_batches(&self) -> Value {
        let ids: Vec<String> = self.seen.lock().unwrap().batches.keys().rev().cloned().collect();
        let data: Vec<Value> = ids.iter().map(|id| self.message_batch(id)).collect();
        let mut list = batch_fixture("list.json");
        list["first_id"] = json!(ids.first());
        list["last_id"] = json!(ids.last());
        list["data"] = json!(data);
        list
    }

    /// An ended message batch's results, one JSON line a request.
    fn message_results(&self, id: &str) -> String {
        let mut seen = self.seen.lock().unwrap();
        seen.open_batch = None;
        let mut lines = String::new();
        for (custom_id, reply) in &seen.ended[id] {
            let mut line = match reply {
                Ok(message) => {
                    let mut line = result_fixture("succeeded");
                    line["result"]["message"] = message.clone();
                    line
                }
                Err(Lost::Expired) => result_fixture("expired"),
                Err(Lost::Canceled) => result_fixture("canceled"),
                Err(Lost::Failed) => result_fixture("errored"),
            };
            line["custom_id"] = json!(custom_id);
            lines.push_str(&format!("{line}\n"));
        }
        lines
    }

    /// `GET /v1/files/{id}/content`: an ended batch's output or error file.
    fn content(&self, file: &str) -> String {
        let (id, output) = match file.strip_suffix("-output") {
            Some(id) => (id, true),
            None => (file.strip_suffix("-errors").unwrap(), false),
        };
        let mut seen = self.seen.lock().unwrap();
        if output {
            seen.open_batch = None;
        }
        let mut lines = String::new();
        for (custom_id, reply) in &seen.ended[id] {
            // A cancelled batch's unanswered requests are in neither file.
            let line = match reply {
                Ok(body) if output => json!({"id": "r", "custom_id": custom_id,
                    "response": {"status_code": 200, "request_id": "q", "body": body}, "error": null}),
                Err(Lost::Failed) if !output => {
                    json!({"custom_id": custom_id, "response": {"status_code": 500,
                    "body": {"error": {"message": "overloaded"}}}, "error": null})
                }
                _ => continue,
            };
            lines.push_str(&format!("{line}\n"));
        }
        lines
    }

    fn count_synchronous(&self, body: &Value) {
        let mut seen = self.seen.lock().unwrap();
        seen.synchronous += 1;
        *seen.synchronous_bodies.entry(body.to_string()).or_default() += 1;
    }

    /// Whether a request carries Anthropic's headers (counted when it does not).
    fn authenticated(&self, headers: &axum::http::HeaderMap) -> bool {
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let ok =
            header("x-api-key") == Some(ANTHROPIC_KEY) && header("anthropic-version") == Some("2023-06-01");
        if !ok {
            self.seen.lock().unwrap().unauthenticated += 1;
        }
        ok
    }
}

/// OpenAI's Batch API over the completions endpoint for other tests, `script` giving the
/// completions of a prompt: its base URL. It serves for as long as the test's runtime runs.
pub(crate) async fn completions_batch_api(
    script: impl Fn(&str, usize) -> Vec<String> + Send + Sync + 'static,
) -> String {
    let server = Server {
        script: Arc::new(script),
        ..Server::new(Vendor::OpenAi, 0)
    };
    server.start().await
}

impl Server {
    async fn start(self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        *self.base_url.lock().unwrap() = base_url.clone();
        let app = match self.vendor {
            Vendor::OpenAi => self.openai_routes(),
            Vendor::Anthropic => self.anthropic_routes(),
        };
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        base_url
    }

    fn openai_routes(self) -> axum::Router {
        use axum::routing::{get, post};
        let (a, b, c, d, e, f, g) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self,
        );
        let chat = a.clone();
        axum::Router::new()
            .route(
                "/v1/completions",
                post(move |body: axum::body::Bytes| async move {
                    let body: Value = serde_json::from_slice(&body).unwrap();
                    a.count_synchronous(&body);
                    json_answer(a.reply(&body))
                }),
            )
            .route(
                "/v1/chat/completions",
                post(move |body: axum::body::Bytes| async move {
                    let body: Value = serde_json::from_slice(&body).unwrap();
                    chat.count_synchronous(&body);
                    json_answer(chat.reply(&body))
                }),
            )
            .route(
                "/v1/files",
                post(move |body: axum::body::Bytes| async move { json_answer(b.upload(&body)) }),
            )
            .route(
                "/v1/batches",
                post(move |body: axum::body::Bytes| async move {
                    json_answer(c.create(&serde_json::from_slice(&body).unwrap()))
                })
                .get(move || async move { json_answer(f.list()) }),
            )
            .route(
                "/v1/batches/{id}",
                get(
                    move |axum::extract::Path(id): axum::extract::Path<String>| async move {
                        json_answer(d.batch(&id))
                    },
                ),
            )
            .route(
                "/v1/batches/{id}/cancel",
                post(
                    move |axum::extract::Path(id): axum::extract::Path<String>| async move {
                        g.cancel(&id);
                        json_answer(json!({"id": id, "object": "batch", "status": "cancelling"}))
                    },
                ),
            )
            .route(
                "/v1/files/{id}/content",
                get(
                    move |axum::extract::Path(id): axum::extract::Path<String>| async move { e.content(&id) },
                ),
            )
    }

    fn anthropic_routes(self) -> axum::Router {
        use axum::extract::Path as UrlPath;
        use axum::http::HeaderMap;
        use axum::routing::{get, post};
        let unauthorized = || {
            let error = json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
            (axum::http::StatusCode::UNAUTHORIZED, error.to_string())
        };
        let (a, b, c, d, e, f) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self,
        );
        axum::Router::new()
            .route(
                "/v1/messages",
                post(move |headers: HeaderMap, body: axum::body::Bytes| async move {
                    if !a.authenticated(&headers) {
                        return unauthorized();
                    }
                    let body: Value = serde_json::from_slice(&body).unwrap();
                    a.count_synchronous(&body);
                    let reply = a.reply(&body);
                    (axum::http::StatusCode::OK, reply.to_string())
                }),
            )
            .route(
                "/v1/messages/batches",
                post(move |headers: HeaderMap, body: axum::body::Bytes| async move {
                    if !b.authenticated(&headers) {
                        return unauthorized();
                    }
                    let created = b.create_message_batch(&serde_json::from_slice(&body).unwrap());
                    (axum::http::StatusCode::OK, created.to_string())
                })
                .get(move |headers: HeaderMap| async move {
                    if !c.authenticated(&headers) {
                        return unauthorized();
                    }
                    (axum::http::StatusCode::OK, c.message_batches().to_string())
                }),
            )
            .route(
                "/v1/messages/batches/{id}",
                get(
                    move |headers: HeaderMap, UrlPath(id): UrlPath<String>| async move {
                        if !d.authenticated(&headers) {
                            return unauthorized();
                        }
                        (axum::http::StatusCode::OK, d.message_batch(&id).to_string())
                    },
                ),
            )
            .route(
                "/v1/messages/batches/{id}/cancel",
                post(
                    move |headers: HeaderMap, UrlPath(id): UrlPath<String>| async move {
                        if !f.authenticated(&headers) {
                            return unauthorized();
                        }
                        f.cancel(&id);
                        let mut batch = batch_fixture("message-batch-canceling.json");
                        let seen = f.seen.lock().unwrap();
                        let (file, _, created_at) = &seen.batches[&id];
                        batch["request_counts"]["processing"] = json!(seen.files[file].len());
                        batch["id"] = json!(id);
                        batch["created_at"] = json!(created_at);
                        (axum::http::StatusCode::OK, batch.to_string())
                    },
                ),
            )
            .route(
                "/v1/messages/batches/{id}/results",
                get(
                    move |headers: HeaderMap, UrlPath(id): UrlPath<String>| async move {
                        if !e.authenticated(&headers) {
                            return unauthorized();
                        }
                        (axum::http::StatusCode::OK, e.message_results(&id))
                    },
                ),
            )
    }

    /// `GET /v1/batches`: every batch, the latest first.
    fn list(&self) -> Value {
        let seen = self.seen.lock().unwrap();
        let data: Vec<Value> = seen
            .batches
            .iter()
            .rev()
            .map(|(id, (file, _, _))| json!({"id": id, "object": "batch", "input_file_id": file}))
            .collect();
        json!({"object": "list", "data": data})
    }
}

fn json_answer(value: Value) -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
}

/// `eval` of the first 20 distractor questions with `method`, into `out`, through `server`'s
/// vendor's API (OpenAI's completions, Anthropic's messages).
fn eval_command(server: &Server, method: &str, out: &Path, batch: bool) -> std::process::Command {
    let base_url = server.base_url.lock().unwrap().clone();
    eval_command_at(server.vendor, server.tools, &base_url, method, out, batch)
}

/// [`eval_command`] against the server at `base_url` (`tools`: through the vendor's function-calling API).
fn eval_command_at(
    vendor: Vendor,
    tools: bool,
    base_url: &str,
    method: &str,
    out: &Path,
    batch: bool,
) -> std::process::Command {
    let mut command = binary();
    command.arg("eval").arg(fixture(QUESTIONS));
    command.args([
        "--limit",
        "20",
        "--docstore",
        "distractor",
        "--method",
        method,
        "--json",
    ]);
    command.args(["--model", "m", "--base-url", base_url]);
    match (vendor, tools) {
        (Vendor::OpenAi, false) => command.args(["--api", "completions"]),
        (Vendor::Anthropic, false) => command.args(["--api", "anthropic"]),
        (vendor, true) => command.args(["--api", vendor.tools_api()]),
    };
    if vendor == Vendor::Anthropic {
        command.args(["--api-key", ANTHROPIC_KEY]);
    }
    command.arg("--out").arg(out);
    if batch {
        command.args(["--batch", "--batch-poll", "0.001"]);
    } else {
        command.args(["--concurrency", "4"]);
    }
    command
}

/// Runs `command` to its end (the server serves meanwhile): its JSON summary.
async fn run(command: &mut std::process::Command) -> Value {
    let output = tokio::task::block_in_place(|| command.output().unwrap());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.code().is_some_and(|code| code < 2), "{stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{stderr}"))
}

/// Each run's answer and EM, by question id; and each run's `batch`.
fn answers(path: &Path) -> (BTreeMap<String, (Value, Value)>, Vec<Value>) {
    let text = std::fs::read_to_string(path).unwrap();
    let runs: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let answers = runs
        .iter()
        .map(|run| {
            let id = run["id"].as_str().unwrap().to_owned();
            (id, (run["answer"].clone(), run["em"].clone()))
        })
        .collect();
    (answers, runs.iter().map(|run| run["batch"].clone()).collect())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batched_eval_finds_what_a_synchronous_one_finds_one_batch_a_round() {
    finds_what_a_synchronous_eval_finds(Vendor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batched_eval_through_anthropics_message_batches_finds_what_a_synchronous_one_finds() {
    finds_what_a_synchronous_eval_finds(Vendor::Anthropic).await;
}

/// For each method, the synchronous eval and the batched one (two requests failing once inside
/// their batch, asked again in the next round) through `vendor`'s API.
async fn finds_what_a_synchronous_eval_finds(vendor: Vendor) {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.toml");
    std::fs::write(&prices, "\"m\" = { input = 1.0, output = 3.0 }\n").unwrap();
    let cases = [
        ("standard", false),
        ("cot-sc", false),
        ("react", false),
        ("cot-sc-then-react", false),
        ("react", true),
    ];
    for (method, tools) in cases {
        let server = Server {
            tools,
            ..Server::new(vendor, 2)
        };
        server.clone().start().await;
        let method_name = method;
        let method = if tools { "react (function calling)" } else { method };
        let synchronous = dir.path().join(format!("{method}.sync.jsonl"));
        let mut command = eval_command(&server, method_name, &synchronous, false);
        let reference = run(command.arg("--prices").arg(&prices)).await;
        let n_synchronous = server.seen.lock().unwrap().synchronous;
        let batched = dir.path().join(format!("{method}.batch.jsonl"));
        let mut command = eval_command(&server, method_name, &batched, true);
        let summary = run(command.arg("--prices").arg(&prices)).await;
        let (expected, _) = answers(&synchronous);
        let (found, batches) = answers(&batched);
        assert_eq!(found.len(), N_QUESTIONS, "{method}");
        let first: Value =
            serde_json::from_str(std::fs::read_to_string(&batched).unwrap().lines().next().unwrap()).unwrap();
        let api = match (vendor, tools) {
            (Vendor::OpenAi, false) => "completions",
            (Vendor::Anthropic, false) => "anthropic",
            (vendor, true) => vendor.tools_api(),
        };
        assert_eq!(first["api"], api, "{method}");
        assert_eq!(found, expected, "{method}: the batched answers");
        assert_eq!(summary["em"], reference["em"], "{method}");
        // The same tokens, at half the price.
        let dollars = |summary: &Value| -> f64 {
            let total = summary["cost"]["total"].as_str().unwrap();
            total.trim_start_matches('$').parse().unwrap()
        };
        assert!(dollars(&reference) > 0.0, "{reference}");
        assert!(
            (dollars(&summary) * 2.0 - dollars(&reference)).abs() < 1e-12,
            "{method}: {summary} {reference}"
        );
        assert!(
            batches
                .iter()
                .all(|batch| batch.as_array().is_some_and(|ids| !ids.is_empty())),
            "{method}: {batches:?}"
        );
        let seen = server.seen.lock().unwrap();
        assert_eq!(seen.unauthenticated, 0, "{method}: every request carries the key");
        assert_eq!(
            seen.synchronous, n_synchronous,
            "{method}: no synchronous request in batch mode"
        );
        assert_eq!(
            seen.overlapping, 0,
            "{method}: a batch was created while another ran"
        );
        // A round for each request of the longest question, and one for the requests failed
        // inside the first batch.
        let most_requests = match method_name {
            "react" => 2,
            "cot-sc-then-react" => 3,
            _ => 1,
        };
        // Anthropic's API has no `n`: CoT-SC asks one sample, then the other 20 at once.
        let most_requests = match (vendor, method_name) {
            (Vendor::Anthropic, "cot-sc" | "cot-sc-then-react") => most_requests + 1,
            _ => most_requests,
        };
        assert!(
            (2..=most_requests + 1).contains(&seen.batches.len()),
            "{method}: {} batches, of {:?} requests",
            seen.batches.len(),
            seen.batches
                .values()
                .map(|(file, ..)| seen.files[file].len())
                .collect::<Vec<_>>()
        );
        // Each request as often as the synchronous eval sent it; the two failed ones once more.
        let again: Vec<usize> = seen
            .submitted
            .iter()
            .map(|(body, &times)| times - seen.synchronous_bodies[body])
            .filter(|&more| more > 0)
            .collect();
        assert_eq!(
            again,
            [1, 1],
            "{method}: only the two failed requests are submitted again"
        );
        let ledger: Value = serde_json::from_slice(&std::fs::read(ledger_path(&batched)).unwrap()).unwrap();
        assert_eq!(
            ledger["batches"].as_array().unwrap().len(),
            seen.batches.len(),
            "{method}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_after_submitting_and_run_again_it_pays_for_nothing_twice() {
    killed_and_run_again(Vendor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_after_submitting_a_message_batch_and_run_again_it_pays_for_nothing_twice() {
    killed_and_run_again(Vendor::Anthropic).await;
}

/// `react` through `vendor`'s API: synchronously, then batched by a process killed (SIGKILL)
/// once its first batch — which never ends while that process lives — is in the ledger.
struct KilledInFlight {
    server: Server,
    synchronous: PathBuf,
    batched: PathBuf,
    /// The first batch's id.
    first: &'static str,
    _dir: tempfile::TempDir,
}

impl KilledInFlight {
    async fn run(vendor: Vendor) -> KilledInFlight {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::new(vendor, 0);
        server.clone().start().await;
        let synchronous = dir.path().join("sync.jsonl");
        run(&mut eval_command(&server, "react", &synchronous, false)).await;
        *server.looks.lock().unwrap() = usize::MAX;
        let batched = dir.path().join("batch.jsonl");
        let mut child = eval_command(&server, "react", &batched, true)
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let first = match vendor {
            Vendor::OpenAi => "batch_0",
            Vendor::Anthropic => "msgbatch_0",
        };
        let ledger = ledger_path(&batched);
        let recorded = format!("\"id\": \"{first}\"");
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !std::fs::read_to_string(&ledger).is_ok_and(|text| text.contains(&recorded)) {
            assert!(
                std::time::Instant::now() < deadline,
                "the batch was never recorded"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        KilledInFlight {
            server,
            synchronous,
            batched,
            first,
            _dir: dir,
        }
    }
}

async fn killed_and_run_again(vendor: Vendor) {
    let KilledInFlight {
        server,
        synchronous,
        batched,
        _dir,
        ..
    } = KilledInFlight::run(vendor).await;
    let ledger = ledger_path(&batched);
    assert_eq!(server.seen.lock().unwrap().batches.len(), 1);
    // As if killed after the batch was created but before its id was recorded: the next run
    // finds it (OpenAI's by its input file, Anthropic's among the latest batches, by its time and
    // size) instead of creating another.
    let text = std::fs::read_to_string(&ledger).unwrap();
    let mut record: Value = serde_json::from_str(&text).unwrap();
    record["batches"][0].as_object_mut().unwrap().remove("id");
    std::fs::write(&ledger, record.to_string()).unwrap();
    *server.looks.lock().unwrap() = 0;
    run(&mut eval_command(&server, "react", &batched, true)).await;
    let (expected, _) = answers(&synchronous);
    let (found, _) = answers(&batched);
    assert_eq!(found, expected, "the resumed answers");
    let seen = server.seen.lock().unwrap();
    let twice = seen.submitted.values().filter(|&&times| times > 1).count();
    assert_eq!(twice, 0, "requests submitted twice");
    assert_eq!(seen.files.len(), seen.batches.len(), "one upload a batch");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_api_that_refuses_the_key_stops_the_evaluation_at_once() {
    refused_at_once(Vendor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn message_batches_that_refuse_the_key_stop_the_evaluation_at_once() {
    refused_at_once(Vendor::Anthropic).await;
}

async fn refused_at_once(vendor: Vendor) {
    let uploads = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&uploads);
    let (path, error) = match vendor {
        Vendor::OpenAi => (
            "/v1/files",
            json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
        ),
        Vendor::Anthropic => (
            "/v1/messages/batches",
            json!({"type": "error", "error": {"type": "authentication_error", "message": "Incorrect API key provided"}}),
        ),
    };
    let app = axum::Router::new().route(
        path,
        axum::routing::post(move || async move {
            *counted.lock().unwrap() += 1;
            (axum::http::StatusCode::UNAUTHORIZED, error.to_string())
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("refused.jsonl");
    let mut command = eval_command_at(vendor, false, &base_url, "standard", &results, true);
    let output = tokio::task::block_in_place(|| command.output().unwrap());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("401") && stderr.contains("Incorrect API key"),
        "{stderr}"
    );
    assert_eq!(
        *uploads.lock().unwrap(),
        1,
        "a refusal is not asked again: {stderr}"
    );
    let lines = std::fs::read_to_string(&results).unwrap_or_default();
    assert_eq!(
        lines.lines().count(),
        0,
        "the refused questions run next time: {lines}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_no_batch_answers_end_their_questions_in_errors_that_may_fix_themselves() {
    no_batch_answers(Vendor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_expired_in_message_batches_end_their_questions_in_errors_that_may_fix_themselves() {
    no_batch_answers(Vendor::Anthropic).await;
}

async fn no_batch_answers(vendor: Vendor) {
    let mut server = Server::new(vendor, 0);
    server.expiring = true;
    server.clone().start().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("expired.jsonl");
    let mut command = eval_command(&server, "standard", &results, true);
    let output = tokio::task::block_in_place(|| command.output().unwrap());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("expired"), "{stderr}");
    // The first round and one for each of the client's 4 retries.
    assert_eq!(server.seen.lock().unwrap().batches.len(), 5, "{stderr}");
    let text = std::fs::read_to_string(&results).unwrap();
    assert!(text.lines().count() > 0, "{stderr}");
    for line in text.lines() {
        let run: Value = serde_json::from_str(line).unwrap();
        assert_eq!(run["error_kind"], "transient", "{line}");
        assert!(
            run["error"].as_str().unwrap().contains("no batch answered"),
            "{line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_batch_keeps_what_it_answered_and_the_rest_is_asked_again() {
    cancelled_and_run_again(Vendor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_message_batch_keeps_what_it_answered_and_the_rest_is_asked_again() {
    cancelled_and_run_again(Vendor::Anthropic).await;
}

/// A batch in flight cancelled with `--batch-cancel` (the evaluation killed first), then the same
/// command run again: the half the batch answered before the cancel is collected, not asked
/// again; the other half goes in a new batch at once (the cancelled batch is not waited on for
/// it); nothing answered is paid twice.
async fn cancelled_and_run_again(vendor: Vendor) {
    let KilledInFlight {
        server,
        synchronous,
        batched,
        first,
        _dir,
    } = KilledInFlight::run(vendor).await;
    let ledger = ledger_path(&batched);
    let mut command = eval_command(&server, "react", &batched, true);
    let output = tokio::task::block_in_place(|| command.arg("--batch-cancel").output().unwrap());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let vendor_name = match vendor {
        Vendor::OpenAi => "openai",
        Vendor::Anthropic => "anthropic",
    };
    assert!(
        stdout.contains(&format!("cancelled {vendor_name} batch {first}: "))
            && stdout.contains("1 batch cancelled"),
        "{stdout}"
    );
    assert_eq!(server.seen.lock().unwrap().cancelling, [first]);
    let record: Value = serde_json::from_str(&std::fs::read_to_string(&ledger).unwrap()).unwrap();
    assert_eq!(record["batches"][0]["cancelled"], true, "{record}");
    // Cancelled twice: nothing more is sent.
    let mut command = eval_command(&server, "react", &batched, true);
    let output = tokio::task::block_in_place(|| command.arg("--batch-cancel").output().unwrap());
    assert!(String::from_utf8_lossy(&output.stdout).contains("0 batches cancelled"));
    assert_eq!(server.seen.lock().unwrap().cancelling, [first]);

    *server.looks.lock().unwrap() = 0;
    run(&mut eval_command(&server, "react", &batched, true)).await;
    let (expected, _) = answers(&synchronous);
    let (found, _) = answers(&batched);
    assert_eq!(found, expected, "the answers after the cancel");
    let record: Value = serde_json::from_str(&std::fs::read_to_string(&ledger).unwrap()).unwrap();
    assert_eq!(
        record["batches"][0]["lost"].as_array().map(Vec::len),
        Some(N_QUESTIONS / 2),
        "{record}"
    );
    let seen = server.seen.lock().unwrap();
    // The second batch holds the requests the cancel lost, and nothing else.
    let (second_file, ..) = seen.batches.values().nth(1).unwrap();
    assert_eq!(seen.files[second_file].len(), N_QUESTIONS / 2);
    // Each request answered (billed) once, in whichever batch.
    let mut answered: HashMap<String, usize> = HashMap::new();
    for (id, results) in &seen.ended {
        let (file, ..) = &seen.batches[id];
        for ((_, body), (_, reply)) in seen.files[file].iter().zip(results) {
            if reply.is_ok() {
                *answered.entry(body.to_string()).or_default() += 1;
            }
        }
    }
    assert!(
        answered.values().all(|&times| times == 1),
        "a request answered twice"
    );
    let (first_file, ..) = &seen.batches[first];
    let first_bodies: Vec<String> = seen.files[first_file]
        .iter()
        .map(|(_, body)| body.to_string())
        .collect();
    for body in &first_bodies {
        assert!(seen.submitted[body] <= 2, "{body}");
    }
    let twice = first_bodies
        .iter()
        .filter(|body| seen.submitted[*body] == 2)
        .count();
    assert_eq!(
        twice,
        N_QUESTIONS / 2,
        "only the lost requests are submitted again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_lines_show_rounds_requests_in_flight_and_the_batch_api_status() {
    progress_lines(Vendor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_lines_show_the_message_batches_processing_status() {
    progress_lines(Vendor::Anthropic).await;
}

/// The lines a batched eval prints on stderr (not a terminal) while it waits: each round's
/// requests in flight, each batch's status and counts as the vendor gives them, each round's end.
async fn progress_lines(vendor: Vendor) {
    let server = Server::new(vendor, 2);
    server.clone().start().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("progress.jsonl");
    let mut command = eval_command(&server, "standard", &results, true);
    let output = tokio::task::block_in_place(|| command.output().unwrap());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let expected = match vendor {
        Vendor::OpenAi => [
            "batch round 1: 20 requests in flight in 1 batch",
            "batch round 1: openai batch batch_0 in_progress: 0 of 0 done, 0 failed; 20 requests in flight",
            "batch round 1: openai batch batch_0 completed: 18 of 20 done, 2 failed; 0 requests in flight",
            "batch round 1: 18 answered, 2 failed",
            "batch round 2: 2 requests in flight in 1 batch",
            "batch round 2: openai batch batch_1 in_progress: 0 of 0 done, 0 failed; 2 requests in flight",
            "batch round 2: openai batch batch_1 completed: 2 of 2 done, 0 failed; 0 requests in flight",
            "batch round 2: 2 answered, 0 failed",
        ],
        Vendor::Anthropic => [
            "batch round 1: 20 requests in flight in 1 batch",
            "batch round 1: anthropic batch msgbatch_0 in_progress: 0 of 20 done, 0 failed; 20 requests in flight",
            "batch round 1: anthropic batch msgbatch_0 ended: 18 of 20 done, 2 failed; 0 requests in flight",
            "batch round 1: 18 answered, 2 failed",
            "batch round 2: 2 requests in flight in 1 batch",
            "batch round 2: anthropic batch msgbatch_1 in_progress: 0 of 2 done, 0 failed; 2 requests in flight",
            "batch round 2: anthropic batch msgbatch_1 ended: 2 of 2 done, 0 failed; 0 requests in flight",
            "batch round 2: 2 answered, 0 failed",
        ],
    };
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("batch round"))
        .collect();
    assert_eq!(lines, expected, "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn replies_the_fallback_asked_synchronously_are_billed_at_the_full_price() {
    billed_by_where_the_reply_came_from(Vendor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn replies_outside_message_batches_are_billed_at_the_full_price() {
    billed_by_where_the_reply_came_from(Vendor::Anthropic).await;
}

/// Two evals of `method` through `vendor`'s API, with `--prices`: synchronously, then batched
/// with `--batch-fallback` (the first two requests failing inside their batch, asked again
/// synchronously). The server, and each eval's results file and summary.
struct Billed {
    server: Server,
    /// Requests the server had met synchronously when the batched eval began.
    n_synchronous_before: usize,
    synchronous: (PathBuf, Value),
    batched: (PathBuf, Value),
    _dir: tempfile::TempDir,
}

impl Billed {
    async fn run(vendor: Vendor, method: &str) -> Billed {
        let dir = tempfile::tempdir().unwrap();
        let prices = dir.path().join("prices.toml");
        std::fs::write(&prices, "\"m\" = { input = 1.0, output = 3.0 }\n").unwrap();
        let server = Server::new(vendor, 2);
        server.clone().start().await;
        let synchronous = dir.path().join("sync.jsonl");
        let mut command = eval_command(&server, method, &synchronous, false);
        let reference = run(command.arg("--prices").arg(&prices)).await;
        let n_synchronous_before = server.seen.lock().unwrap().synchronous;
        let batched = dir.path().join("fallback.jsonl");
        let mut command = eval_command(&server, method, &batched, true);
        let summary = run(command.args(["--batch-fallback", "--prices"]).arg(&prices)).await;
        Billed {
            server,
            n_synchronous_before,
            synchronous: (synchronous, reference),
            batched: (batched, summary),
            _dir: dir,
        }
    }

    /// The summaries' costs, synchronous and batched, in dollars.
    fn dollars(&self) -> (f64, f64) {
        let dollars = |summary: &Value| -> f64 {
            let total = summary["cost"]["total"].as_str().unwrap();
            total.trim_start_matches('$').parse().unwrap()
        };
        (dollars(&self.synchronous.1), dollars(&self.batched.1))
    }
}

/// `--batch-fallback`: the two requests that failed inside the batch are answered synchronously;
/// their runs record no batch and bill at the full price, the other 18 at half.
async fn billed_by_where_the_reply_came_from(vendor: Vendor) {
    let billed = Billed::run(vendor, "standard").await;
    // The two requests that failed inside the batch went synchronously.
    let seen = billed.server.seen.lock().unwrap();
    assert_eq!(seen.synchronous, billed.n_synchronous_before + 2);
    assert_eq!(seen.batches.len(), 1);
    drop(seen);
    let (_, batches) = answers(&billed.batched.0);
    let n_batched = batches.iter().filter(|batch| batch.is_array()).count();
    assert_eq!(
        (n_batched, batches.len()),
        (N_QUESTIONS - 2, N_QUESTIONS),
        "{batches:?}"
    );
    // Every question costs the same tokens: 18 at half the price, 2 at the full price.
    let (reference, batched) = billed.dollars();
    let expected = reference / N_QUESTIONS as f64 * (18.0 / 2.0 + 2.0);
    assert!((batched - expected).abs() < 1e-12, "{batched} {reference}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_react_run_answered_partly_by_the_fallback_is_billed_by_where_each_reply_came_from() {
    billed_by_each_reply(Vendor::OpenAi).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_react_run_answered_partly_outside_message_batches_is_billed_by_each_reply() {
    billed_by_each_reply(Vendor::Anthropic).await;
}

/// ReAct through a batch whose first two requests fail, asked again synchronously: those two
/// questions' first steps are billed in full, every other reply at half.
async fn billed_by_each_reply(vendor: Vendor) {
    let billed = Billed::run(vendor, "react").await;
    let runs = |path: &Path| -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let calls = |usage: &Value| usage["llm_calls"].as_u64().unwrap();
    let n_replies: u64 = runs(&billed.synchronous.0)
        .iter()
        .map(|run| calls(&run["usage"]))
        .sum();
    // Each batched run records what its batches' replies spent: all its calls but the first
    // step of the two questions whose requests failed inside the batch.
    let outside: Vec<u64> = runs(&billed.batched.0)
        .iter()
        .map(|run| calls(&run["usage"]) - calls(&run["batch_usage"]))
        .collect();
    assert_eq!(outside.iter().sum::<u64>(), 2, "{outside:?}");
    assert_eq!(outside.iter().filter(|&&n| n == 1).count(), 2, "{outside:?}");
    // Every reply reports the same tokens: 2 billed in full, the others at half.
    let (reference, batched) = billed.dollars();
    let expected = reference / n_replies as f64 * (2.0 + (n_replies - 2) as f64 / 2.0);
    assert!((batched - expected).abs() < 1e-12, "{batched} {reference}");
}
