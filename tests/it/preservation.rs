//! Preservation and ownership, held as one promise for every command that writes: a command
//! deletes or rewrites only files it made or was told to write, keeps the bytes of every line it
//! keeps, and leaves everything else — files it did not create, fields it does not know — as it
//! found them.
//!
//! The harness is a table, [`writers`]: one row a command that writes files (or reads files
//! another command wrote). Every row runs in a copy of one workspace whose results lines carry
//! fields no release knows (a `reviewer_note`, a newer `usage` field, a space no serializer
//! writes: [`annotate`]) and whose question and corpus files carry unknown fields too. Before the
//! command runs, the harness plants foreign files beside and inside every directory the row says
//! the command writes to (a text file, a JSON file, a directory of JSON Lines: [`plant_foreign`])
//! and the row's look-alikes (files named as the command's own could be, with other content),
//! dates every file 30 days back, and notes each file's bytes and modification time. It runs the
//! binary as a user would and checks afterwards:
//! - every planted file is there, byte for byte, with its modification time;
//! - every file the command created is one the row names as the command's own;
//! - every other file that was there and that the row does not name as the command's own is
//!   there, unchanged;
//! - every annotated line of the files the row names is in the files it names as their new place,
//!   byte for byte;
//! - the command exited as the row says, a refusal saying why, and a command that succeeded wrote
//!   something it owns (a row that writes nothing tests nothing).
//!
//! A new writer is one more row of [`writers`]: its command line, the directories it writes to,
//! the files it owns, the lines it must keep. The test prints each case it ran, with what it
//! wrote and kept.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

use crate::{output_within_30s, serve_posts};

/// The field every annotated line carries: a line holding it is one the command must keep whole.
const ANNOTATION: &str = "reviewer_note";
/// How many questions the workspace's question file holds.
const N_QUESTIONS: usize = 6;

/// One command that writes, and what it may touch.
struct Writer {
    /// The case as the report names it.
    name: &'static str,
    /// The command line, run in the workspace ([`words`]: split at spaces, `'…'` one word):
    /// `{model}` names the scripted model, `{batch-model}` the same model through OpenAI's Batch
    /// API (`eval --batch`), `{corpus}` the workspace's corpus as the docstore,
    /// `{wiki}` the local Wikipedia, `{search}` the local SerpApi's search endpoint, `{refused}`
    /// a model server's base URL where nothing listens.
    command: &'static str,
    /// A file of the workspace given as the command's stdin (`chat`).
    stdin: Option<&'static str>,
    exit: i32,
    /// What its stderr says (a refusal's reason); empty: not checked.
    says: &'static str,
    /// Directories the command writes in (`.` the workspace): foreign files are planted in each.
    writes_in: &'static [&'static str],
    /// Files planted with foreign content under names the command's own files could have.
    lookalikes: &'static [&'static str],
    /// What the command may create, rewrite or delete: a file, or a directory ending in `/`.
    owns: &'static [&'static str],
    /// `(from, to)`: every annotated line `from` held before is in `to` afterwards, byte for byte.
    keeps_lines: &'static [(&'static str, &'static str)],
}

