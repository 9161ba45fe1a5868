//! `eval --trials` and `--epochs` against a local scripted model server: which questions each
//! trial asks, Reflexion's reflection prompt and trial prompts byte for byte (the templates read
//! out of Reflexion's own files in `fixtures/reflexion/`), resume after a kill mid-trial, the
//! epochs' reductions against hand-computed values, and replay of a trials file with no model.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

const QUESTIONS: &str = "fixtures/hotpotqa/official.json";
const MISSOURI: &str = "Where was the first governor after the The Missouri Compromise from?";
const WALLACE: &str = "The creator of \"Wallace and Gromit\" also created what animation comedy that matched animated zoo animals with a soundtrack of people talking about their homes? ";
const WOMANS_ERA: &str = "Woman's Era and Naj are what kind of magazines?";
const REFLECTION_REPLY: &str =
    " I answered from the wrong page.\nNext time I will search the creator's other films. \n";

/// What the scripted model answers a question with: what it searches, then its answer in each
/// epoch (by the count of its questions' answers so far) — after a failed trial shown to it, the
/// second answer list.
struct Script {
    search: &'static str,
    answers: &'static [&'static str],
    after_failure: &'static [&'static str],
}

fn script(question: &str) -> Script {
    match question {
        // Right at once.
        q if q.starts_with("Where was the first governor") => Script {
            search: "William King (governor)",
            answers: &["Bath, Maine"],
            after_failure: &["Bath, Maine"],
        },
        // Wrong, then right once a reflection or the last trial is shown.
        q if q.starts_with("The creator of") => Script {
            search: "Nick Park",
            answers: &["Wallace"],
            after_failure: &["Creature Comforts"],
        },
        // Never right.
        _ => Script {
            search: "Be Love",
            answers: &["weekly"],
            after_failure: &["monthly"],
        },
    }
}

/// An OpenAI-compatible `/completions` server answering from [`script`], every prompt kept.
#[derive(Clone, Default)]
struct ScriptedServer {
    prompts: Arc<Mutex<Vec<String>>>,
    /// Answers given so far, by question: the epochs' answer lists are walked with it.
    answered: Arc<Mutex<BTreeMap<String, usize>>>,
    /// Per question, the answers of each epoch instead of the script's (the epochs test).
    epochs: Arc<BTreeMap<&'static str, Vec<&'static str>>>,
    /// A question whose n-th reflection call (from 1) the server refuses, and the calls so far.
    refused_reflection: Option<(&'static str, usize)>,
    reflections_asked: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl Respond for ScriptedServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let prompt = body["prompt"].as_str().unwrap().to_owned();
        self.prompts.lock().unwrap().push(prompt.clone());
        let text = if prompt.ends_with("\n\nReflection:") {
            if let Some((refused, nth)) = self.refused_reflection
                && prompt.contains(refused)
            {
                let mut asked = self.reflections_asked.lock().unwrap();
                let count = asked.entry(refused.to_owned()).or_insert(0);
                *count += 1;
                if *count == nth {
                    return ResponseTemplate::new(400).set_body_string("refused on purpose");
                }
            }
            REFLECTION_REPLY.to_owned()
        } else if prompt.ends_with("\nThought:") {
            // Reflexion's CoT agent: a thought, then `Action: Finish[…]`.
            let at = prompt.rfind("\nQuestion: ").unwrap() + "\nQuestion: ".len();
            let question = prompt[at..].split('\n').next().unwrap();
            let script = script(question);
            let failed_before =
                prompt.contains("Reflections:\n- ") || prompt.contains("(END PREVIOUS TRIAL)");
            let answer = if failed_before {
                script.after_failure[0]
            } else {
                script.answers[0]
            };
            format!(" Let's think step by step. So the answer is {answer}.\nAction: Finish[{answer}]\n")
        } else {
            let at = prompt.rfind("\nQuestion: ").unwrap() + "\nQuestion: ".len();
            let question = prompt[at..].split('\n').next().unwrap().to_owned();
            let step = prompt[at..].matches("\nObservation ").count() + 1;
            let script = script(&question);
            let failed_before =
                prompt.contains("Reflections:\n- ") || prompt.contains("(END PREVIOUS TRIAL)");
            match step {
                1 => format!(
                    " I need to search {}.\nAction 1: Search[{}]",
                    script.search, script.search
                ),
                _ => {
                    let mut answered = self.answered.lock().unwrap();
                    let count = answered.entry(question.clone()).or_insert(0);
                    let answer = match self.epochs.iter().find(|(q, _)| question.starts_with(**q)) {
                        Some((_, answers)) => answers[*count % answers.len()],
                        None if failed_before => script.after_failure[0],
                        None => script.answers[0],
                    };
                    *count += 1;
                    format!(" So the answer is {answer}.\nAction {step}: Finish[{answer}]")
                }
            }
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"text": text}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10},
        }))
    }
}

