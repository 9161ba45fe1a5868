//! Shards (`eval --shard`) and evaluations read from several files: the partition's properties,
//! `--shard auto` under Slurm's and Kubernetes' variables, resuming per shard, merging (duplicates,
//! conflicts, mixed settings, missing shards, attempts), and `score`, `compare`, `report` and
//! `merge` over shards giving what the unsharded run of the same scripted model gives.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use react_docstore::record::questions::Contexts;
use react_docstore::record::selection::Selection;
use react_docstore::record::shard::Shard;
use react_docstore::record::shard::{ShardArg, shard_of};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::output_within_30s;

/// `n` questions `Is {i} even?` with ids `q000`…, gold `yes` for even numbers.
fn write_questions(dir: &Path, name: &str, order: impl Iterator<Item = usize>) -> PathBuf {
    let questions: Vec<serde_json::Value> = order
        .map(|i| {
            serde_json::json!({
                "_id": format!("q{i:03}"),
                "question": format!("Is {i} even?"),
                "answer": if i % 2 == 0 { "yes" } else { "no" },
                "type": "comparison",
            })
        })
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&questions).unwrap()).unwrap();
    path
}

const N_QUESTIONS: usize = 40;

fn ids_of(questions: &Path, selection: &Selection) -> Vec<String> {
    selection
        .read(questions, Contexts::Unused)
        .unwrap()
        .questions
        .into_iter()
        .map(|question| question.id)
        .collect()
}

fn shard_selection(index: u32, count: u32) -> Selection {
    Selection {
        shard: Some(Shard::new(index, count).unwrap()),
        ..Selection::default()
    }
}

#[test]
fn the_partition_is_disjoint_covering_and_the_same_for_any_order_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let questions = write_questions(dir.path(), "q.json", 0..N_QUESTIONS);
    let reversed = write_questions(dir.path(), "reversed.json", (0..N_QUESTIONS).rev());
    let shuffled = write_questions(
        dir.path(),
        "shuffled.json",
        (0..N_QUESTIONS).map(|i| (i * 17 + 5) % N_QUESTIONS),
    );
    let all: BTreeSet<String> = ids_of(&questions, &Selection::default()).into_iter().collect();
    for count in [1, 2, 3, 4, 7, 16] {
        let mut seen: HashMap<String, u32> = HashMap::new();
        for index in 0..count {
            let selection = shard_selection(index, count);
            let ids = ids_of(&questions, &selection);
            for id in &ids {
                assert_eq!(shard_of(id, count), index);
                let earlier = seen.insert(id.clone(), index);
                assert_eq!(
                    earlier, None,
                    "`{id}` in shards {earlier:?} and {index} of {count}"
                );
            }
            // The same questions, whatever the order of the file.
            let as_set = |ids: Vec<String>| ids.into_iter().collect::<BTreeSet<_>>();
            let ids = as_set(ids);
            assert_eq!(as_set(ids_of(&reversed, &selection)), ids, "{index}/{count}");
            assert_eq!(as_set(ids_of(&shuffled, &selection)), ids, "{index}/{count}");
        }
        let covered: BTreeSet<String> = seen.into_keys().collect();
        assert_eq!(covered, all, "the {count} shards cover the selection");
    }
    // The same on every machine: pinned (Python: sha256(id)[:8] big-endian mod 4).
    assert_eq!(
        ids_of(&questions, &shard_selection(0, 4)),
        [
            "q000", "q003", "q008", "q009", "q014", "q015", "q019", "q022", "q024", "q031", "q032", "q034",
            "q036"
        ]
    );
    // The shard is taken after the limit: a part of the first 20.
    let limited = Selection {
        limit: Some(20),
        ..shard_selection(0, 4)
    };
    assert_eq!(
        ids_of(&questions, &limited),
        ["q000", "q003", "q008", "q009", "q014", "q015", "q019"]
    );
}

/// `--shard` resolved against `vars` as the environment.
fn resolve(arg: &str, vars: &[(&str, &str)]) -> Result<Shard, String> {
    let vars: HashMap<&str, &str> = vars.iter().copied().collect();
    arg.parse::<ShardArg>()
        .unwrap()
        .resolve(|name| vars.get(name).map(|value| (*value).to_owned()))
        .map_err(|error| error.to_string())
}

