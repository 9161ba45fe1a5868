//! The whole pipeline from the command line, offline: `ask` against a mock OpenAI-compatible
//! server and a mock Wikipedia serving the recorded pages, in both profiles; `--record` then
//! `replay` gives the identical run.

use std::process::Command;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};
use wiremock::matchers::{method, path, query_param};
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

async fn wikipedia() -> MockServer {
    let server = MockServer::start().await;
    for (search, page) in [
        ("Colorado orogeny", "colorado_orogeny_hit.html"),
        ("Colorado orogenyy", "colorado_orogenyy_similar.html"),
    ] {
        let body = std::fs::read(fixture(&format!("wikipedia/{page}"))).unwrap();
        Mock::given(method("GET"))
            .and(path("/w/index.php"))
            .and(query_param("search", search))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/html; charset=UTF-8"))
            .mount(&server)
            .await;
    }
    server
}

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
    let wiki = wikipedia().await;
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
    let wiki = wikipedia().await;
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

    let replayed = Command::new(get_cargo_bin("react-docstore"))
        .args(["replay", "--json"])
        .arg(&record)
        .output()
        .unwrap();
    assert!(
        replayed.status.success(),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    let replayed: serde_json::Value = serde_json::from_str(
        String::from_utf8(replayed.stdout)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    for field in ["question", "answer", "stopped", "steps", "profile", "model"] {
        assert_eq!(replayed[field], recorded[field], "{field}");
    }
    // Replay needs no network: it made no request.
    assert_eq!(wiki.received_requests().await.unwrap().len(), 2);
}
