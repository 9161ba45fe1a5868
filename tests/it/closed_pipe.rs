//! A reader that goes away (`react-docstore ... 2>&1 | head -3`) ends the process the way SIGPIPE
//! would, in every command: no panic (exit 101), no error message, no more work.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};

use crate::llm::{Sequence, model_server};

/// `replay` of 500 recorded runs: megabytes of trace and 500 answer lines, far more than a pipe holds.
fn replay_many() -> Command {
    let mut command = binary();
    command.arg("replay");
    for trial in 1..=5 {
        command.arg(crate::fixture(&format!("runs/reflexion/trial-{trial}")));
    }
    command
}

fn binary() -> Command {
    let mut command = crate::binary();
    command.stdin(Stdio::null());
    command
}

/// The write end of a pipe nobody reads.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

#[track_caller]
fn assert_ended_by_sigpipe(status: ExitStatus, what: &str, other_stream: &str) {
    assert_eq!(
        status.signal(),
        Some(libc::SIGPIPE),
        "{what}: {status:?}, other stream: {other_stream}"
    );
    assert!(!other_stream.contains("panicked"), "{what}: {other_stream}");
    assert!(!other_stream.contains("error:"), "{what}: {other_stream}");
}

fn wait_reading(mut child: Child, mut stream: impl Read) -> (ExitStatus, String) {
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    (child.wait().unwrap(), text)
}

#[test]
fn replay_into_a_closed_stdout_or_stderr_ends_like_sigpipe() {
    // stdout closed, stderr read to the end.
    let mut child = replay_many()
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (status, stderr) = wait_reading(child, stderr);
    assert_ended_by_sigpipe(status, "stdout closed", &stderr);

    // stderr closed, stdout read to the end: the first trace line ends it.
    let mut child = replay_many()
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (status, stdout) = wait_reading(child, stdout);
    assert_ended_by_sigpipe(status, "stderr closed", &stdout);
    assert_eq!(stdout, "", "nothing is replayed once stderr is gone");
}

/// `replay RUNS 2>&1 | head -3`: both streams into one pipe, whose reader leaves after 3 lines.
#[test]
fn replay_2_into_1_piped_to_head_ends_like_sigpipe() {
    let (reader, writer) = std::io::pipe().unwrap();
    let mut command = replay_many();
    command.stdout(writer.try_clone().unwrap()).stderr(writer);
    let mut child = command.spawn().unwrap();
    drop(command);
    let mut head = BufReader::new(reader);
    for _ in 0..3 {
        let mut line = String::new();
        head.read_line(&mut line).unwrap();
        assert!(!line.is_empty());
    }
    drop(head);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}");
}

/// `ask`, `chat`, `explore` and `score` end the same way when nobody reads what they print.
#[tokio::test(flavor = "multi_thread")]
async fn every_command_ends_like_sigpipe_when_its_output_is_closed() {
    let finish = "Thought 1: Arthur's Magazine was started in 1844.\nAction 1: Finish[Arthur's Magazine]";
    let server = model_server("chat/completions", Sequence::chat(&[finish])).await;
    let base_url = format!("{}/v1", server.uri());
    let model = ["--base-url", base_url.as_str(), "--model", "gpt-4"];
    let corpus = crate::fixture("docstore/corpus-3.jsonl");
    let corpus = format!("corpus:{}", corpus.display());
    let dir = tempfile::tempdir().unwrap();
    let predictions = dir.path().join("pred.json");
    std::fs::write(&predictions, r#"{"answer": {"0": "Yes.", "2": "the Animorphs"}}"#).unwrap();
    let gold = crate::fixture("hotpotqa/simplified.json");
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        ("ask", vec!["Which magazine was started first?".into()], ""),
        ("chat", vec![], "Which magazine was started first?\n"),
        (
            "explore",
            vec![
                "--docstore".into(),
                corpus.clone(),
                "Search[Missouri Compromise]".into(),
            ],
            "",
        ),
        (
            "explore",
            vec!["--docstore".into(), corpus, "--json".into()],
            "Search[Missouri Compromise]\n",
        ),
        (
            "score",
            vec![predictions.display().to_string(), gold.display().to_string()],
            "",
        ),
    ];
    for (name, args, stdin) in cases {
        let mut command = binary();
        command.arg(name).args(&args);
        if matches!(name, "ask" | "chat") {
            command.args(model);
        }
        // Only stdout is closed: stderr (the trace) is read, so it is stdout's own write that must
        // end the process, quietly.
        command
            .stdin(Stdio::piped())
            .stdout(closed_pipe())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        {
            use std::io::Write;
            let mut input = child.stdin.take().unwrap();
            let _ = input.write_all(stdin.as_bytes());
        }
        let stderr = child.stderr.take().unwrap();
        let (status, stderr) = tokio::task::spawn_blocking(move || wait_reading(child, stderr))
            .await
            .unwrap();
        assert_ended_by_sigpipe(status, &format!("{name} {args:?}"), &stderr);
    }
}

/// `eval` whose stdout and stderr nobody reads: its first note (a torn line dropped from the results
/// file) ends it like SIGPIPE, before any model call.
#[tokio::test(flavor = "multi_thread")]
async fn eval_ends_like_sigpipe_when_its_output_is_closed() {
    let server = model_server("chat/completions", Sequence::chat(&["unused"])).await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("dev.results.jsonl");
    std::fs::write(&results, r#"{"format": "react-docstore.run.v1", "quest"#).unwrap();
    let writer = closed_pipe();
    let status = binary()
        .arg("eval")
        .arg(crate::fixture("hotpotqa/simplified.json"))
        .arg("--out")
        .arg(&results)
        .args(["--base-url", &format!("{}/v1", server.uri()), "--model", "gpt-4"])
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}");
    assert!(server.received_requests().await.unwrap().is_empty());
}
