//! The task comes from the question file: `eval` refuses examples of another task before any
//! request, naming both tasks and both files; every results line records the question file's
//! task; `compare` scores a FEVER evaluation by label accuracy whichever FEVER examples made it.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

const FEVER: &str = "fixtures/fever/paper_dev.jsonl";
const HOTPOTQA: &str = "fixtures/hotpotqa/official.json";

/// A `/completions` server that finishes every question with `SUPPORTS` at once (as many choices
/// as `n` asks), counting requests.
#[derive(Clone, Default)]
struct SupportsServer {
    requests: Arc<AtomicUsize>,
}

impl Respond for SupportsServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let n = body["n"].as_u64().unwrap_or(1);
        let prompt = body["prompt"].as_str().unwrap_or_default();
        let text = if prompt.ends_with("Thought:") || n > 1 {
            " It is plain. So the answer is SUPPORTS.".to_owned()
        } else {
            let step = prompt.matches("\nObservation ").count() + 1;
            format!(" It is plain.\nAction {step}: Finish[SUPPORTS]")
        };
        let choices: Vec<Value> = (0..n)
            .map(|index| json!({"index": index, "text": text}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"choices": choices}))
    }
}

impl SupportsServer {
    async fn started() -> (SupportsServer, MockServer) {
        let model = SupportsServer::default();
        let server = crate::serve_posts(model.clone()).await;
        (model, server)
    }

    fn n_requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Runs the binary in the repository with `args`: stdout, stderr, exit code.
fn run(args: &[&str]) -> (String, String, i32) {
    let output = crate::binary()
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

/// `eval QUESTIONS --json --limit 3` of model `m` against `server`, into `out`, with `args`.
fn eval(questions: &str, server: &MockServer, out: &Path, args: &[&str]) -> (String, String, i32) {
    let uri = server.uri();
    let mut all = vec![
        "eval",
        questions,
        "--json",
        "--limit",
        "3",
        "--model",
        "m",
        "--api",
        "completions",
        "--base-url",
        &uri,
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    run(&all)
}

/// The `task` of every line of a results file.
fn recorded_tasks(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let run: Value = serde_json::from_str(line).unwrap();
            run["task"].as_str().unwrap_or("absent").to_owned()
        })
        .collect()
}

/// FEVER claims with HotpotQA's examples (and the other way round) are refused before the model
/// is asked anything, in one line naming the question file and its task, the examples' file and
/// theirs; nothing is written.
#[tokio::test(flavor = "multi_thread")]
async fn examples_of_another_task_are_refused_before_any_request_naming_both() {
    let (model, server) = SupportsServer::started().await;
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str], &str, &str, &str); 3] = [
        (
            FEVER,
            &["--fewshot", "fewshot/hotpotqa.txt"],
            "fever",
            "hotpotqa",
            "fewshot/hotpotqa.txt",
        ),
        (
            FEVER,
            &["--method", "cot", "--fewshot", "fewshot/hotpotqa.cot.txt"],
            "fever",
            "hotpotqa",
            "fewshot/hotpotqa.cot.txt",
        ),
        (
            HOTPOTQA,
            &["--docstore", "distractor", "--fewshot", "fewshot/fever.txt"],
            "hotpotqa",
            "fever",
            "fewshot/fever.txt",
        ),
    ];
    for (questions, args, task, examples_task, examples) in cases {
        let out = dir.path().join("refused.jsonl");
        let (_, stderr, code) = eval(questions, &server, &out, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        let message = stderr.trim_end();
        assert_eq!(message.lines().count(), 1, "{message}");
        for named in [
            format!("`{questions}`"),
            format!("task `{task}`"),
            format!("`{examples}` teach `{examples_task}`"),
        ] {
            assert!(message.contains(&named), "{args:?}: {named} not in {message}");
        }
        assert_eq!(model.n_requests(), 0, "{args:?}: the model was asked");
        assert!(!out.exists(), "{args:?}: nothing is written");
    }
}

/// Whatever FEVER examples an evaluation of FEVER claims is made with (the bundled ones, a
/// `--fewshot` file of either format), every line records `fever` and `compare` scores it by
/// accuracy; a HotpotQA file's lines record `hotpotqa`, Reflexion's trials' too.
#[tokio::test(flavor = "multi_thread")]
async fn every_line_records_the_question_files_task_and_compare_says_accuracy() {
    let (_model, server) = SupportsServer::started().await;
    let dir = tempfile::tempdir().unwrap();
    let made_with: [(&str, Vec<&str>); 3] = [
        ("bundled.jsonl", Vec::new()),
        ("file.jsonl", vec!["--fewshot", "fewshot/fever.txt"]),
        (
            "cot.jsonl",
            vec!["--method", "cot", "--fewshot", "fewshot/fever.cot.txt"],
        ),
    ];
    for (name, args) in &made_with {
        let out = dir.path().join(name);
        let (_, stderr, code) = eval(FEVER, &server, &out, args);
        assert!(code == 0 || code == 1, "{args:?}: {stderr}");
        let tasks = recorded_tasks(&out);
        assert_eq!(tasks, ["fever"; 3], "{args:?}");
        let out = out.to_str().unwrap();
        let (stdout, stderr, code) = run(&["compare", out, out]);
        assert_eq!(code, 0, "{stderr}");
        assert!(stdout.contains("accuracy"), "{args:?}: {stdout}");
    }
    let hotpotqa = dir.path().join("hotpotqa.jsonl");
    let (_, stderr, code) = eval(HOTPOTQA, &server, &hotpotqa, &["--docstore", "distractor"]);
    assert!(code == 0 || code == 1, "{stderr}");
    assert_eq!(recorded_tasks(&hotpotqa), ["hotpotqa"; 3]);
    // Reflexion's trials too (their prompt is Reflexion's, not the solver's).
    let trials = dir.path().join("trials.jsonl");
    let (_, stderr, code) = eval(
        HOTPOTQA,
        &server,
        &trials,
        &[
            "--docstore",
            "distractor",
            "--trials",
            "2",
            "--reflect",
            "reflexion",
        ],
    );
    assert!(code == 0 || code == 1, "{stderr}");
    let tasks = recorded_tasks(&trials);
    assert_eq!(tasks.len(), 6, "every question wrong, asked twice");
    assert!(tasks.iter().all(|task| task == "hotpotqa"), "{tasks:?}");
}
