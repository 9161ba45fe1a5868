//! A number never hides an error: an evaluation whose questions partly ended in an error (a
//! prompt the server refuses, a server that refuses the connection, one that answers 500) is
//! scored by every reader — `eval`, `score`, `replay`, `compare`, `report` — with the errors
//! counted in `n`, scored zero, said beside the figure and in `--json` (`"errors"`,
//! `"incomplete"`), and `eval`'s and `score`'s exit status 2; per-question costs count every
//! request sent.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use react_docstore::agent::trace::LogOutput;
use react_docstore::base::profile::Profile;
use react_docstore::base::secret::ApiKey;
use react_docstore::docstore::DocstoreConfig;
use react_docstore::eval::{self, EvalConfig, EvalServices, Progress, Resume};
use react_docstore::llm::openai::Api;
use react_docstore::llm::openai::{OpenAiClient, OpenAiConfig, RetryPolicy};
use react_docstore::record::questions::Contexts;
use react_docstore::record::selection::Selection;
use react_docstore::solver::setup::AgentSetup;
use react_docstore::tools::Toolbox;
use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

/// HotpotQA's distractor dev sample: 100 questions with their paragraphs.
const GOLD_100: &str = "docstore/hotpotqa-distractor-100.json";

/// The records of `GOLD_100`.
fn gold_records() -> Vec<Value> {
    serde_json::from_str(&std::fs::read_to_string(crate::fixture(GOLD_100)).unwrap()).unwrap()
}

/// Runs the binary in `dir` with `args`: stdout, stderr, exit code.
fn run_in(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let output = crate::binary().args(args).current_dir(dir).output().unwrap();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

/// The questions of `GOLD_100`, by their text: id and gold answer.
fn golds() -> HashMap<String, (String, String)> {
    gold_records()
        .iter()
        .map(|record| {
            let text = |field: &str| record[field].as_str().unwrap().to_owned();
            (text("question"), (text("id"), text("answer")))
        })
        .collect()
}

/// A `/completions` server that answers each question with its gold answer, except the one it
/// refuses with a 400 that asking again will not fix (a prompt too long for the model).
struct GoldServer {
    golds: HashMap<String, (String, String)>,
    refused: String,
}

impl Respond for GoldServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let prompt = body["prompt"].as_str().unwrap();
        let question = prompt
            .rsplit("\nQuestion: ")
            .next()
            .and_then(|tail| tail.lines().next())
            .unwrap();
        if question == self.refused {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "This model's maximum context length is 8 tokens", "type": "invalid_request_error"}}));
        }
        let (_, gold) = &self.golds[question];
        ResponseTemplate::new(200).set_body_json(
            json!({"choices": [{"index": 0, "text": format!(" I know it.\nAction 1: Finish[{gold}]")}]}),
        )
    }
}

/// The first `n` question ids of `GOLD_100`, in file order.
fn first_ids(n: usize) -> Vec<String> {
    gold_records()[..n]
        .iter()
        .map(|record| record["id"].as_str().unwrap().to_owned())
        .collect()
}