#[test]
fn shard_auto_reads_slurm_and_kubernetes_variables() {
    let shard = |index, count| Ok(Shard::new(index, count).unwrap());
    let slurm = [("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_COUNT", "4")];
    assert_eq!(resolve("auto", &slurm), shard(2, 4));
    assert_eq!(resolve("auto/4", &slurm), shard(2, 4));
    assert_eq!(resolve("auto/8", &slurm), shard(2, 8), "the count given wins");
    assert_eq!(resolve("1/3", &slurm), shard(1, 3), "a shard given wins");
    // A task resubmitted alone (`SHARDS=4 sbatch --array=2`): its own index, the count given.
    let resubmitted = [
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "1"),
        ("SLURM_ARRAY_TASK_MIN", "2"),
        ("SLURM_ARRAY_TASK_STEP", "1"),
    ];
    assert_eq!(resolve("auto/4", &resubmitted), shard(2, 4));
    let not_from_zero = resolve("auto", &resubmitted).unwrap_err();
    assert!(
        not_from_zero.contains("the Slurm array starts at 2 (`SLURM_ARRAY_TASK_MIN`)")
            && not_from_zero.contains("give the count: `--shard auto/N`"),
        "{not_from_zero}"
    );
    let kubernetes = [("JOB_COMPLETION_INDEX", "5")];
    assert_eq!(resolve("auto/8", &kubernetes), shard(5, 8));

    let error = |arg, vars: &[(&str, &str)]| resolve(arg, vars).unwrap_err();
    let none = error("auto", &[]);
    for name in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "JOB_COMPLETION_INDEX",
        "--shard I/N",
    ] {
        assert!(none.contains(name), "{none}");
    }
    let no_count = error("auto", &kubernetes);
    assert!(
        no_count.contains("`JOB_COMPLETION_INDEX` is 5")
            && no_count.contains("pass it as `--shard auto/N` (N = the Job's `spec.completions`)"),
        "{no_count}"
    );
    let old_slurm = error("auto", &[("SLURM_ARRAY_TASK_ID", "0")]);
    assert!(
        old_slurm.contains("`SLURM_ARRAY_TASK_COUNT` is not"),
        "{old_slurm}"
    );
    assert_eq!(resolve("auto/2", &[("SLURM_ARRAY_TASK_ID", "1")]), shard(1, 2));
    let stepped = [
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
        ("SLURM_ARRAY_TASK_STEP", "2"),
    ];
    assert!(error("auto", &stepped).contains("steps by 2"));
    let gappy = [("SLURM_ARRAY_TASK_ID", "9"), ("SLURM_ARRAY_TASK_COUNT", "3")];
    assert!(error("auto", &gappy).contains("index 9 (`SLURM_ARRAY_TASK_ID`) is not below the shard count 3"));
    assert!(
        error("auto/2", &slurm).contains("index 2 (`SLURM_ARRAY_TASK_ID`) is not below the shard count 2")
    );
    let not_a_number = error("auto/3", &[("JOB_COMPLETION_INDEX", "two")]);
    assert!(not_a_number.contains("`JOB_COMPLETION_INDEX` is `two`, expected a number"));
    assert!(error("auto/3", &[("JOB_COMPLETION_INDEX", "3")]).contains("is not below the shard count 3"));
}

/// A model that finishes at once: `yes` for an even number in the question, else `no`; with
/// `wrong_every` = k, every k-th number gets the other answer.
struct ParityModel {
    wrong_every: usize,
    name: &'static str,
}

impl Respond for ParityModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        let prompt = body["prompt"].as_str().unwrap();
        let question = prompt.rsplit_once("\nQuestion: Is ").unwrap().1;
        let number: usize = question.split_once(' ').unwrap().0.parse().unwrap();
        let even =
            number.is_multiple_of(2) != (self.wrong_every > 0 && number.is_multiple_of(self.wrong_every));
        let answer = if even { "yes" } else { "no" };
        ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "id": "cmpl", "object": "text_completion", "model": self.name,
            "choices": [{"index": 0, "text": format!(" The number settles it.\nAction 1: Finish[{answer}]"), "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt.len() / 4, "completion_tokens": 12, "total_tokens": prompt.len() / 4 + 12}
        }))
    }
}

async fn parity_model(wrong_every: usize, name: &'static str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/completions"))
        .respond_with(ParityModel { wrong_every, name })
        .mount(&server)
        .await;
    server
}