impl ScriptedServer {
    fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }

    async fn start(&self) -> MockServer {
        crate::serve_posts(self.clone()).await
    }
}

/// An evaluation against a fresh server playing `model` that must succeed: the model (its
/// prompts), the directory and the results file it wrote, and its summary.
async fn evaluated(
    model: ScriptedServer,
    args: &[&str],
) -> (ScriptedServer, tempfile::TempDir, PathBuf, Value) {
    let server = model.start().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let (summary, stderr, code) = eval(&server, &results, args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    (model, dir, results, summary)
}

fn eval(server: &MockServer, results: &Path, args: &[&str]) -> (Value, String, i32) {
    let output = crate::binary()
        .args(["eval", QUESTIONS, "--docstore", "distractor", "--json"])
        .args(crate::completions_model(&server.uri()))
        .args(args)
        .arg("--out")
        .arg(results)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let summary = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (summary, stderr, output.status.code().unwrap_or(-1))
}

fn lines(results: &Path) -> Vec<Value> {
    std::fs::read_to_string(results)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The (question, trial) pairs of a results file.
fn attempts(results: &Path) -> BTreeSet<(String, u64)> {
    lines(results)
        .iter()
        .map(|run| {
            (
                run["question"].as_str().unwrap().to_owned(),
                run["trial"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A string of Reflexion's Python files: a `"""…"""` literal verbatim, a `'…'` one with its `\n`.
fn reflexion_string(file: &str, name: &str) -> String {
    let text = format!(
        "\n{}",
        std::fs::read_to_string(crate::fixture(&format!("reflexion/{file}"))).unwrap()
    );
    let start = text.find(&format!("\n{name} = ")).unwrap() + name.len() + 4;
    let rest = &text[start..];
    if let Some(body) = rest.strip_prefix("\"\"\"") {
        body[..body.find("\"\"\"").unwrap()].to_owned()
    } else {
        let body = rest.strip_prefix('\'').unwrap();
        body[..body.find('\'').unwrap()].replace("\\n", "\n")
    }
}

/// Reflexion's `format_reflections`.
fn format_reflections(reflections: &[&str], header: &str) -> String {
    let trimmed: Vec<&str> = reflections.iter().map(|reflection| reflection.trim()).collect();
    format!("{header}Reflections:\n- {}", trimmed.join("\n- "))
}

/// Reflexion's trial prompt at its first step: `REACT_REFLECT_INSTRUCTION` filled.
fn reflexion_trial_prompt(reflections: &str, question: &str) -> String {
    reflexion_string("prompts.py", "REACT_REFLECT_INSTRUCTION")
        .replace("{examples}", &reflexion_string("fewshots.py", "WEBTHINK_SIMPLE6"))
        .replace("{reflections}", reflections)
        .replace("{question}", question)
        .replace("{scratchpad}", "\nThought 1:")
}

/// The scratchpad of a recorded failed trial as Reflexion keeps it.
fn reflexion_scratchpad(run: &Value) -> String {
    let mut text = String::new();
    for step in run["steps"].as_array().unwrap() {
        let n = step["n"].as_u64().unwrap();
        text.push_str(&format!(
            "\nThought {n}: {}\nAction {n}: {}\nObservation {n}: {}",
            step["thought"].as_str().unwrap(),
            step["action"].as_str().unwrap(),
            step["observation"].as_str().unwrap_or("Answer is INCORRECT")
        ));
    }
    text
}

fn run_of<'a>(lines: &'a [Value], question: &str, trial: u64) -> &'a Value {
    lines
        .iter()
        .find(|run| run["question"] == question && run["trial"] == trial)
        .unwrap()
}

/// The prompts of the first step of `question`'s trials, in order.
fn first_step_prompts(prompts: &[String], question: &str) -> Vec<String> {
    prompts
        .iter()
        .filter(|prompt| prompt.ends_with(&format!("\nQuestion: {question}\nThought 1:")))
        .cloned()
        .collect()
}

#[tokio::test]
async fn each_trial_asks_only_what_is_not_yet_right_and_reflexion_prompts_are_byte_equal() {
    let (model, _dir, results, summary) = evaluated(
        ScriptedServer::default(),
        &["--trials", "3", "--reflect", "reflexion"],
    )
    .await;
    assert_eq!(
        summary["trials"],
        json!([
            {"trial": 1, "ran": 3, "right": 1, "right_so_far": 1},
            {"trial": 2, "ran": 2, "right": 1, "right_so_far": 2},
            {"trial": 3, "ran": 1, "right": 0, "right_so_far": 2},
        ]),
        "{summary}"
    );
    // The headline counts each question once, by its final state: 2 of 3 right.
    assert!(
        (summary["em"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9,
        "{summary}"
    );
    let expected: BTreeSet<(String, u64)> = [
        (MISSOURI, 1),
        (WALLACE, 1),
        (WOMANS_ERA, 1),
        (WALLACE, 2),
        (WOMANS_ERA, 2),
        (WOMANS_ERA, 3),
    ]
    .into_iter()
    .map(|(question, trial)| (question.to_owned(), trial))
    .collect();
    assert_eq!(attempts(&results), expected);

    let prompts = model.prompts();
    let lines = lines(&results);
    // One reflection before each trial after a failure: Wallace and Woman's Era before trial 2,
    // Woman's Era before trial 3.
    let reflection_prompts: Vec<&String> = prompts
        .iter()
        .filter(|prompt| prompt.ends_with("\n\nReflection:"))
        .collect();
    assert_eq!(reflection_prompts.len(), 3);
    // The reflection on Wallace's first trial, byte for byte Reflexion's.
    let failed = run_of(&lines, WALLACE, 1);
    let expected_reflection_prompt = reflexion_string("prompts.py", "REFLECT_INSTRUCTION")
        .replace("{examples}", &reflexion_string("fewshots.py", "REFLECTIONS"))
        .replace("{question}", WALLACE)
        .replace("{scratchpad}", &reflexion_scratchpad(failed));
    assert!(
        reflection_prompts
            .iter()
            .any(|prompt| **prompt == expected_reflection_prompt),
        "no reflection prompt equals Reflexion's:\n{expected_reflection_prompt}"
    );

    // Trial 1 is Reflexion's prompt with no reflection yet; trial 3 shows both reflections.
    let womans_era = first_step_prompts(&prompts, WOMANS_ERA);
    assert_eq!(womans_era.len(), 3);
    assert_eq!(womans_era[0], reflexion_trial_prompt("", WOMANS_ERA));
    let reflection = "I answered from the wrong page. Next time I will search the creator's other films.";
    let header = reflexion_string("prompts.py", "REFLECTION_HEADER");
    assert_eq!(
        womans_era[2],
        reflexion_trial_prompt(
            &format_reflections(&[reflection, reflection], &header),
            WOMANS_ERA
        )
    );
    // Each run records what its prompt showed and the reflection call's reply.
    let third = run_of(&lines, WOMANS_ERA, 3);
    assert_eq!(third["reflect"], "reflexion");
    assert_eq!(third["reflections"], json!([reflection, reflection]));
    assert_eq!(third["reflection"], REFLECTION_REPLY);
    assert_eq!(third["format"], "react-docstore.run.v2");
    assert!(run_of(&lines, MISSOURI, 1).get("reflections").is_none());
}

/// A reflection call that fails ends its trial in an error, and the trials after it keep the
/// reflections gathered before: Woman's Era's second reflection is refused, so its third trial is
/// an error and its fourth shows the first reflection still.
#[tokio::test]
async fn a_failed_reflection_call_keeps_the_reflections_gathered_before() {
    let model = ScriptedServer {
        refused_reflection: Some((WOMANS_ERA, 2)),
        ..ScriptedServer::default()
    };
    let server = model.start().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let (_, stderr, _) = eval(&server, &results, &["--trials", "4", "--reflect", "reflexion"]);
    let lines = lines(&results);
    let third = run_of(&lines, WOMANS_ERA, 3);
    assert_eq!(third["stopped"], "error", "{stderr}");
    let reflection = "I answered from the wrong page. Next time I will search the creator's other films.";
    assert_eq!(third["reflections"], json!([reflection]));
    let fourth = run_of(&lines, WOMANS_ERA, 4);
    assert_eq!(fourth["reflections"], json!([reflection]), "{stderr}");
    let header = reflexion_string("prompts.py", "REFLECTION_HEADER");
    let womans_era = first_step_prompts(&model.prompts(), WOMANS_ERA);
    assert_eq!(
        womans_era.last().unwrap(),
        &reflexion_trial_prompt(&format_reflections(&[reflection], &header), WOMANS_ERA)
    );

    // Asked again (`--retry-errors`, the server answering now): the third trial runs with both
    // reflections, and the fourth, made after the error, goes with it and runs again after it.
    let answering = ScriptedServer::default();
    let server = answering.start().await;
    let (_, stderr, code) = eval(
        &server,
        &results,
        &["--trials", "4", "--reflect", "reflexion", "--retry-errors"],
    );
    assert_eq!(code, 0, "{stderr}");
    let lines = self::lines(&results);
    let trials: Vec<u64> = lines
        .iter()
        .filter(|run| run["question"] == WOMANS_ERA)
        .map(|run| run["trial"].as_u64().unwrap())
        .collect();
    assert_eq!(trials, [1, 2, 3, 4], "one line a trial");
    assert_eq!(
        run_of(&lines, WOMANS_ERA, 3)["reflections"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        run_of(&lines, WOMANS_ERA, 4)["reflections"]
            .as_array()
            .unwrap()
            .len(),
        3,
        "the fourth trial follows the third that now precedes it"
    );
}

#[tokio::test]
async fn the_paper_profile_reads_a_reflection_as_reflexions_format_step() {
    let (_model, _dir, results, _) = evaluated(
        ScriptedServer::default(),
        &["--trials", "2", "--reflect", "reflexion", "--profile", "paper"],
    )
    .await;
    let lines = lines(&results);
    // `format_step`: the ends trimmed, the line break removed (two sentences run together).
    assert_eq!(
        run_of(&lines, WOMANS_ERA, 2)["reflections"],
        json!(["I answered from the wrong page.Next time I will search the creator's other films."])
    );
}

#[tokio::test]
async fn last_trial_strategies_show_the_failed_trial() {
    for strategy in ["last-trial", "last-trial-and-reflexion"] {
        let (model, _dir, results, summary) = evaluated(
            ScriptedServer::default(),
            &["--trials", "2", "--reflect", strategy],
        )
        .await;
        assert_eq!(summary["trials"][1]["right_so_far"], 2, "{strategy}: {summary}");
        let lines = lines(&results);
        let failed = run_of(&lines, WALLACE, 1);
        let last_trial = format!(
            "{}Question: {WALLACE}\n{}\n(END PREVIOUS TRIAL)\n",
            reflexion_string("prompts.py", "LAST_TRIAL_HEADER"),
            reflexion_scratchpad(failed).trim()
        );
        let prompts = model.prompts();
        let reflections = prompts
            .iter()
            .filter(|prompt| prompt.ends_with("\n\nReflection:"))
            .count();
        let block = if strategy == "last-trial" {
            assert_eq!(reflections, 0, "{strategy} asks for no reflection");
            last_trial
        } else {
            assert_eq!(reflections, 2, "{strategy}");
            let header = reflexion_string("prompts.py", "REFLECTION_AFTER_LAST_TRIAL_HEADER");
            let reflection =
                "I answered from the wrong page. Next time I will search the creator's other films.";
            format!("{last_trial}{}", format_reflections(&[reflection], &header))
        };
        assert_eq!(
            first_step_prompts(&prompts, WALLACE)[1],
            reflexion_trial_prompt(&block, WALLACE),
            "{strategy}"
        );
    }
}

#[tokio::test]
async fn a_killed_evaluation_resumes_in_its_trial_and_asks_nothing_twice() {
    let model = ScriptedServer::default();
    let server = model.start().await;
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.jsonl");
    let (_, stderr, code) = eval(&server, &whole, &["--trials", "3", "--reflect", "reflexion"]);
    assert_eq!(code, 0, "{stderr}");
    // Killed during trial 2: trial 1, one question of trial 2, and half a line.
    let text = std::fs::read_to_string(&whole).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| {
            let run: Value = serde_json::from_str(line).unwrap();
            run["trial"] == 1 || (run["trial"] == 2 && run["question"] == WALLACE)
        })
        .collect();
    assert_eq!(kept.len(), 4);
    let killed = dir.path().join("killed.jsonl");
    let torn = &text
        .lines()
        .find(|line| line.contains("\"trial\":2") && line.contains("Woman"))
        .unwrap()[..40];
    std::fs::write(&killed, format!("{}\n{torn}", kept.join("\n"))).unwrap();

    let model = ScriptedServer::default();
    let server = model.start().await;
    let (summary, stderr, code) = eval(&server, &killed, &["--trials", "3", "--reflect", "reflexion"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("dropped a torn last line"), "{stderr}");
    assert_eq!(attempts(&killed), attempts(&whole));
    assert_eq!(
        summary["trials"][2],
        json!({"trial": 3, "ran": 1, "right": 0, "right_so_far": 2})
    );
    // Only Woman's Era was asked: its trials 2 and 3 and the two reflections before them.
    let prompts = model.prompts();
    assert!(
        prompts.iter().all(|prompt| prompt.contains(WOMANS_ERA)),
        "a finished attempt was asked again"
    );
    assert_eq!(prompts.len(), 2 + 2 + 2);
}

#[tokio::test]
async fn epochs_reduce_to_mean_majority_and_pass_at_k_as_computed_by_hand() {
    let model = ScriptedServer {
        epochs: Arc::new(BTreeMap::from([
            (
                "Where was the first governor",
                vec!["Bath, Maine", "Bath, Maine", "Boston"],
            ),
            ("The creator of", vec!["Wallace", "Creature Comforts", "Wallace"]),
            ("Woman's Era", vec!["weekly", "monthly", "daily"]),
        ])),
        ..ScriptedServer::default()
    };
    let server = model.start().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("epochs.jsonl");
    let (summary, stderr, code) = eval(&server, &results, &["--epochs", "3"]);
    assert_eq!(code, 0, "{stderr}");
    let close = |field: &Value, expected: f64| {
        assert!(
            (field.as_f64().unwrap() - expected).abs() < 1e-9,
            "{field} != {expected}: {summary}"
        );
    };
    // Question means 2/3, 1/3, 0.
    close(&summary["mean_em"], 1.0 / 3.0);
    close(&summary["em"], 1.0 / 3.0);
    // Sample sd 1/3, over √3.
    close(&summary["mean_em_stderr"], 1.0 / 3.0 / 3f64.sqrt());
    // Majorities: Bath, Maine (right); Wallace (wrong); none of three different answers.
    close(&summary["majority_em"], 1.0 / 3.0);
    close(&summary["pass_at"]["1"], 1.0 / 3.0);
    // 1 - C(3-c, 2)/C(3, 2): 1, 2/3, 0.
    close(&summary["pass_at"]["2"], (1.0 + 2.0 / 3.0) / 3.0);
    close(&summary["pass_at"]["3"], 2.0 / 3.0);
    assert_eq!(lines(&results).len(), 9);
    assert!(lines(&results).iter().all(|run| run["epoch"].is_u64()));

    // `score` reduces the same file alike.
    let output = crate::binary()
        .args(["score"])
        .arg(&results)
        .arg(QUESTIONS)
        .arg("--json")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let scored: Value = serde_json::from_slice(&output.stdout).unwrap();
    for field in ["mean_em", "majority_em", "pass_at", "em"] {
        assert_eq!(scored[field], summary[field], "{field}: {scored}");
    }
}

#[tokio::test]
async fn attempts_are_refused_where_they_cannot_work() {
    let model = ScriptedServer::default();
    let server = model.start().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    let cases: [(&[&str], &str); 4] = [
        (&["--trials", "2", "--epochs", "2"], "cannot be used with"),
        (&["--reflect", "reflexion"], "--trials"),
        (
            &["--trials", "2", "--reflect", "reflexion", "--method", "cot-sc"],
            "`--reflect reflexion` needs `--method react` or `cot`",
        ),
        (
            &["--trials", "2", "--reflect", "reflexion", "--tools", "calculate"],
            "drop `--tools`",
        ),
    ];
    for (args, message) in cases {
        let (_, stderr, code) = eval(&server, &results, args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    assert!(model.prompts().is_empty());
    // A results file of single runs is not resumed as trials.
    let (_, stderr, code) = eval(&server, &results, &[]);
    assert_eq!(code, 0, "{stderr}");
    let (_, stderr, code) = eval(&server, &results, &["--trials", "2"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("not one evaluation: they differ in attempts — ")
            && stderr
                .contains("line 1 has one attempt a question, this command has 2 trials, `--reflect none`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_trials_file_replays_with_no_model() {
    let (_model, _dir, results, _) = evaluated(
        ScriptedServer::default(),
        &["--trials", "3", "--reflect", "reflexion"],
    )
    .await;
    let replay = |json: &[&str]| {
        crate::binary()
            .arg("replay")
            .args(json)
            .arg(&results)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    let output = replay(&["--json"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let replayed: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let summary = &replayed.last().unwrap()["summary"];
    assert_eq!(
        (summary["runs"].as_u64(), summary["changed"].as_u64()),
        (Some(6), Some(0)),
        "{stdout}"
    );
    // EM is the evaluation's headline: each question counts once, right when any trial was.
    let recorded = lines(&results);
    let mut final_state: BTreeMap<String, bool> = BTreeMap::new();
    for run in &recorded {
        let right = final_state
            .entry(run["id"].as_str().unwrap().to_owned())
            .or_default();
        *right |= run["em"] == 1;
    }
    let n_right = final_state.values().filter(|right| **right).count();
    let per_run = recorded.iter().filter(|run| run["em"] == 1).count() as f64 / recorded.len() as f64;
    let headline = n_right as f64 / final_state.len() as f64;
    assert_ne!(per_run, headline, "the fixture cannot tell the two apart");
    assert_eq!(
        (summary["n"].as_u64(), summary["em"].as_f64()),
        (Some(final_state.len() as u64), Some(headline)),
        "{stdout}"
    );
    // Each replayed run keeps its trial and what its prompt showed.
    for (run, recorded) in replayed.iter().zip(&recorded) {
        for field in ["trial", "reflect", "reflections", "reflection", "answer", "em"] {
            assert_eq!(run[field], recorded[field], "{field}: {run}");
        }
    }
    // The trace shows a trial's reflections before its steps.
    let output = replay(&[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Reflection: I answered from the wrong page. Next time"),
        "{stderr}"
    );
}

/// `fixtures/runs/trials/{reflexion,none}.results.jsonl` (the README's, the docs' and the report
/// tests' trials files) are what `eval --trials 3 --reflect reflexion|none` writes against the
/// scripted server; `REACT_WRITE_FIXTURES=1` writes them again.
#[tokio::test]
async fn the_recorded_trials_files_are_what_eval_writes() {
    for strategy in ["reflexion", "none"] {
        let (_model, _dir, results, _) = evaluated(
            ScriptedServer::default(),
            &["--trials", "3", "--reflect", strategy],
        )
        .await;
        let written = std::fs::read_to_string(&results).unwrap();
        let fixture = crate::fixture(&format!("runs/trials/{strategy}.results.jsonl"));
        if std::env::var_os("REACT_WRITE_FIXTURES").is_some() {
            std::fs::write(&fixture, &written).unwrap();
        }
        assert_eq!(std::fs::read_to_string(&fixture).unwrap(), written, "{strategy}");
    }
}

#[test]
fn compare_reduces_a_trials_file_to_its_final_state_or_a_trial() {
    let trials = crate::fixture("runs/trials/reflexion.results.jsonl");
    let dir = tempfile::tempdir().unwrap();
    // The first trial alone, as a file of single runs.
    let first = dir.path().join("first.jsonl");
    let text = std::fs::read_to_string(&trials).unwrap();
    let singles: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let mut run: Value = serde_json::from_str(line).unwrap();
            (run["trial"] == 1).then(|| {
                for field in ["trial", "reflect", "reflections", "reflection"] {
                    run.as_object_mut().unwrap().remove(field);
                }
                // An evaluation of one attempt a question, as its lines now say.
                run["evaluation"]["attempts"] = json!({"kind": "once"});
                run.to_string()
            })
        })
        .collect();
    std::fs::write(&first, singles.join("\n") + "\n").unwrap();
    let compare = |extra: &[&str]| {
        let output = crate::binary()
            .arg("compare")
            .arg(&first)
            .arg(&trials)
            .args(extra)
            .output()
            .unwrap();
        crate::assert_exit_0(&output);
        String::from_utf8(output.stdout).unwrap()
    };
    let text = compare(&[]);
    assert!(
        text.contains("both right 1   only A 0   only B 1   neither 1"),
        "{text}"
    );
    assert!(
        text.contains("reduced        B: each question by the final state of its trials (right in any)"),
        "{text}"
    );
    let text = compare(&["--trial", "1"]);
    assert!(
        text.contains("both right 1   only A 0   only B 0   neither 2"),
        "{text}"
    );
    assert!(
        text.contains("B: each question by the state after trial 1"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&compare(&["--trial", "2", "--json"])).unwrap();
    assert_eq!(json["b_only"], 1);
    assert_eq!(json["b"]["reduced"], "state after trial 2");
    // pass@1 is the first attempt; the mean counts Wallace's 1 of 2 trials as EM 0.5, not right.
    let json: Value = serde_json::from_str(&compare(&["--reduce", "pass@1", "--json"])).unwrap();
    assert_eq!(
        (json["b_only"].as_u64(), json["both_wrong"].as_u64()),
        (Some(0), Some(2))
    );
    let json: Value = serde_json::from_str(&compare(&["--reduce", "mean", "--json"])).unwrap();
    assert_eq!(json["b_only"], 0);
    let mean_em = (1.0 + 0.5 + 0.0) / 3.0;
    assert!(
        (json["b"]["em"].as_f64().unwrap() - mean_em).abs() < 1e-9,
        "{json}"
    );
}

#[tokio::test]
async fn cot_trials_follow_reflexions_cot_agent_byte_for_byte() {
    let (model, _dir, results, summary) = evaluated(
        ScriptedServer::default(),
        &["--method", "cot", "--trials", "2", "--reflect", "reflexion"],
    )
    .await;
    assert_eq!(
        summary["trials"],
        json!([
            {"trial": 1, "ran": 3, "right": 1, "right_so_far": 1},
            {"trial": 2, "ran": 2, "right": 1, "right_so_far": 2},
        ]),
        "{summary}"
    );
    let prompts = model.prompts();
    let failed = "\nThought: Let's think step by step. So the answer is Wallace.\nAction: Finish[Wallace]\nObservation: Answer is INCORRECT";
    let reflection_prompt = reflexion_string("prompts.py", "COT_SIMPLE_REFLECT_INSTRUCTION")
        .replace(
            "{examples}",
            &reflexion_string("fewshots.py", "COT_SIMPLE_REFLECTION"),
        )
        .replace("{context}", "")
        .replace("{question}", WALLACE)
        .replace("{scratchpad}", failed);
    assert!(
        prompts.contains(&reflection_prompt),
        "no reflection prompt equals Reflexion's CoT one"
    );
    let reflection = "I answered from the wrong page. Next time I will search the creator's other films.";
    let header = reflexion_string("prompts.py", "REFLECTION_HEADER");
    let trial_prompt = reflexion_string("prompts.py", "COT_SIMPLE_AGENT_REFLECT_INSTRUCTION")
        .replace("{examples}", &reflexion_string("fewshots.py", "COTQA_SIMPLE6"))
        .replace("{context}", "")
        .replace("{reflections}", &format_reflections(&[reflection], &header))
        .replace("{question}", WALLACE)
        .replace("{scratchpad}", "\nThought:");
    assert!(
        prompts.contains(&trial_prompt),
        "no trial prompt equals Reflexion's CoT one"
    );
    let lines = lines(&results);
    let second = run_of(&lines, WALLACE, 2);
    assert_eq!(second["answer"], "Creature Comforts");
    assert_eq!(second["method"], "cot");
    assert_eq!(second["reflections"], json!([reflection]));
    // The CoT trials replay with no model, to the same answers.
    let output = crate::binary()
        .args(["replay", "--json"])
        .arg(&results)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (
            summary["summary"]["runs"].as_u64(),
            summary["summary"]["changed"].as_u64()
        ),
        (Some(5), Some(0))
    );
}

#[tokio::test]
async fn sharded_trials_score_as_the_unsharded_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let mut shards = Vec::new();
    for shard in ["0/2", "1/2"] {
        let model = ScriptedServer::default();
        let server = model.start().await;
        let results = dir.path().join(format!("shard-{}.jsonl", &shard[..1]));
        let (_, stderr, code) = eval(
            &server,
            &results,
            &["--trials", "3", "--reflect", "reflexion", "--shard", shard],
        );
        assert_eq!(code, 0, "{shard}: {stderr}");
        shards.push(results);
    }
    let score = |files: &[&Path]| {
        let output = crate::binary()
            .arg("score")
            .args(files)
            .arg(QUESTIONS)
            .arg("--json")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        crate::assert_exit_0(&output);
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let whole = crate::fixture("runs/trials/reflexion.results.jsonl");
    let sharded = score(&[&shards[0], &shards[1]]);
    let unsharded = score(&[&whole]);
    for field in ["trials", "em", "f1", "missing"] {
        assert_eq!(sharded[field], unsharded[field], "{field}: {sharded}");
    }
    // `export` reads the shards as one evaluation too: the same examples.
    let export = |files: &[&Path], name: &str| {
        let out = dir.path().join(name);
        let output = crate::binary()
            .arg("export")
            .args(files)
            .args(["--format", "sharegpt", "--all", "--every-attempt", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        crate::assert_exit_0(&output);
        std::fs::read_to_string(out).unwrap()
    };
    assert_eq!(
        export(&[&shards[0], &shards[1]], "sharded.jsonl"),
        export(&[&whole], "whole.jsonl")
    );
}

#[test]
fn a_trial_exports_with_what_its_prompt_showed_of_the_failed_trials() {
    let trials = crate::fixture("runs/trials/reflexion.results.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let export = |extra: &[&str]| {
        let out = dir.path().join("chat.jsonl");
        let output = crate::binary()
            .arg("export")
            .arg(&trials)
            .args(["--format", "openai-chat", "--all", "--every-attempt", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        crate::assert_exit_0(&output);
        let lines: Vec<Value> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        // Woman's Era's third trial: the last example.
        lines.last().unwrap()["messages"].clone()
    };
    let reflection = "I answered from the wrong page. Next time I will search the creator's other films.";
    let header = reflexion_string("prompts.py", "REFLECTION_HEADER");
    let block = format_reflections(&[reflection, reflection], &header);
    // With the examples: the system message is Reflexion's prompt up to the question, byte for byte.
    let messages = export(&["--with-examples"]);
    let prompt = reflexion_trial_prompt(&block, WOMANS_ERA);
    let up_to_question = prompt
        .strip_suffix(&format!("Question: {WOMANS_ERA}\nThought 1:"))
        .unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[0]["content"].as_str().unwrap().trim_end(),
        up_to_question.trim_end()
    );
    assert_eq!(messages[1]["content"], format!("Question: {WOMANS_ERA}"));
    // Without: the instruction and the reflections, not the examples.
    let messages = export(&[]);
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.starts_with("Solve a question answering task"), "{system}");
    assert!(system.ends_with(&block), "{system}");
    assert!(!system.contains("(END OF EXAMPLES)"), "{system}");
}

/// `replay` of a trials file recomputes what each trial's prompt showed (its reflections, the
/// last trial) from the trial before it and its recorded reflection reply: the recorded file
/// replays with no note, a copy whose memory was edited is named (file, line, question, trial)
/// and replayed with the memory its trials give.
#[test]
fn a_trial_whose_recorded_memory_was_edited_is_named_and_replayed_with_the_recomputed_one() {
    let fixture = crate::fixture("runs/trials/reflexion.results.jsonl");
    let replay = |path: &Path| {
        let output = crate::binary()
            .args(["replay", "--json"])
            .arg(path)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let runs: Vec<Value> = stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        (
            runs,
            String::from_utf8_lossy(&output.stderr).into_owned(),
            output.status.code(),
        )
    };
    let (recorded_replay, stderr, code) = replay(&fixture);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("recomputed"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let tampered = dir.path().join("tampered.results.jsonl");
    let mut runs = lines(&fixture);
    // Line 6: the third trial of the question never answered right, which shows two reflections.
    assert_eq!(runs[5]["trial"], 3);
    assert_eq!(runs[5]["reflections"].as_array().unwrap().len(), 2);
    runs[5]["reflections"][0] = json!("The answer was obviously 42.");
    let text: String = runs.iter().map(|run| format!("{run}\n")).collect();
    std::fs::write(&tampered, text).unwrap();
    let (tampered_replay, stderr, code) = replay(&tampered);
    assert_eq!(code, Some(0), "the replay goes on: {stderr}");
    let id = runs[5]["id"].as_str().unwrap();
    assert!(
        stderr.contains(&format!(
            "{}, line 6: question `{id}` trial 3: its reflections are not what its previous trial and its reflection reply give (recorded [\"The answer was obviously 42.\",",
            tampered.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("replayed with the recomputed memory").count(),
        1,
        "only line 6: {stderr}"
    );
    // Replayed with the memory its trials give: the recorded file's.
    assert_eq!(
        tampered_replay[5]["reflections"], recorded_replay[5]["reflections"],
        "{}",
        tampered_replay[5]
    );
}

/// A results line whose own fields disagree with its `evaluation` record (here its `profile`) is
/// refused when read, by `score` and by `eval`'s resume, naming the file, line, field and both
/// values; `eval` asks nothing and leaves the file as it was.
#[tokio::test]
async fn a_line_that_contradicts_its_evaluation_record_is_refused_when_read() {
    let model = ScriptedServer::default();
    let (model, _dir, results, _) = evaluated(model, &["--trials", "3", "--reflect", "reflexion"]).await;
    let mut runs = lines(&results);
    assert_eq!(runs[3]["profile"], "default");
    runs[3]["profile"] = json!("paper");
    let text: String = runs.iter().map(|run| format!("{run}\n")).collect();
    std::fs::write(&results, &text).unwrap();
    let expected = format!(
        "`{}` line 4 contradicts itself: its `profile` is `paper`, its `evaluation` record says `default`",
        results.display()
    );
    let score = crate::binary()
        .arg("score")
        .arg(&results)
        .arg(QUESTIONS)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&score.stderr);
    assert_eq!(score.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&expected), "{stderr}");

    let n_prompts = model.prompts().len();
    let server = model.start().await;
    let (_, stderr, code) = eval(&server, &results, &["--trials", "3", "--reflect", "reflexion"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains(&expected), "{stderr}");
    assert_eq!(model.prompts().len(), n_prompts, "nothing asked");
    assert_eq!(std::fs::read_to_string(&results).unwrap(), text);
}

/// A trial whose previous trial is missing from the file (here trial 2 of the question the fixture
/// asks three times) is replayed with its recorded memory and named, never recomputed from an
/// earlier trial that did not precede it.
#[test]
fn a_trial_without_its_previous_trial_is_replayed_unchecked_not_from_an_older_trial() {
    let fixture = crate::fixture("runs/trials/reflexion.results.jsonl");
    let runs = lines(&fixture);
    assert_eq!(runs[5]["trial"], 3);
    let id = runs[5]["id"].as_str().unwrap().to_owned();
    let kept: Vec<&Value> = runs
        .iter()
        .filter(|run| !(run["id"] == json!(id) && run["trial"] == json!(2)))
        .collect();
    assert_eq!(
        kept.len(),
        runs.len() - 1,
        "the fixture holds trial 2 of `{id}` once"
    );
    let dir = tempfile::tempdir().unwrap();
    let gapped = dir.path().join("gapped.results.jsonl");
    let text: String = kept.iter().map(|run| format!("{run}\n")).collect();
    std::fs::write(&gapped, text).unwrap();
    let output = crate::binary()
        .args(["replay", "--json"])
        .arg(&gapped)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "question `{id}` trial 3: its earlier trial is not in this file"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("recomputed"), "{stderr}");
}