/// Every command that writes a file, and the readers of the files writers keep.
fn writers() -> Vec<Writer> {
    let row = |name, command, writes_in, owns| Writer {
        name,
        command,
        stdin: None,
        exit: 0,
        says: "",
        writes_in,
        lookalikes: &[],
        owns,
        keeps_lines: &[],
    };
    let refused = |name, command, says, writes_in| Writer {
        exit: 2,
        says,
        ..row(name, command, writes_in, &[])
    };
    vec![
        row(
            "eval --out, a new results file",
            "eval questions.json --out results/fresh.jsonl {model} {corpus}",
            &["results"],
            &["results/fresh.jsonl"],
        ),
        Writer {
            keeps_lines: &[("results/resume.jsonl", "results/resume.jsonl")],
            ..row(
                "eval --out, resumed: a transient error asked again beside annotated lines",
                "eval questions.json --out results/resume.jsonl {model} {corpus}",
                &["results"],
                &["results/resume.jsonl"],
            )
        },
        Writer {
            keeps_lines: &[("results/resume.jsonl", "results/resume.jsonl")],
            ..row(
                "eval --out --retry-errors",
                "eval questions.json --out results/resume.jsonl {model} {corpus} --retry-errors",
                &["results"],
                &["results/resume.jsonl"],
            )
        },
        Writer {
            lookalikes: &["results/aside.jsonl.set-aside"],
            keeps_lines: &[("results/aside.jsonl", "results/aside.jsonl.set-aside-2")],
            ..row(
                "eval --out, another evaluation's errors set aside",
                "eval questions.json --out results/aside.jsonl {model} {corpus}",
                &["results"],
                &["results/aside.jsonl", "results/aside.jsonl.set-aside-2"],
            )
        },
        Writer {
            lookalikes: &["results/resume.jsonl.batches.json"],
            ..row(
                "eval --batch, a new results file and its batch ledger",
                "eval questions.json --out results/batched.jsonl {batch-model} {corpus}",
                &["results"],
                &["results/batched.jsonl", "results/batched.jsonl.batches.json"],
            )
        },
        Writer {
            lookalikes: &["results/fresh.jsonl.batches.json"],
            keeps_lines: &[("results/resume.jsonl", "results/resume.jsonl")],
            ..row(
                "eval --batch, resumed beside annotated lines",
                "eval questions.json --out results/resume.jsonl {batch-model} {corpus}",
                &["results"],
                &["results/resume.jsonl", "results/resume.jsonl.batches.json"],
            )
        },
        row(
            "eval --shard, a new shard",
            "eval questions.json --shard 1/2 --out shards/fresh-1.jsonl {model} {corpus}",
            &["shards"],
            &["shards/fresh-1.jsonl"],
        ),
        Writer {
            keeps_lines: &[("shards/resume-0.jsonl", "shards/resume-0.jsonl")],
            ..row(
                "eval --shard, resumed: a transient error asked again",
                "eval questions.json --shard 0/2 --out shards/resume-0.jsonl {model} {corpus}",
                &["shards"],
                &["shards/resume-0.jsonl"],
            )
        },
        Writer {
            keeps_lines: &[
                ("shards/s0.jsonl", "shards/all.jsonl"),
                ("shards/s1.jsonl", "shards/all.jsonl"),
            ],
            ..row(
                "merge --out",
                "merge shards/s0.jsonl shards/s1.jsonl --out shards/all.jsonl",
                &["shards"],
                &["shards/all.jsonl"],
            )
        },
        row(
            "export --out",
            "export results/results.jsonl --format openai-chat --out exports/train.jsonl",
            &["exports"],
            &["exports/train.jsonl"],
        ),
        row(
            "report --out",
            "report results/results.jsonl --out reports/page.html --questions questions.json",
            &["reports"],
            &["reports/page.html"],
        ),
        row(
            "score --json (reads only)",
            "score results/results.jsonl questions.json --json",
            &["results"],
            &[],
        ),
        row(
            "compare --json (reads only)",
            "compare results/results.jsonl results/resume.jsonl --json",
            &["results"],
            &[],
        ),
        row("replay (reads only)", "replay runs/run.json", &["runs"], &[]),
        row(
            "cache info",
            "cache info replies",
            &["replies", "replies/ab"],
            &[],
        ),
        Writer {
            lookalikes: &[REPLY_LOOKALIKE, REPLY_LOOKALIKE_OTHER_KEY],
            ..row(
                "cache prune --older-than 7d, foreign files among the entries",
                "cache prune --older-than 7d replies",
                &["replies", "replies/ab"],
                &["replies/"],
            )
        },
        Writer {
            lookalikes: &[REPLY_LOOKALIKE, REPLY_LOOKALIKE_OTHER_KEY],
            ..row(
                "cache clear, foreign files among the entries",
                "cache clear replies",
                &["replies", "replies/ab"],
                &["replies/"],
            )
        },
        refused(
            "cache clear of the page cache (no reply cache: refused)",
            "cache clear pages",
            "`pages` is not a reply cache: it holds no reply, only `http/`",
            &["pages", "pages/http"],
        ),
        refused(
            "cache prune --older-than 7d of a working folder (refused)",
            "cache prune --older-than 7d .",
            "`.` is not a reply cache",
            &[".", "results", "runs"],
        ),
        refused(
            "cache clear of a working folder (refused)",
            "cache clear .",
            "`.` is not a reply cache",
            &[".", "results", "runs"],
        ),
        Writer {
            lookalikes: &[REPLY_LOOKALIKE],
            ..row(
                "ask --cache=DIR",
                "ask --cache=replies 'Is 7 even?' {model} {corpus}",
                &["replies", "replies/ab"],
                &["replies/"],
            )
        },
        Writer {
            lookalikes: &[REPLY_LOOKALIKE],
            ..row(
                "eval --cache=DIR",
                "eval questions.json --out results/cached-again.jsonl --cache=replies {model} {corpus}",
                &["replies", "replies/ab", "results"],
                &["replies/", "results/cached-again.jsonl"],
            )
        },
        Writer {
            stdin: Some("chat.txt"),
            lookalikes: &[REPLY_LOOKALIKE],
            ..row(
                "chat --cache=DIR",
                "chat --cache=replies {model} {corpus}",
                &["replies", "replies/ab"],
                &["replies/"],
            )
        },
        Writer {
            lookalikes: &[PAGE_LOOKALIKE],
            ..row(
                "ask with the page cache",
                "ask 'What is the Colorado orogeny?' {model} --docstore wikipedia --wiki-url {wiki} --cache-dir new-pages",
                &["new-pages", "new-pages/http"],
                &["new-pages/http/"],
            )
        },
        Writer {
            lookalikes: &[PAGE_LOOKALIKE],
            ..row(
                "explore with the page cache",
                "explore 'Search[Colorado orogeny]' --docstore wikipedia --wiki-url {wiki} --cache-dir new-pages",
                &["new-pages", "new-pages/http"],
                &["new-pages/http/"],
            )
        },
        Writer {
            lookalikes: &["new-pages/websearch/0000000000000000.json"],
            ..row(
                "ask --tools websearch, the web search cache",
                "ask 'Who is the president of Spain?' {model} {corpus} --tools websearch --search-url {search} \
                 --serpapi-key serpapi-preservation-key --cache-dir new-pages",
                &["new-pages", "new-pages/websearch"],
                &["new-pages/websearch/"],
            )
        },
        row(
            "ask --record",
            "ask 'Is 2 even?' --record runs/new.json {model} {corpus}",
            &["runs"],
            &["runs/new.json"],
        ),
        row(
            "ask --fewshot-from --record",
            "ask 'Is 8 even?' --fewshot-from results/results.jsonl --shots 1 --record runs/drawn.json {model} {corpus}",
            &["runs", "results"],
            &["runs/drawn.json", "runs/drawn.fewshot.txt"],
        ),
        row(
            "eval --fewshot-from",
            "eval questions.json --limit 2 --fewshot-from results/results.jsonl --shots 1 --out drawn/drawn.jsonl {model} {corpus}",
            &["drawn", "results"],
            &["drawn/drawn.jsonl", "drawn/drawn.fewshot.txt"],
        ),
        Writer {
            lookalikes: &["drawn/refused.fewshot.txt"],
            owns: &["drawn/refused.jsonl"],
            ..refused(
                "eval --fewshot-from beside other examples (refused)",
                "eval questions.json --limit 2 --fewshot-from results/results.jsonl --shots 1 --out drawn/refused.jsonl \
                 {model} {corpus}",
                "`drawn/refused.fewshot.txt` holds other examples than this draw",
                &["drawn", "results"],
            )
        },
        row(
            "index build --out, a new index",
            "index build pages.jsonl --out built",
            &["."],
            &["built/"],
        ),
        refused(
            "index build --out over an index holding foreign files (refused)",
            "index build pages.jsonl --out index",
            "`index` is an index that also holds `mine.json`, `mine/`, `notes.txt`, which no index has",
            &[".", "index"],
        ),
    ]
}

