//! `--cache` against a local scripted model server whose every reply is numbered, so a reply
//! served twice shows: an evaluation run again asks nothing and answers the same; a backoff method
//! after its two halves asks nothing; epochs and CoT-SC's repeated requests each get their own
//! reply; eight shards writing one cache at once lose and corrupt no entry; no API key reaches the
//! cache; `cache info|clear|prune` manage it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

use crate::{output_within_30s, serve_posts};

const N_QUESTIONS: usize = 16;
const API_KEY: &str = "sk-cache-test-0123456789";

/// A `/completions` model that numbers its replies. ReAct: `Finish[yes]` for an even number,
/// `Finish[]` (no answer: a backoff method backs off) for an odd one, the reply's number in the
/// thought; with `unique_answers`, `Finish[reply N]` for every question. CoT: one choice whatever
/// `n` asks (so CoT-SC asks again for the rest, the same request each time), `Answer: yes`.
/// `echo_key`: the reply quotes the bearer token it was sent, as a hostile server might.
#[derive(Clone, Default)]
struct NumberingModel {
    n_replies: Arc<AtomicUsize>,
    unique_answers: bool,
    echo_key: bool,
}

impl Respond for NumberingModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let number = self.n_replies.fetch_add(1, Ordering::SeqCst) + 1;
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let prompt = body["prompt"].as_str().unwrap();
        let question = prompt.rsplit_once("\nQuestion: Is ").unwrap().1;
        let even = question
            .split_once(' ')
            .unwrap()
            .0
            .parse::<usize>()
            .unwrap()
            .is_multiple_of(2);
        let text = if prompt.ends_with("Thought:") {
            format!(" Sample {number}.\nAnswer: yes")
        } else if self.unique_answers {
            format!(" Reply {number}.\nAction 1: Finish[reply {number}]")
        } else if even {
            format!(" Reply {number}.\nAction 1: Finish[yes]")
        } else {
            format!(" Reply {number}.\nAction 1: Finish[]")
        };
        let mut response = json!({
            "id": format!("cmpl-{number}"), "object": "text_completion", "model": "m",
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        });
        if self.echo_key {
            let bearer = request.headers.get("authorization").unwrap().to_str().unwrap();
            response["system_fingerprint"] = json!(bearer);
        }
        ResponseTemplate::new(200).set_body_json(response)
    }
}

fn write_inputs(dir: &Path) -> PathBuf {
    write_questions(dir, N_QUESTIONS)
}

/// `n` questions `Is {i} even?` (ids `q000`…) and a one-page corpus the model never searches.
fn write_questions(dir: &Path, n: usize) -> PathBuf {
    let questions: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "_id": format!("q{i:03}"),
                "question": format!("Is {i} even?"),
                "answer": if i % 2 == 0 { "yes" } else { "no" },
                "type": "comparison",
            })
        })
        .collect();
    let path = dir.join("questions.json");
    std::fs::write(&path, serde_json::to_string(&questions).unwrap()).unwrap();
    std::fs::write(
        dir.join("pages.jsonl"),
        "{\"title\": \"Even\", \"text\": \"An even number is divisible by two.\"}\n",
    )
    .unwrap();
    path
}

/// `eval questions.json --out OUT ARGS` against `model`, in `dir`, with an API key.
fn eval_command(dir: &Path, model: &MockServer, out: &str, args: &[&str]) -> std::process::Command {
    let mut command = crate::binary();
    command
        .current_dir(dir)
        .args(["eval", "questions.json", "--out", out])
        .args(crate::completions_model(&format!("{}/v1", model.uri())))
        .args(["--api-key", API_KEY, "--docstore", "corpus:pages.jsonl"])
        .args(
            ["--samples", "3"]
                .iter()
                .filter(|_| args.iter().any(|arg| arg.contains("cot-sc"))),
        )
        .args(args)
        .env_remove("REACT_CACHE_DIR");
    command
}

