//! `replay` observes steps that a run file has no observation for through the configured docstore.

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
