//! `eval --batch` against a scripted OpenAI server that speaks both the synchronous API and the
//! Batch API (files, batches, output and error files): a batched evaluation finds what the
//! synchronous one finds, one batch a round; killed with SIGKILL once its batch is submitted and
//! run again, it attaches to that batch and submits no request twice.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// What the server saw of the Batch API.
#[derive(Default)]
struct Seen {
    /// Uploaded files: their lines (custom id, body).
    files: HashMap<String, Vec<(String, Value)>>,
    /// Batches: input file, looks left before it completes.
    batches: BTreeMap<String, (String, usize)>,
    /// Completed batches as they are shown.
    completed: HashMap<String, Value>,
    /// Outputs and error files, by id.
    outputs: HashMap<String, String>,
    /// Every request body a batch held, with how often.
    submitted: HashMap<String, usize>,
    /// Batches created while another was not yet completed and read.
    overlapping: usize,
    /// The batch whose output was not yet read, if any.
    open_batch: Option<String>,
    /// Bodies that already failed once inside a batch.
    failed: Vec<String>,
    synchronous: usize,
}

#[derive(Clone)]
struct Server {
    questions: Arc<HashMap<String, (usize, String)>>,
    seen: Arc<Mutex<Seen>>,
    /// Looks at a batch before it completes.
    looks: Arc<Mutex<usize>>,
    /// How many requests of each batch fail once (a 500 in its error file).
    failing: usize,
    /// Every batch expires without an answer.
    expiring: bool,
}

impl Server {
    fn new(failing: usize) -> Server {
        Server {
            questions: Arc::new(questions()),
            seen: Arc::default(),
            looks: Arc::new(Mutex::new(2)),
            failing,
            expiring: false,
        }
    }

