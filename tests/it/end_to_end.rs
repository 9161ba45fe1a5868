//! The whole pipeline from the command line, offline: `ask` against a mock OpenAI-compatible
//! server and a mock Wikipedia serving the recorded pages, in both profiles; `--record` then
//! `replay` gives the identical run.

use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::llm::{Sequence, model_server};
use crate::{fixture, regex_escape};

const QUESTION: &str =
    "What is the elevation range for the area that the eastern sector of the Colorado orogeny extends into?";

/// What the model writes: a Search that hits, a Lookup, a Search that misses, then Finish.
const COMPLETIONS: [&str; 4] = [
    " I need to search Colorado orogeny, find the area that the eastern sector of the Colorado orogeny extends into.\nAction 1: Search[Colorado orogeny]",
    " It does not say where the eastern sector is. Let me look up High Plains.\nAction 2: Lookup[High Plains]",
    " The eastern sector extends into the High Plains. I need to search Colorado orogenyy.\nAction 3: Search[Colorado orogenyy]\nObservation 3: invented",
    " High Plains rise in elevation from around 1,800 to 7,000 ft, so the answer is 1,800 to 7,000 ft.\nAction 4: Finish[1,800 to 7,000 ft]",
];

fn react_docstore(model: &MockServer, wiki: &MockServer, cache: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(get_cargo_bin("react-docstore"));
    command
        .args(args)
        .args(["--base-url", &format!("{}/v1", model.uri()), "--model", "gpt-4"])
        .args(["--wiki-url", &wiki.uri()])
        .arg("--cache-dir")
        .arg(cache)
        .env_remove("OPENAI_API_KEY")
        .env_remove("REACT_PROFILE")
        .env_remove("REACT_WIKI_URL")
        .env("NO_COLOR", "1");
    command
}