/// An evaluation of the first five questions: three answered right, the fourth refused for good
/// (400), the fifth met a server that refuses the connection. Written by the binary, as a user
/// would: its outputs at each stage are checked on the way.
async fn partly_failed_evaluation(dir: &Path) -> String {
    let refused = gold_records()[3]["question"].as_str().unwrap().to_owned();
    let server = crate::serve_posts(GoldServer {
        golds: golds(),
        refused,
    })
    .await;
    let gold = crate::fixture(GOLD_100);
    let gold = gold.to_str().unwrap();
    let eval = |base_url: &str, limit: &str, json: bool| {
        let mut args = vec![
            "eval",
            gold,
            "--docstore",
            "distractor",
            "--limit",
            limit,
            "--out",
            "r.jsonl",
        ];
        args.extend(crate::completions_model(base_url));
        if json {
            args.push("--json");
        }
        run_in(dir, &args)
    };
    let (stdout, stderr, code) = eval(&server.uri(), "4", false);
    assert_eq!(code, 2, "an error among the questions: {stdout}{stderr}");
    assert!(
        stdout.contains(
            "EM 0.7500  F1 0.7500  precision 0.7500  recall 0.7500  (n = 4; incomplete: 1 error, scored zero)\n"
        ),
        "{stdout}"
    );
    // The same command again resumes all four (the refused one is kept: asking again would not
    // help), as `--json`: the fields the contract names, and the errors beside them.
    let (stdout, _, code) = eval(&server.uri(), "4", true);
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(code, 2);
    assert_eq!(
        (
            &summary["n"],
            &summary["em"],
            &summary["errors"],
            &summary["incomplete"]
        ),
        (&json!(4), &json!(0.75), &json!(1), &json!(true))
    );
    // The fifth question meets a server that refuses the connection: recorded as an error that
    // may fix itself, and the evaluation stops.
    let refused_url = format!("http://127.0.0.1:{}/v1", crate::refused_port());
    let (_, stderr, code) = eval(&refused_url, "5", false);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("evaluation stopped"), "{stderr}");
    std::fs::read_to_string(dir.join("r.jsonl")).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_reader_counts_and_says_the_errors() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let results = partly_failed_evaluation(root).await;
    let lines: Vec<Value> = results
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    let ids = first_ids(5);
    assert_eq!(
        lines
            .iter()
            .map(|line| line["stopped"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["finish", "finish", "finish", "error", "error"]
    );
    let gold = crate::fixture(GOLD_100);
    let gold = gold.to_str().unwrap();

    // score: every gold question counts; the two errors and the 95 missing are said, each scored
    // zero, and the exit status says the figure is incomplete.
    let (stdout, stderr, code) = run_in(root, &["score", "r.jsonl", gold]);
    assert_eq!(code, 2, "{stderr}");
    let text: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        text[0],
        "EM 0.0300  F1 0.0300  precision 0.0300  recall 0.0300  (n = 100; incomplete: 2 errors and 95 missing, scored zero)"
    );
    assert_eq!(
        text[1],
        format!(
            "errors         2 runs ended in an error, scored zero (e.g. `{}`, `{}`); `eval` asks again the ones that may fix themselves, `--retry-errors` the rest",
            ids[3], ids[4]
        )
    );
    assert!(
        text[2].starts_with("missing        95 predictions, scored zero (e.g. "),
        "{stdout}"
    );
    let (stdout, _, code) = run_in(root, &["score", "r.jsonl", gold, "--json"]);
    assert_eq!(code, 2);
    let scored: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (
            &scored["n"],
            &scored["em"],
            &scored["missing"],
            &scored["errors"],
            &scored["incomplete"]
        ),
        (&json!(100), &json!(0.03), &json!(95), &json!(2), &json!(true))
    );

    // replay: the recorded errors replay to their failure (no error of the replay's own), and
    // the headline over the runs with gold answers counts them.
    let (stdout, stderr, code) = run_in(root, &["replay", "r.jsonl", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        summary["summary"],
        json!({"n": 5, "em": 0.6, "f1": 0.6, "runs": 5, "answered": 3, "changed": 0, "errors": 2, "incomplete": true})
    );
    let (_, stderr, _) = run_in(root, &["replay", "r.jsonl"]);
    assert!(
        stderr.contains(
            "5 runs replayed, 3 answered; EM 0.6000 F1 0.6000 over 5 with gold answers; incomplete: 2 errors, scored zero"
        ),
        "{stderr}"
    );

    // compare: each side's errors, counted wrong, said.
    let (stdout, stderr, code) = run_in(root, &["compare", "r.jsonl", "r.jsonl"]);
    assert_eq!(code, 0, "{stderr}");
    for side in ["A", "B"] {
        assert!(
            stdout.contains(&format!(
                "incomplete     {side}: 2 of the 5 paired questions ended in an error, counted wrong\n"
            )),
            "{stdout}"
        );
    }
    let (stdout, _, _) = run_in(root, &["compare", "r.jsonl", "r.jsonl", "--json"]);
    let comparison: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (&comparison["a"]["errors"], &comparison["a"]["incomplete"]),
        (&json!(2), &json!(true))
    );

    // report: under the file's EM.
    let (_, stderr, code) = run_in(root, &["report", "r.jsonl", "--out", "r.html"]);
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(root.join("r.html")).unwrap();
    assert!(
        page.contains("incomplete: 2 errors, scored zero"),
        "the report names the errors"
    );
}

