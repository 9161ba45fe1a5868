//! Every command that reads recorded runs takes the same path forms (`record::files`' one rule):
//! the files themselves, a directory whose results sit in a subdirectory, and a comma list. The
//! same runs given in each form give each command the same result.

use std::path::{Path, PathBuf};

/// The 100 runs of a real results file split in two (an evaluation's two halves), laid out as
/// each form names them.
struct Forms {
    _dir: tempfile::TempDir,
    files: [PathBuf; 2],
    nested: PathBuf,
    out: PathBuf,
}

impl Forms {
    fn new() -> Forms {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(crate::fixture(crate::compare::TRIAL_1)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let (first, second) = lines.split_at(lines.len() / 2);
        let write = |path: &Path, lines: &[&str]| std::fs::write(path, lines.join("\n") + "\n").unwrap();
        let files = [dir.path().join("a.jsonl"), dir.path().join("b.jsonl")];
        write(&files[0], first);
        write(&files[1], second);
        let nested = dir.path().join("nested");
        std::fs::create_dir_all(nested.join("shards")).unwrap();
        write(&nested.join("shards/a.jsonl"), first);
        write(&nested.join("shards/b.jsonl"), second);
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        Forms {
            _dir: dir,
            files,
            nested,
            out,
        }
    }

    /// The arguments of each form, named.
    fn each(&self) -> [(&'static str, Vec<String>); 3] {
        let text = |path: &Path| path.to_str().unwrap().to_owned();
        [
            ("two files", self.files.iter().map(|file| text(file)).collect()),
            (
                "a directory with results in a subdirectory",
                vec![text(&self.nested)],
            ),
            (
                "a comma list",
                vec![format!("{},{}", text(&self.files[0]), text(&self.files[1]))],
            ),
        ]
    }
}

/// Runs the binary; its stdout, after asserting it exited 0.
fn run(args: &[String], form: &str) -> String {
    let output = crate::binary()
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{form}: {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

#[test]
fn score_merge_export_and_replay_read_the_same_runs_in_every_path_form() {
    let forms = Forms::new();
    let gold = crate::fixture("compare/hotpot-qa-distractor-sample.types.json");
    let gold = gold.to_str().unwrap();
    let mut seen: Vec<(&str, [String; 4])> = Vec::new();
    for (idx, (form, paths)) in forms.each().into_iter().enumerate() {
        let with = |head: &[&str], tail: &[&str]| [strings(head), paths.clone(), strings(tail)].concat();
        let score = run(&with(&["score", "--json"], &[gold]), form);
        let merged = forms.out.join(format!("merged-{idx}.jsonl"));
        run(&with(&["merge", "--out", merged.to_str().unwrap()], &[]), form);
        let exported = forms.out.join(format!("export-{idx}.jsonl"));
        run(
            &with(
                &[
                    "export",
                    "--format",
                    "openai-chat",
                    "--out",
                    exported.to_str().unwrap(),
                ],
                &[],
            ),
            form,
        );
        let replayed = run(&with(&["replay", "--json"], &[]), form);
        let replay_summary = replayed.lines().last().unwrap().to_owned();
        assert!(
            replay_summary.contains("\"runs\":100"),
            "{form}: {replay_summary}"
        );
        seen.push((
            form,
            [
                score,
                std::fs::read_to_string(&merged).unwrap(),
                std::fs::read_to_string(&exported).unwrap(),
                replay_summary,
            ],
        ));
    }
    let (first_form, first) = &seen[0];
    assert!(
        first[0].contains("\"n\": 100") || first[0].contains("\"n\":100"),
        "{}",
        first[0]
    );
    for (form, outputs) in &seen[1..] {
        for (name, (a, b)) in ["score", "merge", "export", "replay"]
            .iter()
            .zip(first.iter().zip(outputs))
        {
            assert_eq!(a, b, "`{name}` of {form} differs from `{name}` of {first_form}");
        }
    }
}

#[test]
fn compare_and_report_read_an_evaluation_in_every_path_form() {
    let forms = Forms::new();
    let mut seen = Vec::new();
    for (idx, (form, paths)) in forms.each().into_iter().enumerate() {
        // `compare` takes one argument a side: the two files form is its comma list.
        let side = paths.join(",");
        let compared = run(&strings(&["compare", "--json", &side, &side]), form);
        let value: serde_json::Value = serde_json::from_str(&compared).unwrap();
        let page = forms.out.join(format!("report-{idx}.html"));
        // Several arguments are several evaluations to `report`: one evaluation is one argument.
        run(
            &strings(&["report", "--out", page.to_str().unwrap(), &side]),
            form,
        );
        let html = std::fs::read_to_string(&page).unwrap();
        assert!(
            html.contains("5a7613c15542994ccc9186bf"),
            "{form}: the report lacks a question"
        );
        seen.push((form, value["n"].clone(), value["a"]["em"].clone()));
    }
    assert_eq!(seen[0].1, serde_json::json!(100), "{seen:?}");
    for (form, n, em) in &seen[1..] {
        assert_eq!((n, em), (&seen[0].1, &seen[0].2), "{form}");
    }
}