async fn n_requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

/// `react-docstore eval QUESTIONS --out RESULTS [--shard SHARD]` against `model`, in `dir`, with
/// no scheduler variable but those in `vars`.
fn eval(
    dir: &Path,
    questions: &Path,
    model: &MockServer,
    results: &Path,
    shard: Option<&str>,
    vars: &[(&str, &str)],
) -> (String, String, i32) {
    let mut command = crate::binary();
    command
        .current_dir(dir)
        .arg("eval")
        .arg(questions)
        .args(["--api", "completions", "--model", "parity", "--concurrency", "1"])
        .args(["--base-url", &format!("{}/v1", model.uri())])
        .args(["--docstore", "corpus:pages.jsonl"])
        .arg("--out")
        .arg(results);
    for name in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_STEP",
        "JOB_COMPLETION_INDEX",
    ] {
        command.env_remove(name);
    }
    command.envs(vars.iter().copied());
    if let Some(shard) = shard {
        command.args(["--shard", shard]);
    }
    output_within_30s(&mut command, "an evaluation")
}

fn write_pages(dir: &Path) {
    std::fs::write(
        dir.join("pages.jsonl"),
        "{\"title\": \"Even\", \"text\": \"An even number is divisible by two.\"}\n",
    )
    .unwrap();
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn shard_auto_runs_the_schedulers_shard_records_it_and_resumes_only_it() {
    let dir = tempfile::tempdir().unwrap();
    write_pages(dir.path());
    let questions = write_questions(dir.path(), "q.json", 0..N_QUESTIONS);
    let model = parity_model(0, "parity").await;

    // A Slurm array task: shard 1 of 3.
    let slurm = dir.path().join("slurm.jsonl");
    let vars = [("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_COUNT", "3")];
    let (_, stderr, code) = eval(dir.path(), &questions, &model, &slurm, Some("auto"), &vars);
    assert_eq!(code, 0, "{stderr}");
    let expected: Vec<String> = ids_of(&questions, &shard_selection(1, 3));
    let runs = lines(&slurm);
    let ids: Vec<&str> = runs.iter().map(|run| run["id"].as_str().unwrap()).collect();
    assert_eq!(ids, expected);
    for run in &runs {
        let id = run["id"].as_str().unwrap();
        let position: usize = id[1..].parse().unwrap();
        assert_eq!(
            run["shard"],
            serde_json::json!({"index": 1, "count": 3, "position": position, "selected": N_QUESTIONS})
        );
    }
    let calls = n_requests(&model).await;
    assert_eq!(calls, expected.len());

    // A Kubernetes Indexed Job's pod: shard 2 of 3 with the count given.
    let kubernetes = dir.path().join("kubernetes.jsonl");
    let vars = [("JOB_COMPLETION_INDEX", "2")];
    let (_, stderr, code) = eval(dir.path(), &questions, &model, &kubernetes, Some("auto/3"), &vars);
    assert_eq!(code, 0, "{stderr}");
    let ids: Vec<String> = lines(&kubernetes)
        .iter()
        .map(|run| run["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ids_of(&questions, &shard_selection(2, 3)));
    let (_, stderr, code) = eval(dir.path(), &questions, &model, &kubernetes, Some("auto"), &vars);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("passes no variable with the Job's completions count"),
        "{stderr}"
    );

    // No scheduler: refused before any call, naming what it reads.
    let calls = n_requests(&model).await;
    let (_, stderr, code) = eval(
        dir.path(),
        &questions,
        &model,
        &dir.path().join("none.jsonl"),
        Some("auto"),
        &[],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("`--shard auto` found no scheduler's shard in the environment: it reads `SLURM_ARRAY_TASK_ID` and `SLURM_ARRAY_TASK_COUNT`"),
        "{stderr}"
    );
    assert_eq!(n_requests(&model).await, calls);

    // The same shard again resumes with no call; another shard, or none, is refused.
    let (_, stderr, code) = eval(dir.path(), &questions, &model, &slurm, Some("1/3"), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(n_requests(&model).await, calls);
    for (other, named) in [
        (Some("0/3"), "this evaluation is shard 0/3"),
        (None, "this evaluation is an unsharded evaluation"),
    ] {
        let (_, stderr, code) = eval(dir.path(), &questions, &model, &slurm, other, &[]);
        assert_eq!(code, 2);
        assert!(
            stderr.contains("holds runs of shard 1/3")
                && stderr.contains(named)
                && stderr.contains("each shard has its results file"),
            "{stderr}"
        );
    }
    assert_eq!(n_requests(&model).await, calls);
    assert_eq!(
        lines(&slurm).len(),
        expected.len(),
        "the refused runs wrote nothing"
    );

    // A shard that holds none of the selected questions is refused.
    let (_, stderr, code) = eval(
        dir.path(),
        &questions,
        &model,
        &dir.path().join("empty.jsonl"),
        Some("14/16"),
        &[],
    );
    assert_eq!(code, 2);
    assert!(
        stderr.contains("shard 14/16 holds none of the 40 selected questions of `")
            && stderr.contains("split them into fewer shards"),
        "{stderr}"
    );

    // Without --out, each shard gets its own default file.
    let (_, stderr, code) = eval_default_out(dir.path(), &questions, &model, "0/3");
    assert_eq!(code, 0, "{stderr}");
    assert!(dir.path().join("q.shard-0-of-3.results.jsonl").exists());
}

fn eval_default_out(dir: &Path, questions: &Path, model: &MockServer, shard: &str) -> (String, String, i32) {
    let mut command = crate::binary();
    command
        .current_dir(dir)
        .arg("eval")
        .arg(questions)
        .args(["--api", "completions", "--model", "parity", "--shard", shard])
        .args(["--base-url", &format!("{}/v1", model.uri())])
        .args(["--docstore", "corpus:pages.jsonl"]);
    output_within_30s(&mut command, "an evaluation")
}

/// `react-docstore ARGS...` in `dir`: stdout, stderr, exit code.
fn command(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let mut command = crate::binary();
    command.current_dir(dir).args(args);
    output_within_30s(&mut command, "a command")
}

/// Evaluates `questions` with `model` unsharded into `{dir}/whole/{name}` and in three shards
/// into the directory `{dir}/shards/{name}/`.
fn evaluate_both_ways(dir: &Path, questions: &Path, model: &MockServer, name: &str) {
    std::fs::create_dir_all(dir.join("whole")).unwrap();
    std::fs::create_dir_all(dir.join("shards").join(name)).unwrap();
    let (_, stderr, code) = eval(dir, questions, model, &dir.join("whole").join(name), None, &[]);
    assert_eq!(code, 0, "{stderr}");
    for index in 0..3 {
        let results = dir.join("shards").join(name).join(format!("{index}.jsonl"));
        let (_, stderr, code) = eval(dir, questions, model, &results, Some(&format!("{index}/3")), &[]);
        assert_eq!(code, 0, "{stderr}");
    }
}

/// The runs of a results file with their shard records taken out.
fn without_shards(path: &Path) -> Vec<serde_json::Value> {
    lines(path)
        .into_iter()
        .map(|mut run| {
            run.as_object_mut().unwrap().remove("shard");
            // The split the evaluation's settings record: the rest of them is the same.
            if let Some(selection) = run.pointer_mut("/evaluation/selection") {
                selection.as_object_mut().unwrap().remove("shards");
            }
            run
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn score_compare_report_and_merge_over_shards_equal_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_pages(root);
    let questions = write_questions(root, "q.json", 0..N_QUESTIONS);
    evaluate_both_ways(root, &questions, &parity_model(0, "parity").await, "A");
    evaluate_both_ways(root, &questions, &parity_model(3, "parity").await, "B");
    let shard_files = |name: &str| -> Vec<String> {
        (0..3)
            .map(|index| format!("shards/{name}/{index}.jsonl"))
            .collect()
    };

    // score: the directory, the files one by one, the same JSON.
    let (whole, stderr, code) = command(root, &["score", "whole/B", "q.json", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let (sharded, stderr, _) = command(root, &["score", "shards/B", "q.json", "--json"]);
    assert_eq!((sharded.as_str(), stderr.as_str()), (whole.as_str(), ""));
    let files = shard_files("B");
    let mut args: Vec<&str> = vec!["score"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["q.json", "--json"]);
    assert_eq!(command(root, &args).0, whole);
    assert!(whole.contains("\"em\":0.65"), "{whole}");

    // compare: each side a directory or comma-joined files, the same comparison.
    let (whole, stderr, code) = command(root, &["compare", "whole/A", "whole/B", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let joined = files.join(",");
    for (a, b) in [("shards/A", "shards/B"), ("shards/A", joined.as_str())] {
        let (sharded, stderr, code) = command(root, &["compare", a, b, "--json"]);
        assert_eq!((code, stderr.as_str()), (0, ""));
        let mut sharded: serde_json::Value = serde_json::from_str(&sharded).unwrap();
        let mut whole: serde_json::Value = serde_json::from_str(&whole).unwrap();
        for side in ["a", "b"] {
            sharded[side].as_object_mut().unwrap().remove("path");
            whole[side].as_object_mut().unwrap().remove("path");
        }
        assert_eq!(sharded, whole);
        assert_eq!(whole["b_only"], 0);
        assert!(whole["a_only"].as_u64().unwrap() > 0);
    }

    // report: the same page, but for the evaluations' paths.
    let (_, stderr, code) = command(root, &["report", "whole/A", "whole/B", "--out", "whole.html"]);
    assert_eq!(code, 0, "{stderr}");
    let (_, stderr, code) = command(root, &["report", "shards/A", "shards/B", "--out", "shards.html"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    let page = |name: &str, folder: &str| {
        std::fs::read_to_string(root.join(name))
            .unwrap()
            .replace(folder, "[DIR]")
    };
    assert_eq!(page("shards.html", "shards/"), page("whole.html", "whole/"));

    // merge: the unsharded file's runs, in its order, each with its shard.
    let (stdout, stderr, code) = command(root, &["merge", "shards/A", "--out", "merged.jsonl"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_eq!(stdout, "merged         40 runs of 3 files into merged.jsonl\n");
    assert_eq!(
        without_shards(&root.join("merged.jsonl")),
        without_shards(&root.join("whole/A"))
    );
    assert!(
        lines(&root.join("merged.jsonl"))
            .iter()
            .all(|run| run["shard"]["count"] == 3)
    );
    // A merged file is an evaluation too.
    let (merged, _, _) = command(root, &["score", "merged.jsonl", "q.json", "--json"]);
    assert_eq!(merged, command(root, &["score", "whole/A", "q.json", "--json"]).0);
}

/// Writes `runs` as a results file.
fn write_lines(path: &Path, runs: &[serde_json::Value]) {
    let text: String = runs.iter().map(|run| format!("{run}\n")).collect();
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn merging_refuses_what_disagrees_and_reports_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_pages(root);
    let questions = write_questions(root, "q.json", 0..N_QUESTIONS);
    evaluate_both_ways(root, &questions, &parity_model(0, "parity").await, "A");
    let shard = |index: usize| lines(&root.join(format!("shards/A/{index}.jsonl")));
    let merge = |args: &[&str]| {
        let mut all = vec!["merge"];
        all.extend(args);
        all.extend(["--out", "merged.jsonl"]);
        command(root, &all)
    };

    // Duplicates: a shard given twice (in its directory and by name) is kept once.
    let (stdout, stderr, code) = merge(&["shards/A", "shards/A/1.jsonl"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "merged         40 runs of 4 files into merged.jsonl\n");
    let n_shard_1 = shard(1).len();
    assert_eq!(
        stderr,
        format!("note: {n_shard_1} runs were in two files with the same answer: each is kept once\n")
    );

    // A conflict: the same question and attempt answered otherwise in another file.
    let mut changed = shard(1);
    let id = changed[0]["id"].as_str().unwrap().to_owned();
    changed[0]["answer"] = "maybe".into();
    write_lines(&root.join("changed.jsonl"), &changed);
    let (_, stderr, code) = merge(&["shards/A", "changed.jsonl"]);
    assert_eq!(code, 2);
    let expected = format!(
        "error: question `{id}` (its only attempt) is in two files that disagree on its answer: `shards/A/1.jsonl` line 1 has \"{}\", `changed.jsonl` line 1 has \"maybe\"\n",
        shard(1)[0]["answer"].as_str().unwrap()
    );
    assert_eq!(stderr, expected);

    // A line made another attempt by hand contradicts its own `evaluation` record: refused.
    let mut trial_2 = shard(1);
    for run in &mut trial_2 {
        run["trial"] = 2.into();
        run["answer"] = "maybe".into();
    }
    write_lines(&root.join("trial-2.jsonl"), &trial_2);
    let (_, stderr, code) = merge(&["shards/A", "trial-2.jsonl"]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            2,
            "error: `trial-2.jsonl` line 1 contradicts itself: its `trial/epoch` is trial 2, its `evaluation` record says one attempt a question; the line was changed after `eval` wrote it — restore it, or take it out of the file\n"
        )
    );

    // Mixed settings: a shard made with another model.
    let mut other_model = shard(2);
    for run in &mut other_model {
        run["model"] = "other".into();
        run["evaluation"]["model"] = "other".into();
    }
    write_lines(&root.join("other-model.jsonl"), &other_model);
    let (_, stderr, code) = merge(&["shards/A/0.jsonl", "shards/A/1.jsonl", "other-model.jsonl"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "error: not one evaluation: they differ in model — `shards/A/0.jsonl` line 1 has `parity`, `other-model.jsonl` line 1 has `other` (--model sets it)\n"
    );
    // Another split: shards of 3 beside a file of 4.
    let mut of_four = shard(2);
    of_four[0]["shard"]["count"] = 4.into();
    write_lines(&root.join("of-four.jsonl"), &of_four);
    let (_, stderr, code) = merge(&["shards/A/0.jsonl", "of-four.jsonl"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("their runs differ in shards: `shards/A/0.jsonl` line 1 has shard 0/3 of 40 selected questions, `of-four.jsonl` line 1 has shard 2/4 of 40 selected questions"),
        "{stderr}"
    );
    // A line in a shard its id does not belong to.
    let mut moved = shard(2);
    moved[0]["shard"]["index"] = 0.into();
    let moved_id = moved[0]["id"].as_str().unwrap().to_owned();
    write_lines(&root.join("moved.jsonl"), &moved);
    let (_, stderr, code) = merge(&["moved.jsonl"]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        format!(
            "error: results file `moved.jsonl`, line 1: question `{moved_id}` says shard 0/3, but its id belongs to shard 2/3: the line was not written by that shard\n"
        )
    );

    // Two questions at one position of the selection: not one selection.
    let mut crowded = shard(2);
    crowded[0]["shard"]["position"] = shard(0)[0]["shard"]["position"].clone();
    write_lines(&root.join("crowded.jsonl"), &crowded);
    let (_, stderr, code) = merge(&["shards/A/0.jsonl", "crowded.jsonl"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("their runs differ in selections")
            && stderr.contains(&format!(
                "question `{}` at position",
                crowded[0]["id"].as_str().unwrap()
            )),
        "{stderr}"
    );

    // Missing shards and questions: said by merge, score, compare and report.
    let mut cut = shard(0);
    let n_cut = cut.len();
    cut.truncate(n_cut - 2);
    std::fs::create_dir(root.join("partial")).unwrap();
    write_lines(&root.join("partial/0.jsonl"), &cut);
    let missing_questions = N_QUESTIONS - (n_cut - 2) - shard(2).len();
    let notes = format!(
        "note: 1 of 3 shards missing: 1 (no file holds a run of them)\nnote: {missing_questions} of 40 selected questions missing"
    );
    let (_, stderr, code) = merge(&["partial", "shards/A/2.jsonl"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.starts_with(&notes), "{stderr}");
    let (stdout, stderr, _) = command(
        root,
        &["score", "partial", "shards/A/2.jsonl", "q.json", "--json"],
    );
    assert!(
        stdout.contains(&format!(
            "\"missing\":{missing_questions},\"errors\":0,\"incomplete\":true,\"missing_shards\":[1]"
        )),
        "{stdout}"
    );
    assert!(stderr.starts_with(&notes), "{stderr}");
    let (_, stderr, code) = command(root, &["compare", "partial,shards/A/2.jsonl", "shards/A"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.starts_with("note: `partial,shards/A/2.jsonl`: 1 of 3 shards missing: 1"),
        "{stderr}"
    );
    let (_, stderr, code) = command(root, &["report", "shards/A", "partial", "--out", "r.html"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.starts_with("note: `partial`: 2 of 3 shards missing: 1, 2"),
        "{stderr}"
    );

    // An empty directory is named.
    std::fs::create_dir(root.join("empty")).unwrap();
    let (_, stderr, code) = merge(&["empty"]);
    assert_eq!(
        (code, stderr.as_str()),
        (
            2,
            "error: directory `empty` holds no results file (`*.jsonl`), at any depth\n"
        )
    );
}