fn eval(dir: &Path, model: &MockServer, out: &str, args: &[&str]) -> (String, String) {
    let (stdout, stderr, code) = output_within_30s(&mut eval_command(dir, model, out, args), "an evaluation");
    assert!(code == 0 || code == 1, "exit {code}: {stderr}");
    assert!(!stderr.contains("ignoring the reply cache entry"), "{stderr}");
    (stdout, stderr)
}

fn results(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Each run's answer and samples, by question id and attempt.
fn answers(path: &Path) -> BTreeMap<(String, u64), (Value, Value)> {
    results(path)
        .into_iter()
        .map(|run| {
            let attempt = run.get("epoch").and_then(Value::as_u64).unwrap_or(0);
            let id = run["id"].as_str().unwrap().to_owned();
            let samples = run.get("samples").cloned().unwrap_or(Value::Null);
            ((id, attempt), (run["answer"].clone(), samples))
        })
        .collect()
}

async fn n_requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

/// Every file under `dir`, its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    files
}

fn cache_entries(dir: &Path) -> usize {
    files_under(dir)
        .iter()
        .filter(|(path, _)| path.extension().is_some_and(|ext| ext == "json"))
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_evaluation_run_again_asks_nothing_and_answers_the_same() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(NumberingModel::default()).await;
    let (stdout, _) = eval(dir.path(), &model, "first.jsonl", &["--cache=replies"]);
    assert_eq!(n_requests(&model).await, N_QUESTIONS);
    assert!(
        stdout.contains(&format!(
            "cache          0 of {N_QUESTIONS} LLM calls answered by the cache"
        )),
        "{stdout}"
    );
    let (stdout, _) = eval(dir.path(), &model, "second.jsonl", &["--cache=replies"]);
    assert_eq!(
        n_requests(&model).await,
        N_QUESTIONS,
        "the second run asked the model"
    );
    assert_eq!(
        answers(&dir.path().join("first.jsonl")),
        answers(&dir.path().join("second.jsonl"))
    );
    let saved = N_QUESTIONS * 100;
    let line = format!(
        "cache          {N_QUESTIONS} of {N_QUESTIONS} LLM calls answered by the cache, {saved} prompt and {} completion tokens saved",
        N_QUESTIONS * 10
    );
    assert!(stdout.contains(&line), "{stdout}");
    // Each run records its calls and those the cache answered; the lines are run.v2 files.
    for (file, hits) in [("first.jsonl", json!([])), ("second.jsonl", json!([1]))] {
        for run in results(&dir.path().join(file)) {
            assert_eq!(run["format"], "react-docstore.run.v2");
            assert_eq!(run["cache"]["calls"], 1, "{run}");
            assert_eq!(run["cache"]["hits"], hits, "{run}");
            assert_eq!(crate::docs::validate_run(&run), Vec::<String>::new());
        }
    }
    let (json, _) = eval(dir.path(), &model, "third.jsonl", &["--cache=replies", "--json"]);
    let summary: Value = serde_json::from_str(&json).unwrap();
    let expected = json!({"calls": N_QUESTIONS, "hits": N_QUESTIONS, "saved": {"prompt_tokens": saved, "completion_tokens": N_QUESTIONS * 10}});
    assert_eq!(summary["cache"], expected);
    // Without `--cache` the model is asked, and no line says anything of a cache.
    eval(dir.path(), &model, "uncached.jsonl", &[]);
    assert_eq!(n_requests(&model).await, 2 * N_QUESTIONS);
    for run in results(&dir.path().join("uncached.jsonl")) {
        assert!(run.get("cache").is_none(), "{run}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_backoff_after_its_two_halves_asks_nothing_and_samples_are_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(NumberingModel::default()).await;
    eval(dir.path(), &model, "react.jsonl", &["--cache=replies"]);
    let after_react = n_requests(&model).await;
    eval(
        dir.path(),
        &model,
        "cot-sc.jsonl",
        &["--cache=replies", "--method", "cot-sc"],
    );
    // The server sends one choice whatever `n` asks: three requests a question, two of them the
    // same request, each answered by its own reply.
    assert_eq!(n_requests(&model).await - after_react, 3 * N_QUESTIONS);
    for run in results(&dir.path().join("cot-sc.jsonl")) {
        let samples: Vec<&str> = run["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|sample| sample["completion"].as_str().unwrap())
            .collect();
        assert_eq!(samples.len(), 3, "{run}");
        let mut distinct = samples.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 3, "one reply served to two requests: {samples:?}");
    }
    let before = n_requests(&model).await;
    eval(
        dir.path(),
        &model,
        "backoff.jsonl",
        &["--cache=replies", "--method", "react-then-cot-sc"],
    );
    assert_eq!(
        n_requests(&model).await,
        before,
        "react-then-cot-sc asked the model"
    );
    let cot_sc = answers(&dir.path().join("cot-sc.jsonl"));
    let mut backed_off = 0;
    for run in results(&dir.path().join("backoff.jsonl")) {
        let id = run["id"].as_str().unwrap().to_owned();
        if run.get("backoff").is_some() {
            backed_off += 1;
            assert_eq!(run["samples"], cot_sc[&(id, 0)].1, "{run}");
        }
        assert_eq!(
            run["cache"]["hits"].as_array().unwrap().len() as u64,
            run["cache"]["calls"]
        );
    }
    assert_eq!(backed_off, N_QUESTIONS / 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_epoch_is_served_another_epochs_reply() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(NumberingModel {
        unique_answers: true,
        ..NumberingModel::default()
    })
    .await;
    let args = ["--cache=replies", "--epochs", "2"];
    eval(dir.path(), &model, "first.jsonl", &args);
    assert_eq!(n_requests(&model).await, 2 * N_QUESTIONS);
    let first = answers(&dir.path().join("first.jsonl"));
    assert_eq!(first.len(), 2 * N_QUESTIONS);
    for i in 0..N_QUESTIONS {
        let id = format!("q{i:03}");
        assert_ne!(
            first[&(id.clone(), 1)],
            first[&(id, 2)],
            "both epochs got one reply"
        );
    }
    eval(dir.path(), &model, "second.jsonl", &args);
    assert_eq!(n_requests(&model).await, 2 * N_QUESTIONS);
    assert_eq!(first, answers(&dir.path().join("second.jsonl")));
}

#[tokio::test(flavor = "multi_thread")]
async fn eight_shards_writing_one_cache_lose_and_corrupt_no_entry() {
    const N_QUESTIONS: usize = 64;
    let dir = tempfile::tempdir().unwrap();
    write_questions(dir.path(), N_QUESTIONS);
    let model = serve_posts(NumberingModel {
        unique_answers: true,
        ..NumberingModel::default()
    })
    .await;
    let mut children: Vec<_> = (0..8)
        .map(|index| {
            let out = format!("shard-{index}.jsonl");
            let shard = format!("{index}/8");
            let args = ["--cache=replies", "--shard", &shard, "--concurrency", "4"];
            eval_command(dir.path(), &model, &out, &args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in &mut children {
        let status = child.wait().unwrap();
        assert!(status.code().is_some_and(|code| code <= 1), "{status}");
    }
    let mut sharded = BTreeMap::new();
    for index in 0..8 {
        sharded.extend(answers(&dir.path().join(format!("shard-{index}.jsonl"))));
    }
    assert_eq!(sharded.len(), N_QUESTIONS);
    assert_eq!(n_requests(&model).await, N_QUESTIONS);
    let cache = dir.path().join("replies");
    assert_eq!(cache_entries(&cache), N_QUESTIONS, "an entry was lost");
    for (path, bytes) in files_under(&cache) {
        assert!(
            serde_json::from_slice::<Value>(&bytes).is_ok(),
            "{} is torn",
            path.display()
        );
    }
    eval(dir.path(), &model, "all.jsonl", &["--cache=replies"]);
    assert_eq!(n_requests(&model).await, N_QUESTIONS, "an entry was not served");
    assert_eq!(answers(&dir.path().join("all.jsonl")), sharded);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_api_key_never_reaches_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(NumberingModel::default()).await;
    eval(dir.path(), &model, "first.jsonl", &["--cache=replies"]);
    let received = model.received_requests().await.unwrap();
    let bearer = format!("Bearer {API_KEY}");
    assert_eq!(received[0].headers.get("authorization").unwrap(), bearer.as_str());
    let echoing = serve_posts(NumberingModel {
        echo_key: true,
        ..NumberingModel::default()
    })
    .await;
    eval(dir.path(), &echoing, "echoed.jsonl", &["--cache=echoed"]);
    assert_eq!(n_requests(&echoing).await, N_QUESTIONS);
    let replies = files_under(&dir.path().join("replies"));
    assert_eq!(replies.len(), N_QUESTIONS);
    for (path, bytes) in replies.iter().chain(&files_under(&dir.path().join("echoed"))) {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(API_KEY), "{} holds the API key", path.display());
    }
    // A reply that quoted the key was not kept: it is asked again.
    eval(dir.path(), &echoing, "echoed-again.jsonl", &["--cache=echoed"]);
    assert_eq!(n_requests(&echoing).await, 2 * N_QUESTIONS);
}

/// `react-docstore cache ARGS`, its stdout.
fn cache_command(dir: &Path, args: &[&str]) -> String {
    let (stdout, stderr, code) = output_within_30s(
        crate::binary()
            .current_dir(dir)
            .arg("cache")
            .args(args)
            .env_remove("REACT_CACHE_DIR"),
        "the cache command",
    );
    assert_eq!(code, 0, "{stderr}");
    stdout
}

#[tokio::test(flavor = "multi_thread")]
async fn cache_info_clear_and_prune_manage_the_default_directory() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(NumberingModel::default()).await;
    // `--cache` alone: `replies/` in the page cache directory.
    eval(
        dir.path(),
        &model,
        "first.jsonl",
        &["--cache-dir", "pages", "--cache"],
    );
    let replies = dir.path().join("pages").join("replies");
    assert_eq!(cache_entries(&replies), N_QUESTIONS);
    let info: Value = serde_json::from_str(&cache_command(
        dir.path(),
        &["info", "--cache-dir", "pages", "--json"],
    ))
    .unwrap();
    assert_eq!(info["info"]["entries"], N_QUESTIONS);
    assert!(info["dir"].as_str().unwrap().ends_with("replies"), "{info}");
    let text = cache_command(dir.path(), &["info", "pages/replies"]);
    assert!(
        text.contains(&format!("replies        {N_QUESTIONS}, ")),
        "{text}"
    );

    // Two entries made three days old: a prune of what is older than two days removes them.
    let mut entries: Vec<PathBuf> = files_under(&replies).into_iter().map(|(path, _)| path).collect();
    entries.sort();
    let three_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 86_400);
    for path in &entries[..2] {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(three_days_ago)
            .unwrap();
    }
    let pruned = cache_command(dir.path(), &["prune", "--older-than", "2d", "pages/replies"]);
    assert!(
        pruned.starts_with("removed        2 replies older than 2d"),
        "{pruned}"
    );
    assert!(!entries[0].exists() && !entries[1].exists() && entries[2].exists());
    let pruned = cache_command(
        dir.path(),
        &["prune", "--cache-dir", "pages", "--older-than", "1h"],
    );
    assert!(pruned.starts_with("removed        0 replies"), "{pruned}");

    // The pruned replies are asked again, the rest served.
    eval(
        dir.path(),
        &model,
        "second.jsonl",
        &["--cache-dir", "pages", "--cache"],
    );
    assert_eq!(n_requests(&model).await, N_QUESTIONS + 2);

    let cleared = cache_command(dir.path(), &["clear", "--cache-dir", "pages"]);
    assert!(
        cleared.starts_with(&format!("removed        {N_QUESTIONS} replies")),
        "{cleared}"
    );
    assert_eq!(cache_entries(&replies), 0);
    let info = cache_command(dir.path(), &["info", "pages/replies"]);
    assert!(info.contains("replies        0, 0 bytes"), "{info}");
}

#[test]
fn a_bad_age_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, stderr, code) = output_within_30s(
        crate::binary()
            .current_dir(dir.path())
            .args(["cache", "prune", "--older-than", "seven days"]),
        "the cache command",
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("`seven days`"), "{stderr}");
}

/// `cache ARGS` in `dir`: its stdout, stderr and exit code.
fn cache_output(dir: &Path, args: &[&str]) -> (String, String, i32) {
    output_within_30s(
        crate::binary()
            .current_dir(dir)
            .arg("cache")
            .args(args)
            .env_remove("REACT_CACHE_DIR"),
        "the cache command",
    )
}

/// Writes each `(path, text)` under `dir`, dated `age` back; returns what every file holds.
fn plant(
    dir: &Path,
    files: &[(&str, &str)],
    age: std::time::Duration,
) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let when = std::time::SystemTime::now() - age;
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    state_of(dir)
}