fn settings(servers: &[&MockServer], dir: &std::path::Path) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    settings.set_prepend_module_to_snapshot(true);
    for server in servers {
        settings.add_filter(&regex_escape(&server.uri()), "[SERVER]");
    }
    settings.add_filter(&regex_escape(&dir.display().to_string()), "[TMP]");
    settings
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_reaches_finish_against_a_mock_model_and_a_mock_wikipedia() {
    let wiki = crate::mock_wikipedia().await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    for (name, profile) in [("default", "default"), ("paper", "paper")] {
        let model = model_server("chat/completions", Sequence::chat(&COMPLETIONS)).await;
        let args = ["ask", QUESTION, "--profile", profile];
        settings(&[&model, &wiki], dir.path()).bind(|| {
            assert_cmd_snapshot!(
                format!("ask_{name}"),
                react_docstore(&model, &wiki, &cache, &args)
            );
        });
        assert_eq!(model.received_requests().await.unwrap().len(), 4);
    }
    // The second profile's searches came from the page cache: one request per page in all.
    assert_eq!(wiki.received_requests().await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_json_records_a_run_that_replays_identically() {
    let wiki = crate::mock_wikipedia().await;
    let model = model_server("chat/completions", Sequence::chat(&COMPLETIONS)).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let record = dir.path().join("run.json");
    let record_arg = record.display().to_string();
    let mut ask = react_docstore(
        &model,
        &wiki,
        &cache,
        &["ask", QUESTION, "--json", "--record", &record_arg],
    );
    settings(&[&model, &wiki], dir.path()).bind(|| assert_cmd_snapshot!("ask_json", ask));
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();

    // The replay may reach a Wikipedia that expects no request (and a cache it has never filled);
    // it is given the recording without what it derives, which it must rebuild from the completions.
    let offline_wiki = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(404))
        .expect(0)
        .mount(&offline_wiki)
        .await;
    let stripped = dir.path().join("stripped.json");
    std::fs::write(
        &stripped,
        crate::replay::without_derived_fields(&recorded).to_string(),
    )
    .unwrap();
    let replayed = Command::new(get_cargo_bin("react-docstore"))
        .args([
            "replay",
            "--json",
            "--wiki-url",
            &offline_wiki.uri(),
            "--cache-dir",
        ])
        .arg(dir.path().join("replay-cache"))
        .arg(&stripped)
        .env("REACT_WIKI_URL", offline_wiki.uri())
        .output()
        .unwrap();
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    let mut replayed: serde_json::Value = serde_json::from_str(
        String::from_utf8(replayed.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let source = replayed.as_object_mut().unwrap().remove("source").unwrap();
    assert_eq!(source["file"].as_str(), stripped.to_str());
    // What replay derives, written out by hand: each thought and action as the completions give
    // them (step 3's invented observation cut off), the answer, the stop, the prompt's examples.
    let steps = replayed["steps"].as_array().unwrap();
    let derived: Vec<(&str, &str)> = steps
        .iter()
        .map(|step| {
            (
                step["thought"].as_str().unwrap(),
                step["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        derived,
        [
            (
                "I need to search Colorado orogeny, find the area that the eastern sector of the Colorado orogeny extends into.",
                "Search[Colorado orogeny]"
            ),
            (
                "It does not say where the eastern sector is. Let me look up High Plains.",
                "Lookup[High Plains]"
            ),
            (
                "The eastern sector extends into the High Plains. I need to search Colorado orogenyy.",
                "Search[Colorado orogenyy]"
            ),
            (
                "High Plains rise in elevation from around 1,800 to 7,000 ft, so the answer is 1,800 to 7,000 ft.",
                "Finish[1,800 to 7,000 ft]"
            ),
        ]
    );
    assert!(
        steps[2]["observation"]
            .as_str()
            .unwrap()
            .starts_with("Could not find Colorado orogenyy. Similar: ['Colorado orogeny', ")
    );
    assert_eq!(replayed["answer"], "1,800 to 7,000 ft");
    assert_eq!(replayed["stopped"], "finish");
    assert_eq!(replayed["fewshot"], "hotpotqa");
    assert_eq!(replayed["usage"]["llm_calls"], 4);
    assert_eq!(replayed["usage"]["invalid_actions"], 0);
    // The rest is the recording's, carried over unchanged.
    assert_eq!(replayed, recorded);
    // Replay needs no network: the Wikipedia it was pointed at saw no request.
    offline_wiki.verify().await;
}

/// A model server for `eval`: for each question (read from the prompt's last `Question:` line)
/// it searches the question's fourth context title, then finishes with the gold answer. It answers
/// the first `open` questions it is asked; the later ones it holds for an hour.
struct QuestionModel {
    scripts: Vec<(String, String, String)>,
    open: usize,
    asked: std::sync::Mutex<Vec<String>>,
}

impl wiremock::Respond for QuestionModel {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        let prompt = body["prompt"].as_str().unwrap();
        let (question, step) = crate::react_question_and_step(prompt);
        let order = {
            let mut asked = self.asked.lock().unwrap();
            if !asked.iter().any(|known| known == question) {
                asked.push(question.to_owned());
            }
            asked.iter().position(|known| known == question).unwrap()
        };
        let (_, title, answer) = self.scripts.iter().find(|(q, _, _)| q == question).unwrap();
        let text = match step {
            1 => format!(" I need to search {title}.\nAction 1: Search[{title}]"),
            _ => format!(" So the answer is {answer}.\nAction {step}: Finish[{answer}]"),
        };
        let response = ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 20}
        }));
        match order < self.open {
            true => response,
            false => response.set_delay(std::time::Duration::from_secs(3600)),
        }
    }
}

fn results_ids(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .map(|run| run["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_killed_half_way_resumes_with_each_question_once() {
    let questions = fixture("hotpotqa/official.json");
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&questions).unwrap()).unwrap();
    let scripts: Vec<(String, String, String)> = records
        .iter()
        .map(|record| {
            let title = record["context"][3][0].as_str().unwrap().to_owned();
            let answer = record["answer"].as_str().unwrap().to_owned();
            (record["question"].as_str().unwrap().to_owned(), title, answer)
        })
        .collect();
    // The first evaluation's model answers one question and holds the next; the second's answers all.
    let model_server = |open: usize| {
        let scripts = scripts.clone();
        async move {
            let model = MockServer::start().await;
            Mock::given(method("POST"))
                .and(path("/v1/completions"))
                .respond_with(QuestionModel {
                    scripts,
                    open,
                    asked: std::sync::Mutex::new(Vec::new()),
                })
                .mount(&model)
                .await;
            model
        }
    };
    let (holding, answering) = (model_server(1).await, model_server(records.len()).await);
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let eval = |model: &MockServer| {
        let mut command = Command::new(get_cargo_bin("react-docstore"));
        command
            .arg("eval")
            .arg(&questions)
            .args([
                "--docstore",
                "distractor",
                "--api",
                "completions",
                "--concurrency",
                "1",
                "--json",
            ])
            .args(["--base-url", &format!("{}/v1", model.uri()), "--model", "mock"])
            .arg("--out")
            .arg(&results)
            .env_remove("OPENAI_API_KEY")
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        command
    };

    // Kill the first evaluation once its one answered question is on disk (the next is held).
    let mut child = eval(&holding).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while results_ids(&results).is_empty() {
        assert!(std::time::Instant::now() < deadline, "no result within 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let done_before = results_ids(&results).len();
    assert_eq!(done_before, 1);

    let output = eval(&answering).output().unwrap();
    assert!(output.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (summary["n"].as_u64(), summary["em"].as_f64()),
        (Some(3), Some(1.0))
    );
    let mut ids = results_ids(&results);
    ids.sort();
    let mut expected: Vec<String> = records
        .iter()
        .map(|r| r["_id"].as_str().unwrap().to_owned())
        .collect();
    expected.sort();
    assert_eq!(ids, expected, "each question exactly once");
    // Each question searched its own context paragraphs (the distractor setting).
    for line in std::fs::read_to_string(&results).unwrap().lines() {
        let run: serde_json::Value = serde_json::from_str(line).unwrap();
        let observation = run["steps"][0]["observation"].as_str().unwrap();
        assert!(!observation.starts_with("Could not find"), "{observation}");
    }
    // The resumed question made no model call again: two calls for each question not yet recorded.
    let n_calls = answering.received_requests().await.unwrap().len();
    assert_eq!(n_calls, 2 * (records.len() - done_before));
}

#[test]
fn options_that_cannot_work_together_are_refused_before_anything_runs() {
    let refused = |args: &[&str]| {
        let mut command = Command::new(get_cargo_bin("react-docstore"));
        command
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1");
        command
    };
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    settings.set_prepend_module_to_snapshot(true);
    settings.bind(|| {
        assert_cmd_snapshot!(
            "refused_distractor_outside_eval",
            refused(&["explore", "--docstore", "distractor", "Search[x]"])
        );
        assert_cmd_snapshot!(
            "refused_tools_in_paper",
            refused(&[
                "explore",
                "--profile",
                "paper",
                "--tools",
                "calculate",
                "Calculate[1+1]"
            ])
        );
        assert_cmd_snapshot!(
            "refused_distractor_without_context",
            refused(&[
                "eval",
                "fixtures/hotpotqa/simplified.json",
                "--docstore",
                "distractor",
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:9/v1"
            ])
        );
    });
}

#[test]
fn score_of_predictions_that_answer_nothing_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let predictions = dir.path().join("pred.json");
    std::fs::write(&predictions, r#"{"answer": {}}"#).unwrap();
    let output = Command::new(get_cargo_bin("react-docstore"))
        .arg("score")
        .arg(&predictions)
        .arg(fixture("hotpotqa/official.json"))
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        (report["n"].as_u64(), report["em"].as_f64()),
        (Some(3), Some(0.0))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_today_states_the_date_in_the_prompt() {
    const FINISH: &str = " I know it.\nAction 1: Finish[Arthur's Magazine]";
    let model = model_server("chat/completions", Sequence::chat(&[FINISH])).await;
    let output = Command::new(get_cargo_bin("react-docstore"))
        .args([
            "ask",
            "Which magazine was started first?",
            "--today",
            "2026-11-22",
            "--model",
            "gpt-4",
        ])
        .args(["--base-url", &format!("{}/v1", model.uri())])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Arthur's Magazine\n");
    let requests = model.received_requests().await.unwrap();
    let body = String::from_utf8_lossy(&requests[0].body);
    assert!(
        body.contains("Today is 2026-11-22.\\nHere are some examples."),
        "{body}"
    );
}