/// A file named as a page cache entry could be, holding something else.
const PAGE_LOOKALIKE: &str = "new-pages/http/colorado-orogeny-00000000000000000000000000000000.json";
/// A file named as a reply cache entry could be, holding something else.
const REPLY_LOOKALIKE: &str = "replies/ab/cdef0123456789abcdef0123456789abcdef0123456789abcdef01234567.json";
/// A reply cache entry's format under a name its key does not give.
const REPLY_LOOKALIKE_OTHER_KEY: &str =
    "replies/ab/0000000000000000000000000000000000000000000000000000000000000000.json";

/// The scripted model: a ReAct step for the completions API. `What is the Colorado orogeny?`
/// searches Wikipedia first, `Who is the president of Spain?` the web; everything else, and every
/// question once it has observed something, finishes with `yes`.
struct ScriptedModel;

impl ScriptedModel {
    /// Its completion of `prompt`, asked one request at a time or in a batch.
    fn complete(prompt: &str) -> String {
        let question = prompt
            .rsplit_once("\nQuestion: ")
            .map_or(prompt, |(_, question)| question);
        let step = question.matches("\nObservation ").count() + 1;
        if step > 1 {
            format!(" I know now.\nAction {step}: Finish[yes]")
        } else if question.starts_with("What is the Colorado orogeny?") {
            " I look it up.\nAction 1: Search[Colorado orogeny]".to_owned()
        } else if question.starts_with("Who is the president of Spain?") {
            " I search the web.\nAction 1: WebSearch[president of Spain]".to_owned()
        } else {
            " I know.\nAction 1: Finish[yes]".to_owned()
        }
    }
}