/// Every file under `dir`: its path, bytes and modification time, in path order.
fn state_of(dir: &Path) -> Vec<(PathBuf, Vec<u8>, std::time::SystemTime)> {
    let mut state: Vec<_> = files_under(dir)
        .into_iter()
        .map(|(path, bytes)| {
            let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
            (path, bytes, modified)
        })
        .collect();
    state.sort();
    state
}

#[test]
fn info_clear_and_prune_refuse_a_folder_that_is_no_reply_cache_naming_what_is_there() {
    let eight_days = std::time::Duration::from_secs(8 * 86_400);
    // The page cache beside the reply cache; a project folder; a working folder with run files.
    // The folder, the files planted in it, what the refusal names.
    type Layout<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);
    let layouts: [Layout; 3] = [
        (
            "pages",
            &[
                (
                    "pages/http/colorado-orogeny-0123.json",
                    "react-docstore.page.v2 0 https://x\n<html>",
                ),
                (
                    "pages/websearch/00ff00ff00ff00ff.json",
                    "{\"format\": \"websearch\"}",
                ),
            ],
            &["`http/`", "`websearch/`"],
        ),
        (
            "proj",
            &[
                ("proj/notes/todo.txt", "todo\n"),
                ("proj/data/results.json", "{}\n"),
            ],
            &["`data/`", "`notes/`"],
        ),
        (
            ".",
            &[("runs/run1.json", "{\"question\": \"mine\"}\n")],
            &["`runs/`"],
        ),
    ];
    for (folder, files, named) in layouts {
        let dir = tempfile::tempdir().unwrap();
        let before = plant(dir.path(), files, eight_days);
        for args in [&["clear"][..], &["prune", "--older-than", "7d"], &["info"]] {
            let args: Vec<&str> = args.iter().copied().chain([folder]).collect();
            let (stdout, stderr, code) = cache_output(dir.path(), &args);
            assert_eq!(code, 2, "{args:?} of {folder}: {stdout}{stderr}");
            assert!(
                stderr.contains(&format!("`{folder}` is not a reply cache")),
                "{args:?}: {stderr}"
            );
            for name in named {
                assert!(stderr.contains(name), "{args:?} does not name {name}: {stderr}");
            }
            assert_eq!(
                state_of(dir.path()),
                before,
                "{args:?} of {folder} touched a file"
            );
        }
    }
    // The page cache's own folder says where its replies are.
    let dir = tempfile::tempdir().unwrap();
    plant(
        dir.path(),
        &[("pages/http/a.json", "x"), ("pages/replies/ab/.keep", "")],
        eight_days,
    );
    let (_, stderr, code) = cache_output(dir.path(), &["clear", "pages"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("`pages/replies`"), "{stderr}");
}