/// A results line to write: the question's index in `official.json`, its attempt (`("trial", 2)`,
/// none for a single run), its answer (`"gold"`: the gold answer) and how it stopped.
type Line<'a> = (usize, Option<(&'a str, u64)>, Option<&'a str>, &'a str);

/// The results lines of `runs` for `questions`, gold recorded.
fn lines_for(questions: &[Value], runs: &[Line<'_>]) -> String {
    runs.iter()
        .map(|&(idx, attempt, answer, stopped)| {
            let question = &questions[idx];
            let mut line = json!({"format": "react-docstore.run.v1", "id": question["_id"],
                "question": question["question"], "gold": question["answer"], "steps": [],
                "answer": answer.map(|answer| if answer == "gold" { question["answer"].clone() } else { json!(answer) }),
                "stopped": stopped, "model": "m"});
            if stopped == "error" {
                line["error"] = json!("cannot reach the model server at `http://127.0.0.1:9/v1/completions`");
            }
            if let Some((kind, number)) = attempt {
                line[kind] = json!(number);
            }
            line.to_string() + "\n"
        })
        .collect()
}

/// `score` of a file of errors only is no result: `EM 0` is not what the model scores, and the
/// exit status is 2; of a complete file, 0 and `incomplete: false`. Trials count an error only
/// when it is a question's final state; epochs, every epoch that ended in one.
#[test]
fn a_file_of_errors_scores_no_result_and_attempts_count_the_errors_they_keep() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let gold = crate::fixture("hotpotqa/official.json");
    let gold = gold.to_str().unwrap();
    let questions: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(gold).unwrap()).unwrap();
    let check = |name: &str, runs: &[Line<'_>], expected_code: i32| {
        std::fs::write(root.join(name), lines_for(&questions, runs)).unwrap();
        let (stdout, stderr, code) = run_in(root, &["score", name, gold]);
        assert_eq!(code, expected_code, "{name}: {stdout}{stderr}");
        let (json, _, _) = run_in(root, &["score", name, gold, "--json"]);
        (stdout, serde_json::from_str::<Value>(&json).unwrap())
    };
    let (text, scored) = check(
        "errors.jsonl",
        &[
            (0, None, None, "error"),
            (1, None, None, "error"),
            (2, None, None, "error"),
        ],
        2,
    );
    assert!(
        text.starts_with(
            "EM 0.0000  F1 0.0000  precision 0.0000  recall 0.0000  (n = 3; incomplete: 3 errors, scored zero)\nerrors         3 runs ended in an error"
        ),
        "{text}"
    );
    assert_eq!(
        (&scored["errors"], &scored["incomplete"]),
        (&json!(3), &json!(true))
    );

    let (text, scored) = check(
        "right.jsonl",
        &[
            (0, None, Some("gold"), "finish"),
            (1, None, Some("gold"), "finish"),
            (2, None, Some("no"), "finish"),
        ],
        0,
    );
    assert!(
        text.starts_with("EM 0.6667  F1 0.6667  precision 0.6667  recall 0.6667  (n = 3)\n"),
        "{text}"
    );
    assert_eq!(
        (&scored["errors"], &scored["missing"], &scored["incomplete"]),
        (&json!(0), &json!(0), &json!(false))
    );

    // Trials: question 0 failed in trial 1 and was right in trial 2 (its final state: right);
    // question 1's last trial ended in an error (its final state); question 2 was right at once.
    let (_, scored) = check(
        "trials.jsonl",
        &[
            (0, Some(("trial", 1)), None, "error"),
            (1, Some(("trial", 1)), Some("no"), "finish"),
            (2, Some(("trial", 1)), Some("gold"), "finish"),
            (0, Some(("trial", 2)), Some("gold"), "finish"),
            (1, Some(("trial", 2)), None, "error"),
        ],
        2,
    );
    assert_eq!(
        (&scored["errors"], &scored["n"]),
        (&json!(1), &json!(3)),
        "{scored}"
    );
    // Epochs: each counts; two of six ended in an error.
    let (_, scored) = check(
        "epochs.jsonl",
        &[
            (0, Some(("epoch", 1)), Some("gold"), "finish"),
            (0, Some(("epoch", 2)), None, "error"),
            (1, Some(("epoch", 1)), Some("gold"), "finish"),
            (1, Some(("epoch", 2)), Some("gold"), "finish"),
            (2, Some(("epoch", 1)), None, "error"),
            (2, Some(("epoch", 2)), Some("gold"), "finish"),
        ],
        2,
    );
    assert_eq!(
        (&scored["errors"], &scored["incomplete"]),
        (&json!(2), &json!(true)),
        "{scored}"
    );
}

