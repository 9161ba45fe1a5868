//! One evaluation, defined once: against a local scripted model server, a resume with any setting
//! that changes answers is refused before any request (the file left byte for byte), `merge` of
//! two files differing in it is refused with the same words, and a resume with settings that do
//! not change answers goes on; a file of errors only pins nothing; every figure of a summary is
//! over the same questions; question files and results files are told apart; a hostile shard
//! record is refused by every reader in one line.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

const QUESTIONS: &str = "fixtures/hotpotqa/official.json";

/// A model on a port nothing listens on: for commands refused before they ask it.
const NEVER_ASKED: [&str; 4] = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"];

/// An OpenAI-compatible `/completions` server that answers every prompt `yes` (as many choices as
/// `n` asks), counting requests.
#[derive(Clone, Default)]
struct YesServer {
    requests: Arc<AtomicUsize>,
}

impl Respond for YesServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let n = body["n"].as_u64().unwrap_or(1);
        let prompt = body["prompt"].as_str().unwrap_or_default();
        let text = if prompt.ends_with("\n\nReflection:") {
            " I should answer no.".to_owned()
        } else if prompt.ends_with("Thought:") || n > 1 {
            " It is plain. So the answer is yes.".to_owned()
        } else {
            let step = prompt.matches("\nObservation ").count() + 1;
            format!(" It is plain.\nAction {step}: Finish[yes]")
        };
        let choices: Vec<Value> = (0..n)
            .map(|index| json!({"index": index, "text": text}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"choices": choices}))
    }
}

impl YesServer {
    async fn start(&self) -> MockServer {
        crate::serve_posts(self.clone()).await
    }