impl Respond for ScriptedModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let text = ScriptedModel::complete(body["prompt"].as_str().unwrap_or_default());
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "cmpl", "object": "text_completion", "model": "m",
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        }))
    }
}

/// The local servers a row's command line may name.
struct Servers {
    model: MockServer,
    /// The scripted model behind OpenAI's Batch API (`eval --batch`): its base URL.
    batches: String,
    wikipedia: MockServer,
    search: MockServer,
    /// A base URL where nothing listens: a model server that refuses the connection.
    refused: String,
}

impl Servers {
    async fn start() -> Servers {
        let search = MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::method("GET"))
            .and(wiremock::matchers::path("/search"))
            .respond_with(ResponseTemplate::new(200).set_body_string(
                std::fs::read_to_string(crate::fixture("serpapi/serpapi_president_spain.json")).unwrap(),
            ))
            .mount(&search)
            .await;
        Servers {
            model: serve_posts(ScriptedModel).await,
            batches: crate::batch::completions_batch_api(|prompt, n| {
                vec![ScriptedModel::complete(prompt); n.max(1)]
            })
            .await,
            wikipedia: crate::mock_wikipedia().await,
            search,
            refused: format!("http://127.0.0.1:{}/v1", crate::refused_port()),
        }
    }

    /// A command line's words, its placeholders filled ([`Writer::command`]).
    fn words(&self, command: &str) -> Vec<String> {
        let filled = command
            .replace("{model}", "--model m --api completions --base-url {model-url}")
            .replace(
                "{batch-model}",
                "--model m --api completions --base-url {batches} --batch --batch-poll 0.001",
            )
            .replace("{batches}", &self.batches)
            .replace("{corpus}", "--docstore corpus:pages.jsonl")
            .replace("{model-url}", &format!("{}/v1", self.model.uri()))
            .replace("{refused}", &self.refused)
            .replace("{wiki}", &self.wikipedia.uri())
            .replace("{search}", &format!("{}/search", self.search.uri()));
        words(&filled)
    }
}

/// A command line's words: split at spaces, `'…'` one word (without its quotes).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        let (word, after) = match rest.strip_prefix('\'') {
            Some(quoted) => quoted.split_once('\'').expect("a closing quote"),
            None => rest.split_once(' ').unwrap_or((rest, "")),
        };
        words.push(word.to_owned());
        rest = after.trim_start();
    }
    words
}