/// A `/completions` server that answers every request 500, counting them.
#[derive(Clone, Default)]
struct Failing {
    requests: Arc<AtomicUsize>,
}

impl Respond for Failing {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.requests.fetch_add(1, Ordering::SeqCst);
        ResponseTemplate::new(500).set_body_json(json!({"error": {"message": "the server is overloaded"}}))
    }
}

/// `eval` against a server answering 500: the client gives each question's call up after five
/// attempts; the summary counts the three errors beside its `n`, exits 2, and says the 15
/// requests sent (5 a question) where the calls answered are none; each results line records its 5.
#[tokio::test(flavor = "multi_thread")]
async fn a_failing_server_shows_its_errors_and_every_request_sent() {
    let failing = Failing::default();
    let server = crate::serve_posts(failing.clone()).await;
    let mut model = OpenAiConfig::new("m");
    model.base_url = format!("{}/v1", server.uri());
    model.api = Api::Completions;
    model.api_key = Some(ApiKey::new("sk-test-secret"));
    model.retry = RetryPolicy {
        max_retries: 4,
        min_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(2),
        max_retry_after: Duration::from_secs(1),
    };
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    let config = EvalConfig {
        questions: crate::fixture("hotpotqa/official.json"),
        selection: Selection::default(),
        contexts: Contexts::Unused,
        agent: AgentSetup::default(),
        fewshot: Vec::new(),
        attempts: Default::default(),
        fewshot_from: None,
        concurrency: 1,
        results: results.clone(),
        resume: Resume::SkipDone,
        progress: Progress::Hidden,
        log: LogOutput::new(Box::new(std::io::sink())),
    };
    let services = EvalServices {
        llm: Arc::new(OpenAiClient::new(model).unwrap()),
        // Never reached: no question gets past its first call.
        docstore: DocstoreConfig::new(Profile::Default).open().unwrap(),
        toolbox: Toolbox::default(),
    };
    let summary = eval::evaluate(&config, &services, std::future::pending())
        .await
        .unwrap();
    assert_eq!(failing.requests.load(Ordering::SeqCst), 15);
    assert_eq!(
        (
            summary.scores.n,
            summary.errors,
            summary.incomplete,
            summary.exit_code()
        ),
        (3, 3, true, 2)
    );
    let mut text = Vec::new();
    summary.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("EM 0.0000  F1 0.0000  precision 0.0000  recall 0.0000  (n = 3; incomplete: 3 errors, scored zero)\n"),
        "{text}"
    );
    assert!(
        text.contains("per question   1.00 steps, 0.00 LLM calls (5.00 requests sent), "),
        "{text}"
    );
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(
        (
            &json["per_question"]["llm_calls"],
            &json["per_question"]["requests"]
        ),
        (&json!(0.0), &json!(5.0))
    );
    for line in std::fs::read_to_string(&results).unwrap().lines() {
        let run: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            (&run["usage"]["llm_calls"], &run["usage"]["requests"]),
            (&json!(0), &json!(5)),
            "{line}"
        );
    }
}