    /// A server answering as one, and a directory for what the test writes.
    async fn started() -> (YesServer, MockServer, tempfile::TempDir) {
        let model = YesServer::default();
        let server = model.start().await;
        (model, server, tempfile::tempdir().unwrap())
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

/// `eval QUESTIONS --docstore distractor --json` against `server`, into `out`, with `args`.
fn eval(server: &MockServer, out: &Path, args: &[&str]) -> (String, String, i32) {
    let mut all = vec!["--docstore", "distractor"];
    all.extend_from_slice(args);
    eval_file(QUESTIONS, server, out, &all)
}

/// `eval QUESTIONS --json` of model `m` (unless `args` name one) against `server`, into `out`.
fn eval_file(questions: &str, server: &MockServer, out: &Path, args: &[&str]) -> (String, String, i32) {
    let uri = server.uri();
    let model: &[&str] = if args.contains(&"--model") {
        &[]
    } else {
        &["--model", "m"]
    };
    let mut all = vec![
        "eval",
        questions,
        "--json",
        "--api",
        "completions",
        "--base-url",
        &uri,
    ];
    all.extend(["--out", out.to_str().unwrap()]);
    all.extend_from_slice(model);
    all.extend_from_slice(args);
    run(&all)
}

/// The message's one sentence that names the setting: `not one evaluation: they differ in X —`.
fn difference(stderr: &str) -> &str {
    let start = stderr
        .find("not one evaluation: they differ in ")
        .unwrap_or_else(|| panic!("no difference named: {stderr}"));
    let rest = &stderr[start..];
    &rest[..rest.find(" — ").unwrap()]
}

/// For each setting that changes answers: a resume with it changed is refused before any request,
/// the results file byte for byte as it was, naming the setting; `merge` of the two files refuses
/// them with the same words.
#[tokio::test(flavor = "multi_thread")]
async fn a_resume_with_another_setting_is_refused_and_merge_refuses_it_alike() {
    let (model, server, dir) = YesServer::started().await;
    // Another few-shot file: the bundled examples less the last one.
    let bundled = std::fs::read_to_string(crate::fixture("../fewshot/hotpotqa.txt")).unwrap();
    let cut = bundled
        .trim_end()
        .rsplit_once("\nQuestion:")
        .unwrap()
        .0
        .to_owned()
        + "\n";
    let fewshot = dir.path().join("five.txt");
    std::fs::write(&fewshot, cut).unwrap();
    let fewshot = fewshot.to_str().unwrap();
    // The setting, the first evaluation's flags, and the flags the resume changes.
    let fewshot_flag = format!("--fewshot {fewshot}");
    let cases = [
        ("model", "", "--model m2"),
        ("profile", "", "--profile paper"),
        ("few-shot examples", "", fewshot_flag.as_str()),
        (
            "samples and sample temperature",
            "--method cot-sc --samples 3",
            "--samples 5",
        ),
        (
            "samples and sample temperature",
            "--method cot-sc --samples 3",
            "--sample-temperature 1.5",
        ),
        ("temperature", "", "--temperature 0.5"),
        ("model options", "", "--llm-option top_p=0.9"),
        ("step budget", "", "--max-steps 5"),
        ("attempts", "--trials 2 --reflect none", "--reflect reflexion"),
        ("selection", "--shard 0/1 --limit 2", "--limit 3"),
    ];
    for (case_idx, (field, base, changed)) in cases.into_iter().enumerate() {
        let base: Vec<&str> = base.split_whitespace().collect();
        let changed: Vec<&str> = changed.split_whitespace().collect();
        let first = dir.path().join(format!("{case_idx}-first.jsonl"));
        let (_, stderr, code) = eval(&server, &first, &base);
        assert_eq!(code, 0, "{field}: {stderr}");
        let before = std::fs::read(&first).unwrap();
        let n_requests = model.n_requests();
        // The base flags (each with its value), the changed ones in place of theirs.
        let mut args: Vec<&str> = base
            .chunks(2)
            .filter(|pair| !changed.contains(&pair[0]))
            .flatten()
            .copied()
            .collect();
        args.extend_from_slice(&changed);
        let (_, refused, code) = eval(&server, &first, &args);
        assert_eq!(code, 2, "{field}: {refused}");
        assert_eq!(
            difference(&refused),
            format!("not one evaluation: they differ in {field}"),
            "{refused}"
        );
        assert!(refused.contains("pass another `--out`, or the same"), "{refused}");
        assert_eq!(model.n_requests(), n_requests, "{field}: no request");
        assert_eq!(
            std::fs::read(&first).unwrap(),
            before,
            "{field}: the file as it was"
        );

        // The same two settings as two files: merge refuses them in the same words.
        let second = dir.path().join(format!("{case_idx}-second.jsonl"));
        let (summary, stderr, code) = eval(&server, &second, &args);
        assert!(code == 0 || code == 1, "{field}: {stderr}");
        assert_ne!(summary, "", "{field}: an evaluation ran: {stderr}");
        let merged = dir.path().join(format!("{case_idx}-merged.jsonl"));
        let (_, stderr, code) = run(&[
            "merge",
            first.to_str().unwrap(),
            second.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{field}: {stderr}");
        assert_eq!(difference(&stderr), difference(&refused), "{stderr}");
        assert!(!merged.exists());
    }
}

/// What does not change answers may differ on resume: the questions already answered are not
/// asked again; a larger `--limit` of an unsharded evaluation widens it, and says so.
#[tokio::test(flavor = "multi_thread")]
async fn a_resume_with_only_settings_that_do_not_change_answers_goes_on() {
    let model = YesServer::default();
    let server = model.start().await;
    let other = YesServer::default();
    let other_server = other.start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.jsonl");
    let (_, stderr, code) = eval(&server, &out, &["--limit", "2"]);
    assert_eq!(code, 0, "{stderr}");
    let n_requests = model.n_requests();
    for args in [
        &["--limit", "2", "--concurrency", "4"][..],
        &["--limit", "2", "--llm-timeout", "30"],
    ] {
        let (summary, stderr, code) = eval(&server, &out, args);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        let summary: Value = serde_json::from_str(&summary).unwrap();
        assert_eq!(
            (summary["done"].as_u64(), summary["resumed"].as_u64()),
            (Some(2), Some(2))
        );
    }
    assert_eq!(model.n_requests(), n_requests, "nothing asked again");
    // Another server of the same model (`--base-url`), and a wider selection: only the new question.
    let (summary, stderr, code) = eval(&other_server, &out, &["--limit", "3"]);
    assert_eq!(code, 0, "{stderr}");
    let summary: Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(
        (summary["done"].as_u64(), summary["resumed"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(other.n_requests(), 1, "one question, one Finish");
    assert!(
        stderr.contains("held the evaluation of --limit 2: it is now the evaluation of --limit 3"),
        "{stderr}"
    );
}

/// A results file that holds only errors, made with other settings, pins nothing: the right
/// command goes on, and the errors are kept aside, not lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_file_of_errors_only_pins_nothing_and_is_kept_aside() {
    let (_model, server, dir) = YesServer::started().await;
    let out = dir.path().join("r.jsonl");
    // Five Wikipedia errors, as `eval` without `--docstore distractor` left them.
    let questions: Value =
        serde_json::from_str(&std::fs::read_to_string(crate::fixture("hotpotqa/official.json")).unwrap())
            .unwrap();
    let errors: Vec<String> = questions
        .as_array()
        .unwrap()
        .iter()
        .map(|question| {
            json!({"id": question["_id"], "question": question["question"], "steps": [],
                "answer": null, "stopped": "error", "error": "cannot reach Wikipedia",
                "model": "m", "docstore": {"kind": "wikipedia", "snapshot": null}})
            .to_string()
        })
        .collect();
    let held = errors.join("\n") + "\n";
    std::fs::write(&out, &held).unwrap();
    let (summary, stderr, code) = eval(&server, &out, &[]);
    assert_eq!(code, 0, "{stderr}");
    let summary: Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(
        (summary["done"].as_u64(), summary["errors"].as_u64()),
        (Some(3), Some(0))
    );
    let aside = dir.path().join("r.jsonl.set-aside");
    assert_eq!(std::fs::read_to_string(&aside).unwrap(), held, "kept aside");
    assert!(stderr.contains("r.jsonl.set-aside"), "{stderr}");
    // The aside file is no results file: a directory of results does not read it.
    let (_, stderr, code) = run(&["score", dir.path().to_str().unwrap(), QUESTIONS]);
    assert_eq!(code, 0, "{stderr}");
}

/// `score --json` of epochs and of trials with a question missing: the headline, the epochs'
/// figures and the trials' rows are over the same questions, the missing one counted wrong.
#[test]
fn every_figure_is_over_the_same_questions() {
    let dir = tempfile::tempdir().unwrap();
    let questions: Value =
        serde_json::from_str(&std::fs::read_to_string(crate::fixture("hotpotqa/official.json")).unwrap())
            .unwrap();
    let questions = questions.as_array().unwrap();
    let line = |question: &Value, attempt: (&str, u64), answer: &Value| {
        json!({"id": question["_id"], "question": question["question"], "steps": [],
            "answer": answer, "stopped": "finish", attempt.0: attempt.1})
        .to_string()
    };
    for kind in ["epoch", "trial"] {
        // Two of the three questions, each twice; the first right both times.
        let mut lines = Vec::new();
        for (idx, question) in questions[..2].iter().enumerate() {
            for attempt in 1..=2 {
                let answer = if idx == 0 {
                    question["answer"].clone()
                } else {
                    json!("wrong")
                };
                lines.push(line(question, (kind, attempt), &answer));
            }
        }
        let out = dir.path().join(format!("{kind}.jsonl"));
        std::fs::write(&out, lines.join("\n") + "\n").unwrap();
        let (stdout, stderr, code) = run(&["score", out.to_str().unwrap(), QUESTIONS, "--json"]);
        assert_eq!(code, 2, "a gold question has no run: incomplete; {stderr}");
        let scored: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(scored["n"], 3, "{scored}");
        assert_eq!(
            (&scored["missing"], &scored["incomplete"]),
            (&json!(1), &json!(true))
        );
        assert_eq!(scored["no_answer"], 1, "{scored}");
        match kind {
            "epoch" => {
                assert_eq!(scored["n_questions"], 3, "{scored}");
                assert_eq!(scored["n_attempts"], 4, "{scored}");
                // One question of three right in every epoch: each figure 1/3.
                for field in ["em", "mean_em", "majority_em"] {
                    assert!(
                        (scored[field].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9,
                        "{field}: {scored}"
                    );
                }
                assert!((scored["pass_at"]["1"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-9);
            }
            _ => assert_eq!(scored["trials_n"], 3, "{scored}"),
        }
    }
}

/// `eval` refuses a run file or a results file as its question file; `score`, `compare` and
/// `report` given a question file say what it is and which argument takes it.
#[test]
fn question_files_and_results_files_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    for runs in [
        "fixtures/runs/langchain/numbered.json",
        "fixtures/runs/trials/none.results.jsonl",
    ] {
        let out = dir.path().join("never.jsonl");
        let (_, stderr, code) =
            run(&[&["eval", runs, "--out", out.to_str().unwrap()][..], &NEVER_ASKED].concat());
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "`{runs}` holds runs (a run file, or `eval`'s results), not questions"
            )),
            "{stderr}"
        );
        assert!(!out.exists(), "nothing written");
    }
    // Every layout of question file, as distributed and as a user may save it (no newline at the
    // end: ReAct's files are one JSON array on one line, with none), given to every reader of
    // runs or results: one line naming what it is and the argument that takes it, no guess at a
    // cut line, nothing written.
    let bare = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text.trim_end()).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let fixture = |name: &str| std::fs::read_to_string(crate::fixture(name)).unwrap();
    let mut files: Vec<(String, &str)> = [
        (QUESTIONS, "a HotpotQA question file"),
        ("fixtures/hotpotqa/hf.json", "a HotpotQA question file"),
        ("fixtures/hotpotqa/simplified.json", "a HotpotQA question file"),
        ("fixtures/hotpotqa/official.jsonl", "a HotpotQA question file"),
        (
            "fixtures/react-notebook/data/hotpot_dev_v1_simplified.json",
            "a HotpotQA question file",
        ),
        ("fixtures/fever/paper_dev.jsonl", "a FEVER claim file"),
    ]
    .map(|(path, what)| (path.to_owned(), what))
    .to_vec();
    let one_line: Value = serde_json::from_str(&fixture("hotpotqa/official.json")).unwrap();
    files.extend([
        (
            bare("official-one-line.json", one_line.to_string()),
            "a HotpotQA question file",
        ),
        (
            bare("hf.json", fixture("hotpotqa/hf.json")),
            "a HotpotQA question file",
        ),
        (
            bare("official.jsonl", fixture("hotpotqa/official.jsonl")),
            "a HotpotQA question file",
        ),
        (
            bare("claims.jsonl", fixture("fever/paper_dev.jsonl")),
            "a FEVER claim file",
        ),
        (
            bare(
                "claims.json",
                format!("[{}]", fixture("fever/paper_dev.jsonl").trim().replace('\n', ",")),
            ),
            "a FEVER claim file",
        ),
    ]);
    let results = "fixtures/runs/trials/none.results.jsonl";
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for (path, what) in &files {
        let path = path.as_str();
        let not_results = format!(
            "error: `{path}` is {what}, not results: `eval {path}` runs its questions, and `score RESULTS {path}` scores results against it\n"
        );
        let not_runs = format!(
            "error: `{path}` is {what}, not runs: `replay`, `export` and `--fewshot-from` take the runs `ask --record` and `eval --out` write; `eval {path}` runs its questions\n"
        );
        // `export` and `--fewshot-from` read `*.jsonl` as results, anything else as run files.
        let as_runs = if path.ends_with(".jsonl") {
            &not_results
        } else {
            &not_runs
        };
        let readers: [(Vec<&str>, &String); 8] = [
            (vec!["score", path, QUESTIONS], &not_results),
            (vec!["compare", results, path], &not_results),
            (vec!["compare", path, results], &not_results),
            (vec!["report", path, "--out", out], &not_results),
            (vec!["merge", path, "--out", out], &not_results),
            (vec!["replay", path], &not_runs),
            (vec!["export", path, "--format", "alpaca", "--out", out], as_runs),
            (
                [
                    &[
                        "eval",
                        QUESTIONS,
                        "--fewshot-from",
                        path,
                        "--shots",
                        "1",
                        "--out",
                        out,
                    ][..],
                    &NEVER_ASKED,
                ]
                .concat(),
                as_runs,
            ),
        ];
        for (args, expected) in readers {
            let (stdout, stderr, code) = run(&args);
            assert_eq!((code, stdout.as_str()), (2, ""), "{args:?}: {stderr}");
            assert_eq!(&stderr, expected, "{args:?}");
            assert!(!Path::new(out).exists(), "{args:?}: nothing written");
        }
    }
}

/// A results line whose shard record claims 20 billion questions: every reader refuses it in one
/// line naming the file and the line, under a 1 GiB address-space limit (no reader allocates by
/// what a line claims).
#[test]
fn a_hostile_shard_record_is_refused_by_every_reader_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines: Vec<Value> = std::fs::read_to_string(crate::fixture("runs/trials/none.results.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    lines.truncate(2);
    lines[0]["shard"] = json!({"index": 0, "count": 1, "position": 0, "selected": 2});
    lines[1]["shard"] = json!({"index": 0, "count": 1, "position": 1, "selected": 20_000_000_000_u64});
    let hostile = dir.path().join("hostile.jsonl");
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(&hostile, text.join("\n") + "\n").unwrap();
    let path = hostile.to_str().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let readers: [Vec<&str>; 6] = [
        vec!["score", path, QUESTIONS],
        vec!["merge", path, "--out", out],
        vec!["compare", path, path],
        vec!["report", path, "--out", out],
        vec!["export", path, "--format", "openai-chat", "--out", out],
        [
            &["eval", QUESTIONS, "--fewshot-from", path, "--shots", "1"][..],
            &NEVER_ASKED,
            &["--out", out],
        ]
        .concat(),
    ];
    for args in readers {
        let binary = env!("CARGO_BIN_EXE_react-docstore");
        let quoted: Vec<String> = args.iter().map(|arg| format!("'{arg}'")).collect();
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v 1048576; exec '{binary}' {}", quoted.join(" ")))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("results file `{path}`, line 2: shard record")),
            "{args:?}: {stderr}"
        );
    }
}

/// The refusals of `--reflect` that no setting can make work, each before any model call: a FEVER
/// file (Reflexion's prompt asks a question), and `--api tools` (it sends no text prompt).
#[test]
fn reflect_refusals_name_what_cannot_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never.jsonl");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 2] = [
        (
            &[
                "fixtures/fever/paper_dev.jsonl",
                "--limit",
                "2",
                "--api",
                "completions",
            ],
            "`fixtures/fever/paper_dev.jsonl` is a FEVER file: run its trials with `--reflect none`",
        ),
        (
            &[QUESTIONS, "--docstore", "distractor", "--api", "tools"],
            "`--reflect reflexion` writes Reflexion's text prompt; `--api tools` sends no text prompt",
        ),
    ];
    for (args, message) in cases {
        let mut all = vec!["eval"];
        all.extend_from_slice(args);
        all.extend(["--trials", "2", "--reflect", "reflexion", "--out", out]);
        all.extend_from_slice(&NEVER_ASKED);
        let (_, stderr, code) = run(&all);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!Path::new(out).exists(), "nothing written");
    }
}

/// A FEVER evaluation with its own few-shot file is FEVER to every command: its runs record the
/// task, so `compare` and `report` say accuracy, not EM/F1; a replay of a run whose few-shot
/// file is gone ends in an error naming it, never with other examples.
#[tokio::test(flavor = "multi_thread")]
async fn a_fever_evaluation_with_its_own_examples_is_fever_to_every_command() {
    let (_model, server, dir) = YesServer::started().await;
    let fewshot = dir.path().join("claims.txt");
    std::fs::copy(crate::fixture("../fewshot/fever.txt"), &fewshot).unwrap();
    let out = dir.path().join("fever.jsonl");
    let fewshot = fewshot.to_str().unwrap();
    let (_, stderr, code) = eval_file(
        "fixtures/fever/paper_dev.jsonl",
        &server,
        &out,
        &["--limit", "3", "--fewshot", fewshot],
    );
    assert!(code == 0 || code == 1, "{stderr}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.lines().all(|line| line.contains(r#""task":"fever""#)),
        "{text}"
    );
    let out = out.to_str().unwrap();
    let (stdout, stderr, code) = run(&["compare", out, out]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("accuracy"), "{stdout}");
    let report = dir.path().join("r.html");
    let (_, stderr, code) = run(&["report", out, "--out", report.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(std::fs::read_to_string(&report).unwrap().contains("accuracy"));

    std::fs::remove_file(fewshot).unwrap();
    let (_, stderr, code) = run(&["replay", out]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("cannot set its method up again") && stderr.contains("claims.txt"),
        "{stderr}"
    );
}

/// A model server that is not up yet (connections refused: nothing listens on its port) stops
/// the evaluation at once, the questions that met it recorded as errors that may fix themselves;
/// once a server answers on that port, the same command asks them again — no `--retry-errors` —
/// and scores as an evaluation that met no outage.
#[tokio::test(flavor = "multi_thread")]
async fn after_the_model_server_refused_connections_the_same_command_scores_as_without_the_outage() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::refused_port();
    let base_url = format!("http://127.0.0.1:{port}");
    let outage = dir.path().join("outage.jsonl");
    let eval_at = |base_url: &str, out: &Path| {
        run(&[
            "eval",
            "fixtures/hotpotqa/simplified.json",
            "--docstore",
            "corpus:fixtures/docstore/corpus-3.jsonl",
            "--json",
            "--api",
            "completions",
            "--model",
            "m",
            "--base-url",
            base_url,
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let (_, stderr, code) = eval_at(&base_url, &outage);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "connection refused, nothing listens at 127.0.0.1:{port}"
        )) && stderr.contains(
            "the questions that met it are recorded as errors, asked again once the server answers"
        ),
        "{stderr}"
    );
    let recorded: Vec<Value> = std::fs::read_to_string(&outage)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(
        !recorded.is_empty(),
        "the questions that met the refusal are recorded"
    );
    assert!(
        recorded
            .iter()
            .all(|run| run["stopped"] == "error" && run["error_kind"] == "transient"),
        "{recorded:?}"
    );

    // The server is up, on the same port.
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let model = YesServer::default();
    let server = MockServer::builder().listener(listener).start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(model.clone())
        .mount(&server)
        .await;
    let (resumed, stderr, code) = eval_at(&base_url, &outage);
    assert_eq!(code, 0, "{stderr}");
    let (clean, stderr, code) = eval_at(&base_url, &dir.path().join("clean.jsonl"));
    assert_eq!(code, 0, "{stderr}");
    let resumed: Value = serde_json::from_str(&resumed).unwrap();
    let clean: Value = serde_json::from_str(&clean).unwrap();
    assert_eq!(
        (resumed["done"].as_u64(), resumed["errors"].as_u64()),
        (Some(6), Some(0)),
        "{resumed}"
    );
    assert_eq!(resumed["em"], clean["em"], "{resumed}\n{clean}");
    assert!(clean["em"].as_f64().unwrap() > 0.0, "{clean}");
}