#[test]
fn a_missing_folder_is_no_such_cache() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["clear", "missing"][..],
        &["prune", "--older-than", "7d", "missing"],
        &["info", "missing"],
    ] {
        let (stdout, stderr, code) = cache_output(dir.path(), args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(
            stderr.contains("no reply cache at `missing`: there is no such directory"),
            "{args:?}: {stderr}"
        );
        assert!(!dir.path().join("missing").exists());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn foreign_files_among_the_replies_are_left_and_named() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(NumberingModel::default()).await;
    eval(dir.path(), &model, "first.jsonl", &["--cache=replies"]);
    let replies = dir.path().join("replies");
    let entries = files_under(&replies);
    assert_eq!(entries.len(), N_QUESTIONS);
    // An entry's name with other content; an entry's content under another name; a file an
    // entry's name with another extension; the user's notes; a directory of theirs.
    let (first_entry, first_bytes) = &entries[0];
    let fan = first_entry
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let misnamed = format!("{fan}/{}.json", "0".repeat(62));
    let as_text = format!("{fan}/{}.txt", first_entry.file_stem().unwrap().to_str().unwrap());
    let foreign: Vec<(&str, &str)> = vec![
        (
            "ab/cdef0123456789abcdef0123456789abcdef0123456789abcdef01234567.json",
            "{\"mine\": 1}",
        ),
        (&misnamed, std::str::from_utf8(first_bytes).unwrap()),
        (&as_text, std::str::from_utf8(first_bytes).unwrap()),
        ("README.txt", "my cache\n"),
        ("mine/notes.json", "{}"),
    ];
    plant(&replies, &foreign, std::time::Duration::from_secs(30 * 86_400));
    let foreign_state = |replies: &Path| -> Vec<_> {
        state_of(replies)
            .into_iter()
            .filter(|(path, _, _)| foreign.iter().any(|(name, _)| path.ends_with(name)))
            .collect()
    };
    let before = foreign_state(&replies);
    assert_eq!(before.len(), foreign.len());

    let info = cache_command(dir.path(), &["info", "replies"]);
    assert!(
        info.contains(&format!("replies        {N_QUESTIONS}, ")),
        "{info}"
    );
    assert!(info.contains("other files    5, not replies"), "{info}");
    assert!(info.contains("`README.txt`"), "{info}");
    let json: Value =
        serde_json::from_str(&cache_command(dir.path(), &["info", "replies", "--json"])).unwrap();
    assert_eq!(json["info"]["entries"], N_QUESTIONS);
    assert_eq!(json["info"]["other_files"], 5);

    let pruned = cache_command(dir.path(), &["prune", "--older-than", "7d", "replies"]);
    assert!(
        pruned.starts_with("removed        0 replies older than 7d"),
        "{pruned}"
    );
    assert!(
        pruned.contains("left           5 other files, not replies"),
        "{pruned}"
    );
    let cleared = cache_command(dir.path(), &["clear", "replies"]);
    assert!(
        cleared.starts_with(&format!("removed        {N_QUESTIONS} replies from replies")),
        "{cleared}"
    );
    assert!(
        cleared.contains("left           5 other files, not replies: `README.txt`"),
        "{cleared}"
    );
    assert_eq!(foreign_state(&replies), before);
    assert_eq!(files_under(&replies).len(), foreign.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn cache_never_takes_the_question_for_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(NumberingModel::default()).await;
    let base_url = format!("{}/v1", model.uri());
    let run = |args: &[&str]| {
        output_within_30s(
            crate::binary()
                .current_dir(dir.path())
                .args(args)
                .args(crate::completions_model(&base_url))
                .args(["--docstore", "corpus:pages.jsonl", "--cache-dir", "pages"])
                .env_remove("REACT_CACHE_DIR"),
            "ask",
        )
    };
    // `--cache` right before the question: the default directory, the question asked.
    let (stdout, stderr, code) = run(&["ask", "--cache", "Is 4 even?"]);
    assert_eq!((code, stdout.trim()), (0, "yes"), "{stderr}");
    assert_eq!(cache_entries(&dir.path().join("pages/replies")), 1);
    assert!(!dir.path().join("Is 4 even?").exists());
    // `--cache=DIR` names the directory, before or after the question.
    let (_, stderr, code) = run(&["ask", "--cache=replies", "Is 6 even?"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(cache_entries(&dir.path().join("replies")), 1);
    // `--cache DIR` leaves DIR a word of its own, and the error says so.
    for args in [
        &["ask", "Is 8 even?", "--cache", "replies"][..],
        &["ask", "--cache", "replies", "Is 8 even?"],
        &["eval", "questions.json", "--cache", "replies", "--out", "r.jsonl"],
    ] {
        let (_, stderr, code) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains("`--cache` takes its directory only as `--cache=DIR`: `--cache replies` is `--cache` and an argument `replies` of its own"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(n_requests(&model).await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn ask_asked_again_is_answered_from_the_cache_and_its_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(NumberingModel::default()).await;
    let ask = |cache: &str| {
        let (stdout, stderr, code) = output_within_30s(
            crate::binary()
                .current_dir(dir.path())
                .args(["ask", "Is 4 even?", "--json", "--docstore", "corpus:pages.jsonl"])
                .args(crate::completions_model(&format!("{}/v1", model.uri())))
                .arg(format!("--cache={cache}")),
            "ask",
        );
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str::<Value>(&stdout).unwrap()
    };
    let first = ask("replies");
    assert_eq!(n_requests(&model).await, 1);
    assert_eq!(
        first["cache"],
        json!({"calls": 1, "hits": [], "saved": {"prompt_tokens": 0, "completion_tokens": 0}})
    );
    let second = ask("replies");
    assert_eq!(n_requests(&model).await, 1, "ask asked the model again");
    assert_eq!(second["steps"], first["steps"]);
    assert_eq!(second["cache"]["hits"], json!([1]));
    assert_eq!(crate::docs::validate_run(&second), Vec::<String>::new());
    // Another cache directory knows nothing.
    ask("other");
    assert_eq!(n_requests(&model).await, 2);
}

/// A `--api tools` model: every turn calls `finish` with the question's parity, numbered.
struct FinishingModel(Arc<AtomicUsize>);

impl Respond for FinishingModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let number = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert!(body["tools"].is_array(), "{body}");
        let arguments = json!({"answer": format!("reply {number}")}).to_string();
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("call-{number}"), "type": "function", "function": {"name": "finish", "arguments": arguments}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5}
        }))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calling_turns_are_served_from_the_cache_too() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(FinishingModel(Arc::default())).await;
    let eval = |out: &str| {
        let (_, stderr, code) = output_within_30s(
            crate::binary()
                .current_dir(dir.path())
                .args([
                    "eval",
                    "questions.json",
                    "--out",
                    out,
                    "--api",
                    "tools",
                    "--model",
                    "m",
                ])
                .args(["--base-url", &format!("{}/v1", model.uri())])
                .args(["--docstore", "corpus:pages.jsonl", "--cache=replies"]),
            "an evaluation",
        );
        assert!(code <= 1, "{stderr}");
    };
    eval("first.jsonl");
    assert_eq!(n_requests(&model).await, N_QUESTIONS);
    eval("second.jsonl");
    assert_eq!(
        n_requests(&model).await,
        N_QUESTIONS,
        "a tool-calling turn was asked again"
    );
    let first = answers(&dir.path().join("first.jsonl"));
    assert_eq!(first, answers(&dir.path().join("second.jsonl")));
    assert!(
        first
            .values()
            .all(|(answer, _)| answer.as_str().unwrap().starts_with("reply "))
    );
}

/// A `/completions` model whose first reply has a `choices` list this client cannot read (a
/// number where the text belongs), and whose later replies are good.
struct UnreadableFirst(Arc<AtomicUsize>);

impl Respond for UnreadableFirst {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let number = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        let text = if number == 1 {
            json!(42)
        } else {
            json!(" Reply.\nAction 1: Finish[yes]")
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}
        }))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reply_the_client_cannot_read_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let model = serve_posts(UnreadableFirst(Arc::default())).await;
    let ask = || {
        output_within_30s(
            crate::binary()
                .current_dir(dir.path())
                .args(["ask", "Is 4 even?", "--docstore", "corpus:pages.jsonl"])
                .args(crate::completions_model(&format!("{}/v1", model.uri())))
                .args(["--cache=replies"]),
            "ask",
        )
    };
    let (_, stderr, code) = ask();
    assert_ne!(code, 0, "the unreadable reply was taken: {stderr}");
    assert_eq!(n_requests(&model).await, 1);
    assert_eq!(cache_entries(&dir.path().join("replies")), 0);
    let (stdout, stderr, code) = ask();
    assert_eq!(code, 0, "the unreadable reply was served again: {stderr}");
    assert_eq!(stdout.trim(), "yes");
    assert_eq!(n_requests(&model).await, 2);
    assert_eq!(cache_entries(&dir.path().join("replies")), 1);
}

