//! Every count a run file holds is checked against the tool's limits (`react_docstore::base::limits`)
//! before it sizes anything: a line beyond them is refused with one line naming the file and the
//! line, by every reader, and the process never aborts (issue 45: `"samples": 1e18` in a
//! `cot-sc-then-react` run made `replay` and `export --all` die allocating 380 PB).

use std::path::Path;

use react_docstore::base::limits::{MAX_SAMPLES, MAX_STEPS};

use super::{binary, fixture, output_within_30s};

/// The three `cot-sc-then-react` runs of the methods fixture, the second one changed by `change`.
fn results_with_second_line(dir: &Path, change: impl Fn(&mut serde_json::Value)) -> std::path::PathBuf {
    results_with(dir, &[1], change)
}

/// The three `cot-sc-then-react` runs of the methods fixture, the lines `changed` (from 0)
/// changed by `change`.
fn results_with(
    dir: &Path,
    changed: &[usize],
    change: impl Fn(&mut serde_json::Value),
) -> std::path::PathBuf {
    let text = std::fs::read_to_string(fixture("runs/methods/cot-sc-then-react.results.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for &idx in changed {
        let mut run: serde_json::Value = serde_json::from_str(&lines[idx]).unwrap();
        change(&mut run);
        lines[idx] = serde_json::to_string(&run).unwrap();
    }
    let path = dir.join("results.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The commands that read runs, each on `results` (the gold file for `score`: the fixture's
/// questions), with what it writes in `dir`.
fn readers(dir: &Path, results: &Path) -> Vec<(&'static str, Vec<String>)> {
    let path = |name: &str| dir.join(name).display().to_string();
    let results = results.display().to_string();
    let gold = fixture("docstore/hotpotqa-distractor-3.json")
        .display()
        .to_string();
    vec![
        ("replay", vec!["replay".into(), results.clone()]),
        (
            "export",
            vec![
                "export".into(),
                "--all".into(),
                "--format".into(),
                "openai-chat".into(),
                "--out".into(),
                path("export.jsonl"),
                results.clone(),
            ],
        ),
        (
            "report",
            vec![
                "report".into(),
                results.clone(),
                "--out".into(),
                path("report.html"),
            ],
        ),
        (
            "merge",
            vec![
                "merge".into(),
                results.clone(),
                "--out".into(),
                path("merged.jsonl"),
            ],
        ),
        (
            "score",
            vec!["score".into(), "--json".into(), results.clone(), gold],
        ),
    ]
}

#[test]
fn a_count_beyond_the_limits_is_refused_naming_the_file_and_line() {
    let huge = serde_json::json!(1_000_000_000_000_000_000_u64);
    type Change<'a> = Box<dyn Fn(&mut serde_json::Value) + 'a>;
    let changes: Vec<(&str, Change)> = vec![
        (
            "vote.samples",
            Box::new(|run| run["vote"]["samples"] = huge.clone()),
        ),
        ("vote.votes", Box::new(|run| run["vote"]["votes"] = huge.clone())),
        (
            "sc_stop.samples",
            Box::new(|run| {
                run["sc_stop"] = serde_json::json!({"rule": "exact", "batch": 5, "confidence": 0.95,
                    "samples": huge, "asked": 7, "reason": "decided"})
            }),
        ),
        ("max_steps", Box::new(|run| run["max_steps"] = huge.clone())),
        (
            "epoch",
            Box::new(|run| run["epoch"] = serde_json::json!(u32::MAX)),
        ),
    ];
    for (field, change) in &changes {
        let dir = tempfile::tempdir().unwrap();
        let results = results_with_second_line(dir.path(), change);
        for (command, args) in readers(dir.path(), &results) {
            let (_, stderr, status) =
                output_within_30s(binary().args(&args).current_dir(dir.path()), "a bounded read");
            let what = format!("`{command}` of a run whose `{field}` is beyond the limits");
            // An abort (SIGABRT) has no exit code: `output_within_30s` gives -1.
            assert_eq!(status, 2, "{what}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{what}: one line, not {stderr}");
            assert!(
                stderr.contains("results.jsonl") && stderr.contains("line 2") && stderr.contains("at most"),
                "{what}: names the file, the line and the limit: {stderr}"
            );
        }
    }
}

#[test]
fn counts_at_the_limits_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let results = results_with(dir.path(), &[0, 1, 2], |run| {
        run["vote"]["samples"] = MAX_SAMPLES.into();
        run["max_steps"] = MAX_STEPS.into();
    });
    let (_, stderr, status) = output_within_30s(
        binary()
            .args(["score", "--json"])
            .arg(&results)
            .arg(fixture("docstore/hotpotqa-distractor-3.json")),
        "a score",
    );
    assert_ne!(status, 2, "{stderr}");
    assert!(!stderr.contains("at most"), "{stderr}");
    // A replay sets the run's N up again (1,024 samples) and asks its recording for them: the
    // recording has 7, so the replay says it ran out, and ends.
    let (_, stderr, status) = output_within_30s(binary().arg("replay").arg(&results), "a replay");
    assert!(status == 0 || status == 2, "{stderr}");
    assert!(!stderr.contains("at most"), "{stderr}");
}

#[test]
fn samples_and_steps_beyond_the_limits_are_refused_before_any_request() {
    let port = super::refused_port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let corpus = crate::test_corpus();
    for (args, expected) in [
        (
            vec!["--method", "cot-sc", "--samples", "1000000000000000000"],
            "`--samples` is 1000000000000000000, more than the 1024",
        ),
        (
            vec!["--max-steps", "100000000000"],
            "`--max-steps` is 100000000000, more than the 1024",
        ),
    ] {
        let (_, stderr, status) = output_within_30s(
            binary()
                .args(["ask", "Who?"])
                .args(super::completions_model(&base_url))
                .args(["--docstore", &corpus])
                .args(&args),
            "a refusal",
        );
        assert_eq!(status, 2, "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!stderr.contains("connect"), "nothing asked: {stderr}");
    }
}

/// An action's argument longer than any may be (the limit `serve` and `mcp` refuse above) is
/// answered with an observation saying so, and searches nothing (issue 45: a 62 KB `Search[…]`
/// took 103 s on a 30k-page index).
#[test]
fn an_over_long_argument_is_an_observation() {
    use react_docstore::base::limits::MAX_ARGUMENT_BYTES;
    let corpus = crate::test_corpus();
    let long = "Colorado orogeny ".repeat(4000);
    let within = "x".repeat(MAX_ARGUMENT_BYTES);
    let (stdout, stderr, status) = output_within_30s(
        binary()
            .args(["explore", "--json", "--docstore", &corpus])
            .arg(format!("Search[{long}]"))
            .arg(format!("Lookup[{long}]"))
            .arg(format!("Search[{within}]")),
        "three actions",
    );
    assert_eq!(status, 0, "{stderr}");
    let observations: Vec<String> = stdout
        .lines()
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            line["observation"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        observations[..2],
        [
            format!(
                "The argument of Search is {} bytes, more than the 4096 an argument can be. Search a title or a few words.",
                long.trim().len()
            ),
            format!(
                "The argument of Lookup is {} bytes, more than the 4096 an argument can be. Look up a word or a short phrase.",
                long.trim().len()
            ),
        ]
    );
    assert!(observations[2].starts_with("Could not find"), "{observations:?}");
}