    fn reply(&self, body: &Value) -> Value {
        let n = body["n"].as_u64().unwrap_or(1) as usize;
        let texts = completions(&self.questions, body["prompt"].as_str().unwrap(), n);
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
                assert_eq!(line["url"], "/v1/completions");
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

    fn create(&self, body: &Value) -> Value {
        assert_eq!(body["completion_window"], "24h");
        let file = body["input_file_id"].as_str().unwrap().to_owned();
        let looks = *self.looks.lock().unwrap();
        let mut seen = self.seen.lock().unwrap();
        let lines = seen.files[&file].clone();
        for (_, body) in &lines {
            *seen.submitted.entry(body.to_string()).or_default() += 1;
        }
        if seen.open_batch.is_some() {
            seen.overlapping += 1;
        }
        let id = format!("batch_{}", seen.batches.len());
        seen.open_batch = Some(id.clone());
        seen.batches.insert(id.clone(), (file, looks));
        json!({"id": id, "object": "batch", "status": "validating"})
    }

    /// A batch as it is now; a completed one gets its output and error files.
    fn batch(&self, id: &str) -> Value {
        let mut seen = self.seen.lock().unwrap();
        let (file, looks) = seen.batches[id].clone();
        if looks > 0 && *self.looks.lock().unwrap() > 0 {
            seen.batches.get_mut(id).unwrap().1 -= 1;
            return json!({"id": id, "status": "in_progress", "request_counts": {"total": 0, "completed": 0, "failed": 0}});
        }
        if let Some(completed) = seen.completed.get(id) {
            return completed.clone();
        }
        if self.expiring {
            seen.open_batch = None;
            return json!({"id": id, "status": "expired", "request_counts": {"total": 20, "completed": 0, "failed": 0}});
        }
        let (mut output, mut errors) = (String::new(), String::new());
        let mut n_failed = 0;
        for (custom_id, body) in seen.files[&file].clone() {
            let key = body.to_string();
            if seen.failed.len() < self.failing && !seen.failed.contains(&key) {
                n_failed += 1;
                seen.failed.push(key);
                let line = json!({"custom_id": custom_id, "response": {"status_code": 500,
                    "body": {"error": {"message": "overloaded"}}}, "error": null});
                errors.push_str(&format!("{line}\n"));
                continue;
            }
            let line = json!({"id": "r", "custom_id": custom_id,
                "response": {"status_code": 200, "request_id": "q", "body": self.reply(&body)}, "error": null});
            output.push_str(&format!("{line}\n"));
        }
        let total = seen.files[&file].len();
        seen.outputs.insert(format!("{id}-output"), output);
        seen.outputs.insert(format!("{id}-errors"), errors);
        let completed = json!({"id": id, "status": "completed", "output_file_id": format!("{id}-output"),
               "error_file_id": format!("{id}-errors"),
               "request_counts": {"total": total, "completed": total - n_failed, "failed": n_failed}});
        seen.completed.insert(id.to_owned(), completed.clone());
        completed
    }

    /// `GET /v1/batches`: every batch, the latest first.
    fn list(&self) -> Value {
        let seen = self.seen.lock().unwrap();
        let data: Vec<Value> = seen
            .batches
            .iter()
            .rev()
            .map(|(id, (file, _))| json!({"id": id, "object": "batch", "input_file_id": file}))
            .collect();
        json!({"object": "list", "data": data})
    }

    fn content(&self, file: &str) -> String {
        let mut seen = self.seen.lock().unwrap();
        if file.ends_with("-output") {
            seen.open_batch = None;
        }
        seen.outputs[file].clone()
    }

    async fn start(self) -> String {
        use axum::routing::{get, post};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let json = |value: Value| {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                value.to_string(),
            )
        };
        let (a, b, c, d, e) = (
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
            self.clone(),
        );
        let f = self;
        let app = axum::Router::new()
            .route(
                "/v1/completions",
                post(move |body: axum::body::Bytes| async move {
                    a.seen.lock().unwrap().synchronous += 1;
                    json(a.reply(&serde_json::from_slice(&body).unwrap()))
                }),
            )
            .route(
                "/v1/files",
                post(move |body: axum::body::Bytes| async move { json(b.upload(&body)) }),
            )
            .route(
                "/v1/batches",
                post(move |body: axum::body::Bytes| async move {
                    json(c.create(&serde_json::from_slice(&body).unwrap()))
                })
                .get(move || async move { json(f.list()) }),
            )
            .route(
                "/v1/batches/{id}",
                get(move |axum::extract::Path(id): axum::extract::Path<String>| async move { json(d.batch(&id)) }),
            )
            .route(
                "/v1/files/{id}/content",
                get(move |axum::extract::Path(id): axum::extract::Path<String>| async move { e.content(&id) }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        format!("http://{address}/v1")
    }
}

/// `eval` of the first 20 distractor questions with `method`, into `out`.
fn eval_command(base_url: &str, method: &str, out: &Path, batch: bool) -> std::process::Command {
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
    command.args(["--model", "m", "--api", "completions", "--base-url", base_url]);
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
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.toml");
    std::fs::write(&prices, "\"m\" = { input = 1.0, output = 3.0 }\n").unwrap();
    for method in ["standard", "cot-sc", "react", "cot-sc-then-react"] {
        let server = Server::new(2);
        let base_url = server.clone().start().await;
        let synchronous = dir.path().join(format!("{method}.sync.jsonl"));
        let mut command = eval_command(&base_url, method, &synchronous, false);
        let reference = run(command.arg("--prices").arg(&prices)).await;
        let n_synchronous = server.seen.lock().unwrap().synchronous;
        let batched = dir.path().join(format!("{method}.batch.jsonl"));
        let mut command = eval_command(&base_url, method, &batched, true);
        let summary = run(command.arg("--prices").arg(&prices)).await;
        let (expected, _) = answers(&synchronous);
        let (found, batches) = answers(&batched);
        assert_eq!(found.len(), N_QUESTIONS, "{method}");
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
        let most_requests = match method {
            "react" => 2,
            "cot-sc-then-react" => 3,
            _ => 1,
        };
        assert!(
            (2..=most_requests + 1).contains(&seen.batches.len()),
            "{method}: {} batches",
            seen.batches.len()
        );
        let twice = seen.submitted.values().filter(|&&times| times > 1).count();
        assert_eq!(
            twice, 2,
            "{method}: only the two failed requests are submitted again"
        );
        let ledger: Value = serde_json::from_slice(&std::fs::read(ledger_of(&batched)).unwrap()).unwrap();
        assert_eq!(
            ledger["batches"].as_array().unwrap().len(),
            seen.batches.len(),
            "{method}"
        );
    }
}

fn ledger_of(results: &Path) -> PathBuf {
    PathBuf::from(format!("{}.batches.json", results.display()))
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_after_submitting_and_run_again_it_pays_for_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::new(0);
    let base_url = server.clone().start().await;
    let synchronous = dir.path().join("sync.jsonl");
    run(&mut eval_command(&base_url, "react", &synchronous, false)).await;
    // The first round's batch never completes while the first process lives.
    *server.looks.lock().unwrap() = usize::MAX;
    let batched = dir.path().join("batch.jsonl");
    let mut child = eval_command(&base_url, "react", &batched, true)
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ledger = ledger_of(&batched);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&ledger).is_ok_and(|text| text.contains("\"id\": \"batch_0\"")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the batch was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(server.seen.lock().unwrap().batches.len(), 1);
    // As if killed after the batch was created but before its id was recorded: the next run
    // finds it by its input file instead of creating another.
    let text = std::fs::read_to_string(&ledger).unwrap();
    let mut record: Value = serde_json::from_str(&text).unwrap();
    record["batches"][0].as_object_mut().unwrap().remove("id");
    std::fs::write(&ledger, record.to_string()).unwrap();
    *server.looks.lock().unwrap() = 0;
    run(&mut eval_command(&base_url, "react", &batched, true)).await;
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
    let uploads = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&uploads);
    let app = axum::Router::new().route(
        "/v1/files",
        axum::routing::post(move || async move {
            *counted.lock().unwrap() += 1;
            let error =
                json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}});
            (axum::http::StatusCode::UNAUTHORIZED, error.to_string())
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("refused.jsonl");
    let mut command = eval_command(&base_url, "standard", &results, true);
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
    let mut server = Server::new(0);
    server.expiring = true;
    let base_url = server.clone().start().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("expired.jsonl");
    let mut command = eval_command(&base_url, "standard", &results, true);
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

/// Anthropic's API has its own batches (Message Batches), which this version does not send:
/// `--batch` with it is refused before any request, naming what is missing, and nothing is written.
#[tokio::test(flavor = "multi_thread")]
async fn batch_with_anthropics_api_is_refused_before_any_request() {
    let requests = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&requests);
    let app = axum::Router::new().fallback(move || async move {
        *counted.lock().unwrap() += 1;
        (axum::http::StatusCode::NOT_FOUND, String::new())
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("anthropic.jsonl");
    let mut command = binary();
    command.arg("eval").arg(fixture(QUESTIONS));
    command.args(["--limit", "2", "--docstore", "distractor", "--method", "standard"]);
    command.args([
        "--model",
        "m",
        "--api",
        "anthropic",
        "--api-key",
        "k",
        "--base-url",
        &base_url,
    ]);
    command.arg("--out").arg(&results).arg("--batch");
    let output = tokio::task::block_in_place(|| command.output().unwrap());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--api anthropic") && stderr.contains("Message Batches"),
        "{stderr}"
    );
    assert_eq!(*requests.lock().unwrap(), 0, "{stderr}");
    assert!(!results.exists(), "{stderr}");
}
