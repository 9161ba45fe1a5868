//! `react-docstore explore` end to end: the binary against a local server serving recorded pages.

use std::process::{Command, Stdio};

use wiremock::MockServer;

use crate::fixture;

/// Runs `react-docstore explore ARGS` with `stdin`; returns stdout, stderr and the exit code.
fn explore(
    server: &MockServer,
    cache: &std::path::Path,
    args: &[&str],
    stdin: &str,
) -> (String, String, i32) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .arg("explore")
        .args(["--wiki-url", &server.uri(), "--cache-dir"])
        .arg(cache)
        .args(args)
        .env_remove("REACT_PROFILE")
        .env_remove("REACT_WIKI_URL")
        .env_remove("REACT_CACHE_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
        output.status.code().unwrap_or(-1),
    )
}

const ACTIONS: &[&str] = &[
    "Search[Colorado orogeny]",
    "Lookup[New Mexico]",
    "Lookup[New Mexico]",
    "Lookup[New Mexico]",
    "Lookup[High Plains]",
    "Search[Colorado orogenyy]",
    "Finish[x]",
    "Dance[now]",
];

#[tokio::test]
async fn explore_prints_observations_in_both_profiles() {
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let (default, stderr, code) = explore(&server, cache.path(), ACTIONS, "");
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_snapshot!("explore_default_text", default);
    let mut args = vec!["--profile", "paper", "--json"];
    args.extend(ACTIONS.iter().map(|action| action.to_owned()));
    let (paper, stderr, code) = explore(&server, cache.path(), &args, "");
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_snapshot!("explore_paper_json", paper);
}

#[tokio::test]
async fn explore_reads_actions_from_stdin_keeping_the_cursor() {
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let input = "Search[Colorado orogeny]\n\nLookup[New Mexico]\nLookup[New Mexico]\nLookup[New Mexico]\nquit\nLookup[x]\n";
    let (stdout, stderr, code) = explore(&server, cache.path(), &["--json"], input);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_snapshot!("explore_interactive_json", stdout);
}

#[tokio::test]
async fn explore_reports_a_failed_line_and_goes_on() {
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let input = "Search[Not served]\nSearch[Colorado orogenyy]\n";
    let (stdout, stderr, code) = explore(&server, cache.path(), &["--offline"], input);
    assert_eq!(code, 0);
    assert!(
        stderr.starts_with("error: offline: no cached page for `Not served`"),
        "{stderr}"
    );
    assert_eq!(stdout, "");
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
}

#[tokio::test]
async fn explore_offline_miss_is_an_error() {
    let server = crate::mock_wikipedia().await;
    let cache = tempfile::tempdir().unwrap();
    let (stdout, stderr, code) = explore(
        &server,
        cache.path(),
        &["--offline", "Search[Colorado orogeny]"],
        "",
    );
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(
        stderr.starts_with("error: offline: no cached page for `Colorado orogeny`"),
        "{stderr}"
    );
}

#[test]
fn explore_a_corpus_file_offline() {
    let corpus = fixture("docstore/corpus-3.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .arg("explore")
        .arg("--docstore")
        .arg(format!("corpus:{}", corpus.display()))
        .args([
            "--json",
            "Search[Missouri Compromise]",
            "Lookup[Maine]",
            "Lookup[Maine]",
            "Search[William King]",
            "Search[maine gubernatorial election 1820]",
        ])
        .env_remove("REACT_PROFILE")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    assert_snapshot!("explore_corpus_json", String::from_utf8(output.stdout).unwrap());
    let missing = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(["explore", "--docstore", "corpus:no/such/file.jsonl", "Search[x]"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "error: cannot read the corpus no/such/file.jsonl: No such file or directory (os error 2)\n"
    );
}

/// A line that is not UTF-8 is reported with its number and skipped; the session goes on.
#[test]
fn explore_skips_a_line_that_is_not_utf8() {
    use std::io::Write;
    let corpus = fixture("docstore/corpus-3.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .arg("explore")
        .arg("--docstore")
        .arg(format!("corpus:{}", corpus.display()))
        .env_remove("REACT_PROFILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"Search[Missouri \xff Compromise]\nSearch[Missouri Compromise]\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: line 1 is not valid UTF-8: skipped\n"
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("The Missouri Compromise"),
        "{output:?}"
    );
}

/// On a terminal, explore says how to leave and prompts; `exit` leaves.
#[tokio::test]
async fn explore_on_a_terminal_says_how_to_leave() {
    use react_docstore::apps::explore::{Explore, ExploreFormat, run_interactive};
    use react_docstore::base::input::Interaction;
    use react_docstore::base::profile::Profile;
    use react_docstore::docstore::CorpusSource;
    use react_docstore::tools::Toolbox;

    let source = CorpusSource::load(&fixture("docstore/corpus-3.jsonl"), Profile::Default).unwrap();
    let mut session = Explore::new(&source, Toolbox::default(), Profile::Default);
    let (mut out, mut errors) = (Vec::new(), Vec::new());
    let mut input: &[u8] = b"exit\nSearch[Missouri Compromise]\n";
    run_interactive(
        &mut session,
        &mut input,
        ExploreFormat::Text,
        &mut out,
        &mut errors,
        Interaction::Terminal,
    )
    .await
    .unwrap();
    assert_eq!(
        String::from_utf8(errors).unwrap(),
        "Ctrl-D (end of input) or `exit` ends the session.\n> "
    );
    assert!(out.is_empty());
}
