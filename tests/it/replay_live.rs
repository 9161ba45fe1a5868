//! `replay` observes steps that a run file has no observation for only through a docstore given
//! with `--docstore`; without one, such a step is an error and nothing reaches the network.

use std::process::Command;

use wiremock::matchers::{method, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::fixture;

/// A run whose first step has no recorded observation.
fn run_file(dir: &std::path::Path, profile: &str, entity: &str) -> std::path::PathBuf {
    let run = serde_json::json!({
        "format": "react-docstore.run.v1",
        "question": "Which state did the Missouri Compromise admit along with Missouri?",
        "gold": "Maine",
        "profile": profile,
        "steps": [
            {"n": 1, "completions": [format!(" I need to search {entity}.\nAction 1: Search[{entity}]")]},
            {"n": 2, "completions": [" It admitted Maine.\nAction 2: Finish[Maine]"]}
        ]
    });
    let path = dir.join(format!("{profile}.json"));
    std::fs::write(&path, serde_json::to_string(&run).unwrap()).unwrap();
    path
}

fn replay(args: &[&str], run: &std::path::Path) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .arg("replay")
        .arg("--json")
        .args(args)
        .arg(run)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    serde_json::from_str(stdout.lines().next().expect("a run line")).unwrap()
}

#[test]
fn replay_observes_missing_steps_in_a_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_file(dir.path(), "default", "Missouri Compromise");
    let corpus = format!("corpus:{}", fixture("docstore/corpus-3.jsonl").display());
    let replayed = replay(&["--docstore", &corpus], &run);
    assert_eq!(replayed["answer"], "Maine");
    let observation = replayed["steps"][0]["observation"].as_str().unwrap();
    assert!(
        observation.starts_with("The Missouri Compromise is the title generally attached to the legislation"),
        "{observation}"
    );
}

#[tokio::test]
async fn replay_observes_missing_steps_on_wikipedia_under_the_runs_profile() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(query_param("search", "Colorado orogeny"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            std::fs::read(fixture("wikipedia/colorado_orogeny_hit.html")).unwrap(),
            "text/html",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let run = run_file(dir.path(), "paper", "Colorado orogeny");
    let replayed = replay(
        &[
            "--docstore",
            "wikipedia",
            "--wiki-url",
            &server.uri(),
            "--cache-dir",
            cache.to_str().unwrap(),
        ],
        &run,
    );
    let observation = replayed["steps"][0]["observation"].as_str().unwrap();
    // The paper profile's observation: its doubled period at the paragraph boundary.
    assert!(
        observation.contains("larger Yavapai orogeny.. The Colorado orogen"),
        "{observation}"
    );
}

#[tokio::test]
async fn without_docstore_an_unrecorded_step_is_an_error_naming_run_and_step_and_nothing_is_fetched() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            std::fs::read(fixture("wikipedia/colorado_orogeny_hit.html")).unwrap(),
            "text/html",
        ))
        .expect(0)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    // A results file: a whole run on line 1, a run whose first step was never observed on line 2.
    let recorded = std::fs::read_to_string(run_file(dir.path(), "default", "Colorado orogeny")).unwrap();
    let mut whole: serde_json::Value = serde_json::from_str(&recorded).unwrap();
    whole["steps"][0]["observation"] = "The Colorado orogeny was an episode of mountain building.".into();
    let results = dir.path().join("results.jsonl");
    std::fs::write(&results, format!("{whole}\n{recorded}\n")).unwrap();
    let single = dir.path().join("default.json");

    for (path, source) in [
        (&results, format!("{}, line 2", results.display())),
        (&single, single.display().to_string()),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
            .args(["replay", "--json", "--wiki-url", &server.uri(), "--cache-dir"])
            .arg(&cache)
            .arg(path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{source}: step 1 has no recorded observation, and replay reaches no docstore unless asked: give `--docstore` (`wikipedia`, `index:DIR`, `corpus:FILE`) to observe it"
            )),
            "{stderr}"
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        let runs: Vec<serde_json::Value> = stdout
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|line| line.get("summary").is_none())
            .collect();
        let last_run = runs.last().unwrap();
        assert_eq!(last_run["stopped"], "error");
        assert_eq!(
            last_run["error"],
            "the run file records no observation for step 1 and no docstore is configured"
        );
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
    assert!(!cache.exists(), "nothing was fetched, so nothing was cached");
}

#[test]
fn without_docstore_the_tools_given_still_observe_their_steps() {
    let dir = tempfile::tempdir().unwrap();
    let run = serde_json::json!({
        "format": "react-docstore.run.v1",
        "question": "What is six times seven?",
        "profile": "default",
        "tools": ["Calculate"],
        "steps": [
            {"n": 1, "completions": [" I calculate it.\nAction 1: Calculate[6 * 7]"]},
            {"n": 2, "completions": [" It is 42.\nAction 2: Finish[42]"]}
        ]
    });
    let path = dir.path().join("calculate.json");
    std::fs::write(&path, run.to_string()).unwrap();
    let replayed = replay(&["--tools", "calculate"], &path);
    assert_eq!(replayed["steps"][0]["observation"], "42");
    assert_eq!(replayed["answer"], "42");
}