/// Runs the binary in `dir` on `command` ([`Servers::words`]), `stdin` from a file of `dir`.
fn run(dir: &Path, servers: &Servers, command: &str, stdin: Option<&str>) -> (String, String, i32) {
    let mut binary = crate::binary();
    binary
        .current_dir(dir)
        .args(servers.words(command))
        .env_remove("REACT_CACHE_DIR")
        .env_remove("SERPAPI_API_KEY")
        .env("XDG_CACHE_HOME", dir.join("user-cache"))
        .env("HOME", dir);
    if let Some(stdin) = stdin {
        binary.stdin(std::fs::File::open(dir.join(stdin)).unwrap());
    }
    output_within_30s(&mut binary, command)
}

/// Runs a command that builds the workspace; it must exit with `exit`.
#[track_caller]
fn build(dir: &Path, servers: &Servers, command: &str, exit: i32) {
    let (_, stderr, code) = run(dir, servers, command, None);
    assert_eq!(code, exit, "{command}: {stderr}");
}

/// The workspace every row starts from: questions and a corpus with unknown fields, results
/// files with annotated lines, shards, a reply cache, a page cache, a run file and an index.
fn workspace(dir: &Path, servers: &Servers) {
    let questions: Vec<Value> = (0..N_QUESTIONS)
        .map(|i| {
            json!({
                "_id": format!("q{i:03}"), "question": format!("Is {i} even?"),
                "answer": if i % 2 == 0 { "yes" } else { "no" }, "type": "comparison",
                "annotator": "a field no reader knows",
            })
        })
        .collect();
    std::fs::write(
        dir.join("questions.json"),
        serde_json::to_vec(&questions).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("pages.jsonl"),
        "{\"title\": \"Even\", \"text\": \"An even number is divisible by two.\", \"licence\": \"mine\"}\n\
         {\"title\": \"Odd\", \"text\": \"An odd number is not.\", \"licence\": \"mine\"}\n",
    )
    .unwrap();
    std::fs::write(dir.join("chat.txt"), "Is 4 even?\n").unwrap();
    for sub in ["results", "shards", "runs"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let build = |command: &str, exit| build(dir, servers, command, exit);
    // `finished`'s lines with one transient error (a model server that refused the connection)
    // in place of its question's line: what an evaluation resumed asks again.
    let with_one_error = |finished: &str, out: &str, shard: &str| {
        let errors = format!("{out}.errors");
        build(
            &format!(
                "eval questions.json {shard} --out {errors} --concurrency 1 {{corpus}} --model m --api completions --base-url {{refused}}"
            ),
            2,
        );
        let error_line = std::fs::read_to_string(dir.join(&errors)).unwrap();
        let error_id =
            serde_json::from_str::<Value>(error_line.lines().next().unwrap()).unwrap()["id"].clone();
        let finished: String = std::fs::read_to_string(dir.join(finished))
            .unwrap()
            .lines()
            .filter(|line| serde_json::from_str::<Value>(line).unwrap()["id"] != error_id)
            .map(|line| format!("{line}\n"))
            .collect();
        std::fs::write(dir.join(out), format!("{error_line}{finished}")).unwrap();
        std::fs::remove_file(dir.join(&errors)).unwrap();
    };
    build(
        "eval questions.json --out results/results.jsonl {model} {corpus}",
        0,
    );
    with_one_error("results/results.jsonl", "results/resume.jsonl", "");
    // Another evaluation (another model) that finished nothing: set aside, not lost.
    build(
        "eval questions.json --out results/aside.jsonl --concurrency 1 {corpus} --model other --api completions --base-url {refused}",
        2,
    );
    build(
        "eval questions.json --shard 0/2 --out shards/s0.jsonl {model} {corpus}",
        0,
    );
    build(
        "eval questions.json --shard 1/2 --out shards/s1.jsonl {model} {corpus}",
        0,
    );
    with_one_error("shards/s0.jsonl", "shards/resume-0.jsonl", "--shard 0/2");
    build(
        "eval questions.json --out results/cached.jsonl --cache=replies {model} {corpus}",
        0,
    );
    for (file, every_line) in [
        ("results/results.jsonl", false),
        ("results/resume.jsonl", false),
        ("results/aside.jsonl", true),
        ("shards/s0.jsonl", false),
        ("shards/s1.jsonl", false),
        ("shards/resume-0.jsonl", false),
    ] {
        annotate(&dir.join(file), every_line);
    }
    build(
        "ask 'What is the Colorado orogeny?' {model} --docstore wikipedia --wiki-url {wiki} --cache-dir pages",
        0,
    );
    build("ask 'Is 2 even?' --record runs/run.json {model} {corpus}", 0);
    build("index build pages.jsonl --out index", 0);
}

/// Gives the finished lines of a results file (every line with `every_line`) fields no release
/// writes — a `reviewer_note`, a newer `usage` field — and a space no serializer writes: a
/// command that rewrites such a line through its own types loses them.
fn annotate(path: &Path, every_line: bool) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut annotated = String::new();
    for line in text.lines() {
        let run: Value = serde_json::from_str(line).unwrap();
        if every_line || run["stopped"] != "error" {
            let rest = line.strip_prefix('{').unwrap();
            let line = format!("{{ \"{ANNOTATION}\": \"checked by hand\", {rest}").replacen(
                "\"usage\":{",
                "\"usage\":{\"cache_read_tokens\":7,",
                1,
            );
            assert!(serde_json::from_str::<Value>(&line).is_ok(), "{line}");
            annotated.push_str(&line);
        } else {
            annotated.push_str(line);
        }
        annotated.push('\n');
    }
    std::fs::write(path, annotated).unwrap();
}