/// A `/completions` model that refuses `stop` (a 400 naming it, as OpenAI's reasoning models do)
/// and answers each other request's `n` with the next of `answers`, in order.
struct RefusesStop {
    answers: Vec<&'static str>,
    next: Arc<AtomicUsize>,
}

impl Respond for RefusesStop {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if body.get("stop").is_some() {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "Unsupported parameter: 'stop' is not supported with this model.",
                "type": "invalid_request_error", "param": "stop", "code": "unsupported_parameter",
            }}));
        }
        let n = body["n"].as_u64().unwrap_or(1) as usize;
        let first = self.next.fetch_add(n, Ordering::SeqCst);
        let choices: Vec<Value> = (first..first + n)
            .map(|idx| json!({"text": format!(" Thinking.\nAnswer: {}", self.answers[idx]), "finish_reason": "stop"}))
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"choices": choices}))
    }
}

/// Issue 45's first case: a server that refuses `stop` answers x,x,y,z,w then y,y,y,u,t to
/// CoT-SC's two batches of 5. On an empty cache the vote is the server's (`y`, 4 of 10), not the
/// first batch's reply served again to the second (`x`); run again, the cache serves both batches
/// in their order and asks nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_parameter_changes_no_vote_on_an_empty_cache() {
    let dir = tempfile::tempdir().unwrap();
    let model = serve_posts(RefusesStop {
        answers: vec!["x", "x", "y", "z", "w", "y", "y", "y", "u", "t"],
        next: Arc::default(),
    })
    .await;
    let ask = |cache: &str| {
        let (stdout, stderr, code) = output_within_30s(
            crate::binary()
                .current_dir(dir.path())
                .args(["ask", "Which one?", "--json", "--method", "cot-sc"])
                .args(["--samples", "10", "--sc-stop", "exact"])
                .args(crate::completions_model(&format!("{}/v1", model.uri())))
                .arg(format!("--cache={cache}")),
            "ask",
        );
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str::<Value>(&stdout).unwrap()
    };
    let answers = |run: &Value| -> Vec<String> {
        run["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|sample| sample["answer"].as_str().unwrap().to_owned())
            .collect()
    };
    let cold = ask("replies");
    assert_eq!(
        answers(&cold),
        ["x", "x", "y", "z", "w", "y", "y", "y", "u", "t"],
        "{cold}"
    );
    assert_eq!(
        (&cold["vote"]["answer"], &cold["vote"]["votes"]),
        (&json!("y"), &json!(4))
    );
    assert_eq!(cold["cache"]["calls"], 2);
    assert_eq!(cold["cache"]["hits"], json!([]));
    // The refused request and its retry, then the second batch without `stop`.
    assert_eq!(n_requests(&model).await, 3);
    let warm = ask("replies");
    assert_eq!(n_requests(&model).await, 3, "the warm run asked the model");
    assert_eq!(warm["samples"], cold["samples"]);
    assert_eq!(warm["vote"], cold["vote"]);
    assert_eq!(warm["cache"]["hits"], json!([1, 2]));
}
