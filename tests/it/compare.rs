//! `compare`: real Reflexion trials paired by id (fixtures/compare/SOURCE.md), the `--json`
//! contract, the statistics against hand-computed values, and the errors on bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

use react_docstore::base::metrics::AnswerScore;
use serde_json::Value;

use crate::fixture;

pub const TRIAL_1: &str = "compare/trial-1.results.jsonl";
pub const TRIAL_3: &str = "compare/trial-3.results.jsonl";
/// Trial 1 replayed with a step budget of 3 instead of 6.
pub const TRIAL_1_BUDGET_3: &str = "compare/trial-1.max-steps-3.results.jsonl";

/// Runs the binary in the repository root; (status, stdout, stderr).
pub fn react_docstore(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// `compare --json A B` as a JSON value.
pub fn compare_json(a: &Path, b: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["compare", "--json", a.to_str().unwrap(), b.to_str().unwrap()];
    args.extend(extra);
    let (status, stdout, stderr) = react_docstore(&args);
    assert_eq!(status, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

pub fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

pub fn write_lines(path: &Path, runs: &[Value]) {
    let text: String = runs.iter().map(|run| format!("{run}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// EM of one results line, computed here from its answer and gold.
fn is_right(run: &Value) -> bool {
    AnswerScore::new(
        run["answer"].as_str().unwrap_or(""),
        run["gold"].as_str().unwrap(),
    )
    .em
}

#[test]
fn compare_json_holds_the_contract_fields_and_the_counts_of_the_files() {
    let (a, b) = (fixture(TRIAL_1), fixture(TRIAL_1_BUDGET_3));
    let json = compare_json(&a, &b, &[]);
    for field in [
        "n",
        "only_in_a",
        "only_in_b",
        "both_right",
        "a_only",
        "b_only",
        "both_wrong",
        "mcnemar_p",
        "flipped",
    ] {
        assert!(json.get(field).is_some(), "field `{field}` is missing: {json}");
    }
    for side in ["a", "b"] {
        for field in ["em", "f1"] {
            assert!(json[side][field].is_f64(), "{side}.{field}");
        }
    }
    for diff in ["em_diff", "f1_diff"] {
        for field in ["value", "ci_low", "ci_high"] {
            assert!(json[diff][field].is_f64(), "{diff}.{field}");
        }
    }

    // The four counts, counted here from the two files line by line.
    let (runs_a, runs_b) = (read_lines(&a), read_lines(&b));
    let mut counts = [0u64; 4];
    for run_a in &runs_a {
        let run_b = runs_b.iter().find(|run| run["id"] == run_a["id"]).unwrap();
        counts[match (is_right(run_a), is_right(run_b)) {
            (true, true) => 0,
            (true, false) => 1,
            (false, true) => 2,
            (false, false) => 3,
        }] += 1;
    }
    let found = ["both_right", "a_only", "b_only", "both_wrong"].map(|field| json[field].as_u64().unwrap());
    assert_eq!(found, counts);
    assert_eq!(
        (
            json["n"].as_u64(),
            json["only_in_a"].as_u64(),
            json["only_in_b"].as_u64()
        ),
        (Some(100), Some(0), Some(0))
    );
    // Reflexion's own trial summary: 34 correct of 100 in trial 1.
    assert_eq!(json["a"]["em"].as_f64(), Some(0.34));
    // A smaller budget can only lose answers: every flip is one A got right.
    let (a_only, b_only) = (counts[1], counts[2]);
    assert!(a_only > 0 && b_only == 0, "{counts:?}");
    // McNemar exact, b = 0: 2 · ½^a_only.
    let p = json["mcnemar_p"].as_f64().unwrap();
    assert!((p - 2.0 * 0.5f64.powi(a_only as i32)).abs() < 1e-15, "{p}");
    // The EM difference is B − A, bracketed by its interval, which here excludes 0.
    let em_diff = &json["em_diff"];
    let value = em_diff["value"].as_f64().unwrap();
    assert!((value - (json["b"]["em"].as_f64().unwrap() - json["a"]["em"].as_f64().unwrap())).abs() < 1e-12);
    assert!((value + a_only as f64 / 100.0).abs() < 1e-12);
    let (low, high) = (
        em_diff["ci_low"].as_f64().unwrap(),
        em_diff["ci_high"].as_f64().unwrap(),
    );
    assert!(low <= value && value <= high && high < 0.0, "{em_diff}");

    let flipped = json["flipped"].as_array().unwrap();
    assert_eq!(flipped.len() as u64, a_only);
    for flip in flipped {
        assert_eq!(flip["right"], "a");
        let run_a = runs_a.iter().find(|run| run["id"] == flip["id"]).unwrap();
        assert_eq!(flip["a_answer"], run_a["answer"]);
        assert_eq!(flip["gold"], run_a["gold"]);
        assert!(is_right(run_a));
    }
}

#[test]
fn compare_is_reproducible_and_the_seed_drives_the_intervals() {
    let (a, b) = (fixture(TRIAL_1), fixture(TRIAL_3));
    let first = compare_json(&a, &b, &[]);
    assert_eq!(compare_json(&a, &b, &[]), first);
    let other = compare_json(&a, &b, &["--seed", "2"]);
    assert_eq!(other["f1_diff"]["value"], first["f1_diff"]["value"]);
    assert_ne!(other["f1_diff"]["ci_low"], first["f1_diff"]["ci_low"]);
    assert_eq!(first["resamples"].as_u64(), Some(10_000));
    // Trials 1 and 3 answer 12 questions differently, none of them right: F1 moves, EM does not.
    assert_eq!(
        (first["a_only"].as_u64(), first["b_only"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(first["mcnemar_p"].as_f64(), Some(1.0));
    assert_ne!(first["f1_diff"]["value"].as_f64(), Some(0.0));
}

#[test]
fn compare_text_of_a_step_budget() {
    let (status, stdout, stderr) = react_docstore(&[
        "compare",
        &format!("fixtures/{TRIAL_1}"),
        &format!("fixtures/{TRIAL_1_BUDGET_3}"),
    ]);
    assert_eq!(status, 0, "{stderr}");
    crate::assert_snapshot!("compare_text_budget", stdout);
}

/// Half the questions from one file, half from the other: flips both ways.
#[test]
fn flipped_questions_list_only_a_first_then_only_b_in_a_order() {
    let dir = tempfile::tempdir().unwrap();
    let full = read_lines(&fixture(TRIAL_1));
    let cut = read_lines(&fixture(TRIAL_1_BUDGET_3));
    // Each side one evaluation (one step budget on every line), half its answers from each file.
    let mix = |first: &[Value], second: &[Value]| -> Vec<Value> {
        let mut lines: Vec<Value> = first[..50].iter().chain(&second[50..]).cloned().collect();
        for line in &mut lines {
            line["max_steps"] = first[0]["max_steps"].clone();
        }
        lines
    };
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    write_lines(&a, &mix(&full, &cut));
    // B in another order: pairing is by id, not by line.
    let mut runs_b = mix(&cut, &full);
    runs_b.reverse();
    write_lines(&b, &runs_b);
    let json = compare_json(&a, &b, &[]);
    let flipped = json["flipped"].as_array().unwrap();
    let sides: Vec<&str> = flipped
        .iter()
        .map(|flip| flip["right"].as_str().unwrap())
        .collect();
    let n_a = sides.iter().filter(|&&side| side == "a").count();
    assert!(n_a > 0 && n_a < sides.len(), "{sides:?}");
    assert!(sides[..n_a].iter().all(|&side| side == "a") && sides[n_a..].iter().all(|&side| side == "b"));
    assert_eq!(json["a_only"].as_u64(), Some(n_a as u64));
    let a_ids: Vec<Value> = read_lines(&a).into_iter().map(|run| run["id"].clone()).collect();
    let position = |flip: &Value| a_ids.iter().position(|id| *id == flip["id"]).unwrap();
    for group in [&flipped[..n_a], &flipped[n_a..]] {
        assert!(
            group
                .windows(2)
                .all(|pair| position(&pair[0]) < position(&pair[1]))
        );
    }
    // McNemar from the counts: 2 · P(X ≤ min) for X ~ Binomial(n, ½).
    let (b_count, c_count) = (json["a_only"].as_u64().unwrap(), json["b_only"].as_u64().unwrap());
    let n = b_count + c_count;
    let tail: f64 = (0..=b_count.min(c_count)).map(|k| binomial(n, k)).sum::<f64>() / 2f64.powi(n as i32);
    assert!((json["mcnemar_p"].as_f64().unwrap() - (2.0 * tail).min(1.0)).abs() < 1e-12);
}

fn binomial(n: u64, k: u64) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

#[track_caller]
fn check_error(a: &Path, b: &Path, expected: &[&str]) {
    let (status, stdout, stderr) = react_docstore(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(status, 2, "{stdout}{stderr}");
    for part in expected {
        assert!(stderr.contains(part), "`{part}` is not in: {stderr}");
    }
}

#[test]
fn bad_input_is_an_error_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let trial = fixture(TRIAL_1);
    let runs = read_lines(&trial);
    let path = |name: &str| -> PathBuf { dir.path().join(name) };

    // A question file is not a results file: said so, with the argument that takes it.
    let questions = fixture("hotpotqa/official.jsonl");
    check_error(
        &questions,
        &trial,
        &[
            "official.jsonl` is a HotpotQA question file, not results",
            "`eval ",
            "`score RESULTS",
        ],
    );
    std::fs::write(path("empty.jsonl"), "").unwrap();
    check_error(&trial, &path("empty.jsonl"), &["empty.jsonl", "holds no runs"]);

    // No question in common.
    let mut other = runs[..3].to_vec();
    for run in &mut other {
        run["id"] = Value::from(format!("other-{}", run["id"].as_str().unwrap()));
    }
    write_lines(&path("other.jsonl"), &other);
    check_error(
        &trial,
        &path("other.jsonl"),
        &["no question id in common", "other.jsonl"],
    );

    // The same id asking another question.
    let mut changed = runs.clone();
    changed[41]["question"] = Value::from("A different question?");
    write_lines(&path("changed.jsonl"), &changed);
    check_error(
        &trial,
        &path("changed.jsonl"),
        &["differs", "line 42", "changed.jsonl", "A different question?"],
    );

    // One id twice; a line without an id.
    let mut twice = runs[..5].to_vec();
    twice.push(runs[2].clone());
    write_lines(&path("twice.jsonl"), &twice);
    check_error(
        &path("twice.jsonl"),
        &trial,
        &["twice.jsonl", "line 6", "already run on line 3"],
    );
    let mut no_id = runs[..5].to_vec();
    no_id[3].as_object_mut().unwrap().remove("id");
    write_lines(&path("no-id.jsonl"), &no_id);
    check_error(&trial, &path("no-id.jsonl"), &["no-id.jsonl", "line 4", "`id`"]);
}

#[test]
fn fever_counts_the_label() {
    let dir = tempfile::tempdir().unwrap();
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("runs/react-paper/fever-3522.json")).unwrap())
            .unwrap();
    assert_eq!(run["fewshot"], "fever");
    let gold = run["gold"].as_str().unwrap().to_owned();
    let wrong_label = if gold == "SUPPORTS" { "REFUTES" } else { "SUPPORTS" };
    let claims = |answers: &[&str]| -> Vec<Value> {
        answers
            .iter()
            .enumerate()
            .map(|(idx, answer)| {
                let mut claim = run.clone();
                claim["id"] = Value::from(format!("claim-{idx}"));
                claim["answer"] = Value::from(*answer);
                claim
            })
            .collect()
    };
    let lower = gold.to_lowercase();
    write_lines(&dir.path().join("a.jsonl"), &claims(&[&gold, &gold, wrong_label]));
    write_lines(
        &dir.path().join("b.jsonl"),
        &claims(&[&lower, wrong_label, &gold]),
    );
    let json = compare_json(&dir.path().join("a.jsonl"), &dir.path().join("b.jsonl"), &[]);
    assert_eq!(json["task"], "fever");
    let counts = ["both_right", "a_only", "b_only", "both_wrong"].map(|field| json[field].as_u64().unwrap());
    assert_eq!(counts, [1, 1, 1, 0]);
    let (_, stdout, _) = react_docstore(&[
        "compare",
        dir.path().join("a.jsonl").to_str().unwrap(),
        dir.path().join("b.jsonl").to_str().unwrap(),
    ]);
    assert!(stdout.contains("accuracy B − A"), "{stdout}");
}

#[test]
fn a_question_with_two_golds_is_refused_unless_each_file_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let trial = fixture(TRIAL_1);
    let runs = read_lines(&trial);
    // Question 4 (right in A: `Creature Comforts`), another gold in B, the answer unchanged.
    let mut other_gold = runs.clone();
    other_gold[3]["gold"] = Value::from("Wallace and Gromit");
    let b = dir.path().join("other-gold.jsonl");
    write_lines(&b, &other_gold);
    // A gold the metric reads the same (case, punctuation, articles) is the same gold.
    let mut same_gold = runs.clone();
    same_gold[3]["gold"] = Value::from("creature comforts.");
    let same = dir.path().join("same-gold.jsonl");
    write_lines(&same, &same_gold);
    let json = compare_json(&trial, &same, &[]);
    assert_eq!(
        (&json["a_only"], &json["b_only"]),
        (&Value::from(0), &Value::from(0))
    );

    check_error(
        &trial,
        &b,
        &[
            "question `5a7180205542994082a3e856` has two gold answers",
            "trial-1.results.jsonl` line 4 says \"Creature Comforts\"",
            "other-gold.jsonl` line 4 says \"Wallace and Gromit\"",
            "--ignore-gold",
        ],
    );
    let (status, _, stderr) = react_docstore(&[
        "report",
        trial.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        dir.path().join("report.html").to_str().unwrap(),
    ]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("has two gold answers"), "{stderr}");

    // Asked for: each side scored against its own gold, and the flip names both.
    let json = compare_json(&trial, &b, &["--ignore-gold"]);
    let flip = json["flipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|flip| flip["id"] == runs[3]["id"])
        .unwrap();
    assert_eq!(flip["right"], "a");
    assert_eq!(flip["gold"], "Creature Comforts");
    assert_eq!(flip["b_gold"], "Wallace and Gromit");
    // Flips of one gold carry no `b_gold`.
    assert!(
        json["flipped"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|other| other["id"] != runs[3]["id"])
            .all(|other| other.get("b_gold").is_none())
    );
    let (status, stdout, _) = react_docstore(&[
        "compare",
        "--ignore-gold",
        trial.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!(status, 0);
    assert!(
        stdout.contains("| Creature Comforts (B: Wallace and Gromit)"),
        "{stdout}"
    );
}

#[test]
fn a_run_without_stopped_is_an_error_only_when_it_records_one() {
    let dir = tempfile::tempdir().unwrap();
    let trial = fixture(TRIAL_1);
    let mut runs = read_lines(&trial);
    for run in &mut runs {
        run.as_object_mut().unwrap().remove("stopped");
    }
    // One run that did fail, saying so only by its `error`.
    runs[7]["error"] = Value::from("the model server answered 500");
    runs[7]["answer"] = Value::Null;
    let b = dir.path().join("no-stopped.jsonl");
    write_lines(&b, &runs);
    let json = compare_json(&trial, &b, &[]);
    assert_eq!(json["a"]["errors"], 0);
    assert_eq!(json["b"]["errors"], 1, "{}", json["b"]);
}