/// Plants foreign files in `dir`: a text file, a JSON file, a directory of JSON Lines.
fn plant_foreign(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    let planted = [
        (dir.join("notes.txt"), "my notes, not the tool's\n"),
        (dir.join("mine.json"), "{\"mine\": true}\n"),
        (
            dir.join("mine").join("inner.jsonl"),
            "{\"id\": \"mine\", \"question\": \"mine\"}\n",
        ),
    ];
    for (path, text) in &planted {
        std::fs::write(path, text).unwrap();
    }
    planted.into_iter().map(|(path, _)| path).collect()
}

/// Every file under `dir` (not following links), relative, with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(at) = pending.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            let metadata = entry.metadata().unwrap();
            if metadata.is_dir() {
                pending.push(entry.path());
            } else if metadata.is_file() {
                let relative = entry.path().strip_prefix(dir).unwrap().to_owned();
                files.insert(
                    relative,
                    (std::fs::read(entry.path()).unwrap(), metadata.modified().unwrap()),
                );
            }
        }
    }
    files
}

/// Copies the tree `from` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    for (relative, (bytes, _)) in snapshot(from) {
        let path = to.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// Dates every file under `dir` at `when`.
fn date_every_file(dir: &Path, when: SystemTime) {
    for relative in snapshot(dir).into_keys() {
        std::fs::File::options()
            .write(true)
            .open(dir.join(relative))
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
}

/// The annotated lines of `bytes`, each with its line end.
fn annotated_lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split_inclusive(|&byte| byte == b'\n')
        .filter(|line| memchr::memmem::find(line, ANNOTATION.as_bytes()).is_some())
        .collect()
}

/// Runs one row in a copy of the workspace; what it broke, one sentence each.
fn check_writer(writer: &Writer, template: &Path, servers: &Servers) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(template, dir.path());
    let mut planted: BTreeSet<PathBuf> = BTreeSet::new();
    for sub in writer.writes_in {
        for path in plant_foreign(&dir.path().join(sub)) {
            planted.insert(path.strip_prefix(dir.path()).unwrap().to_owned());
        }
    }
    for lookalike in writer.lookalikes {
        let path = dir.path().join(lookalike);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let content = if *lookalike == REPLY_LOOKALIKE_OTHER_KEY {
            // An entry's fields, under a name its key does not give.
            json!({"format": "react-docstore.reply-cache.v1", "key": "sha256:ab", "response": {}}).to_string()
        } else {
            "{\"format\": \"not the tool's\", \"mine\": true}\n".to_owned()
        };
        std::fs::write(&path, content).unwrap();
        planted.insert(PathBuf::from(lookalike));
    }
    date_every_file(dir.path(), SystemTime::now() - Duration::from_secs(30 * 86_400));
    let before = snapshot(dir.path());
    let (_, stderr, code) = run(dir.path(), servers, writer.command, writer.stdin);
    let after = snapshot(dir.path());

    let mut broken = Vec::new();
    if code != writer.exit {
        broken.push(format!("exited {code}, not {}: {stderr}", writer.exit));
    }
    if !stderr.contains(writer.says) {
        broken.push(format!("did not say {:?}: {stderr}", writer.says));
    }
    let owned = |path: &Path| {
        writer.owns.iter().any(|owned| match owned.strip_suffix('/') {
            Some(owned_dir) => path.starts_with(owned_dir),
            None => path == Path::new(owned),
        })
    };
    // A row that passes without writing would hold no promise: what it owns changed.
    let changed =
        |path: &PathBuf| before.get(path).map(|(bytes, _)| bytes) != after.get(path).map(|(bytes, _)| bytes);
    let n_written = before
        .keys()
        .chain(after.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|path| owned(path) && changed(path))
        .count();
    if code == 0 && !writer.owns.is_empty() && n_written == 0 {
        broken.push("wrote nothing it owns: the case tests nothing".to_owned());
    }
    let mut n_kept_files = 0;
    for (path, (bytes, modified)) in &before {
        if !planted.contains(path) && owned(path) {
            continue;
        }
        n_kept_files += 1;
        match after.get(path) {
            None => broken.push(format!("deleted `{}`", path.display())),
            Some((after_bytes, _)) if after_bytes != bytes => {
                broken.push(format!("rewrote `{}`", path.display()));
            }
            Some((_, after_modified)) if after_modified != modified => {
                broken.push(format!(
                    "touched `{}` (its modification time changed)",
                    path.display()
                ));
            }
            Some(_) => {}
        }
    }
    // A file the command made where the row names none of its own: written somewhere it was
    // not asked to write (a side file beside the wrong results file, say).
    for path in after.keys() {
        if !before.contains_key(path) && !owned(path) {
            broken.push(format!("created `{}`, which is not its own", path.display()));
        }
    }
    let mut n_kept_lines = 0;
    for (from, to) in writer.keeps_lines {
        let lines = annotated_lines(&before[Path::new(from)].0);
        assert!(!lines.is_empty(), "{from} holds no annotated line");
        let Some((to_bytes, _)) = after.get(Path::new(to)) else {
            broken.push(format!("wrote no `{to}`"));
            continue;
        };
        let written: BTreeSet<&[u8]> = to_bytes.split_inclusive(|&byte| byte == b'\n').collect();
        for line in lines {
            n_kept_lines += 1;
            if !written.contains(line) {
                broken.push(format!(
                    "`{to}` lost the bytes of a line of `{from}`: {}",
                    String::from_utf8_lossy(line).trim_end()
                ));
            }
        }
    }
    let report = format!(
        "{}: {n_written} files written, {n_kept_files} kept ({} planted), {n_kept_lines} annotated lines kept",
        writer.name,
        planted.len(),
    );
    (broken, report)
}

#[tokio::test(flavor = "multi_thread")]
async fn no_command_touches_what_it_did_not_write_and_kept_lines_keep_their_bytes() {
    let servers = Servers::start().await;
    let template = tempfile::tempdir().unwrap();
    workspace(template.path(), &servers);
    let mut failures = Vec::new();
    let writers = writers();
    for writer in &writers {
        let (broken, report) = check_writer(writer, template.path(), &servers);
        let verdict = if broken.is_empty() { "ok" } else { "FAILED" };
        println!("preservation: {report}: {verdict}");
        failures.extend(
            broken
                .into_iter()
                .map(|problem| format!("{}: {problem}", writer.name)),
        );
    }
    println!("preservation: {} cases run", writers.len());
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
