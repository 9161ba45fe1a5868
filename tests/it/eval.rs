//! `eval` and `score`: question files in every format, their errors, official-metric parity, and
//! whole evaluations with a scripted in-process model and a fake docstore — killed and resumed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use react_docstore::Profile;
use react_docstore::docstore::{ContextParagraph, Docstore, DocstoreError, DocstoreSource};
use react_docstore::eval::score::score;
use react_docstore::eval::{
    self, EvalConfig, EvalServices, Progress, QuestionFile, Resume, Selection, Subset, Summary,
};
use react_docstore::llm::{Completion, Llm, LlmError, LlmRequest};
use react_docstore::run::Run;
use react_docstore::tool::Toolbox;

use crate::fixture;

// ---------------------------------------------------------------- question files

fn render_questions(file: &QuestionFile) -> String {
    let mut out = format!("task: {}\n", file.task.as_str());
    for question in &file.questions {
        let first_context = question
            .context
            .first()
            .map(|paragraph| format!("{:?} ({} sentences)", paragraph.title, paragraph.sentences.len()))
            .unwrap_or_else(|| "-".to_owned());
        out.push_str(&format!(
            "- id {} | position {} | {} | {} | gold {:?} | {} paragraphs, first {first_context}\n  {:?}\n",
            question.id,
            question.position,
            question.kind.as_deref().unwrap_or("-"),
            question.level.as_deref().unwrap_or("-"),
            question.gold().unwrap_or("-"),
            question.context.len(),
            question.question,
        ));
    }
    out
}

#[test]
fn question_files_in_every_format() {
    let mut rendered = String::new();
    for name in [
        "hotpotqa/simplified.json",
        "hotpotqa/hf.json",
        "hotpotqa/hf-with-ids.json",
        "hotpotqa/official.json",
        "hotpotqa/official.jsonl",
        "fever/paper_dev.jsonl",
    ] {
        let file = QuestionFile::read(&fixture(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        rendered.push_str(&format!("## {name}\n{}\n", render_questions(&file)));
    }
    crate::assert_snapshot!(rendered);

    let official = QuestionFile::read(&fixture("hotpotqa/official.json")).unwrap();
    let lines = QuestionFile::read(&fixture("hotpotqa/official.jsonl")).unwrap();
    assert_eq!(
        official.questions, lines.questions,
        "JSON and JSON Lines read alike"
    );
    // The official layout and the Hugging Face one carry the same paragraphs.
    let hf = QuestionFile::read(&fixture("hotpotqa/hf.json")).unwrap();
    assert_eq!(hf.questions[0].context[1].title, "Scott Derrickson");
    assert_eq!(
        hf.questions[0].context[1].sentences[1],
        " He lives in Los Angeles, California."
    );
}

#[track_caller]
fn check_malformed(text: &str, expected: &str) {
    let path = Path::new("questions.json");
    let error = QuestionFile::parse(text, path).expect_err("the file is malformed");
    let message = format!("{:#}", anyhow::Error::from(error));
    assert_eq!(message, expected, "for {text:?}");
}

#[test]
fn malformed_question_files_name_file_record_and_field() {
    check_malformed(
        r#"[{"question": "a"}, {"question": 3}]"#,
        "question file `questions.json`, record 1: field `question` is a number, expected a string",
    );
    check_malformed(
        "{\"question\": \"a\"}\n\n{\"answer\": \"b\"}\n",
        "question file `questions.json`, record 1 (line 3): field `question` is missing",
    );
    check_malformed(
        r#"[{"question": "q", "context": [["Title", "not a list"]]}]"#,
        "question file `questions.json`, record 0: field `context[0][1]` is a string, expected an array of strings",
    );
    check_malformed(
        r#"[{"question": "q", "context": [["Title"]]}]"#,
        "question file `questions.json`, record 0: field `context[0]` is an array, expected a `[title, [sentences]]` pair",
    );
    check_malformed(
        r#"[{"question": "q", "context": {"title": ["A", "B"], "sentences": [["a."]]}}]"#,
        "question file `questions.json`, record 0: field `context` has 2 titles but 1 sentence lists",
    );
    check_malformed(
        r#"[{"question": "q", "context": {"title": ["A"]}}]"#,
        "question file `questions.json`, record 0: field `context.sentences` is missing",
    );
    check_malformed(
        r#"[{"question": "q", "context": {"title": ["A"], "sentences": [["a.", 7]]}}]"#,
        "question file `questions.json`, record 0: field `context.sentences[0][1]` is a number, expected a string",
    );
    check_malformed(
        "[1]",
        "question file `questions.json`, record 0: expected an object, found a number",
    );
    check_malformed(
        r#"[{"_id": "x", "question": "a"}, {"_id": "x", "question": "b"}]"#,
        "question file `questions.json`, record 1: id `x` was already used by record 0",
    );
    check_malformed(
        r#"[{"question": "a", "dev_index": -1}]"#,
        "question file `questions.json`, record 0: field `dev_index` is a number, expected a non-negative integer",
    );
    check_malformed(
        "{\"id\": 1, \"claim\": \"Sky is blue.\", \"label\": \"SUPPORTS\"}\n{\"id\": 2, \"claim\": 5}\n",
        "question file `questions.json`, record 1 (line 2): field `claim` is a number, expected a string",
    );
    check_malformed(
        "{\"question\": \"a\"}\n{\"question\": \"b\",\n",
        "question file `questions.json` is not valid JSON (line 3, column 0): EOF while parsing a value at line 3 column 0",
    );
    check_malformed(
        r#"[{"question": "a"},]"#,
        "question file `questions.json` is not valid JSON (line 1, column 20): trailing comma at line 1 column 20",
    );
    check_malformed("[]", "question file `questions.json` holds no question");
    check_malformed("\n", "question file `questions.json` holds no question");
}

#[test]
fn selection_by_subset_ids_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    // A stand-in for the 7,405-question dev file: question `q{i}` at position i.
    let dev: Vec<serde_json::Value> = (0..7405)
        .map(|idx| serde_json::json!({"question": format!("q{idx}"), "answer": "a", "type": "bridge"}))
        .collect();
    let dev_path = dir.path().join("dev.json");
    std::fs::write(&dev_path, serde_json::to_string(&dev).unwrap()).unwrap();
    let ids_path = dir.path().join("ids.txt");
    std::fs::write(&ids_path, "# two of the subset\n5388\n\n3687\n").unwrap();

    let select = |selection: Selection, path: &Path| -> Result<Vec<String>, String> {
        let file = QuestionFile::read(path).map_err(|error| error.to_string())?;
        selection
            .apply(file)
            .map(|questions| questions.into_iter().map(|question| question.id).collect())
            .map_err(|error| {
                error
                    .to_string()
                    .replace(&dir.path().display().to_string(), "[DIR]")
            })
    };
    let paper500 = select(
        Selection {
            subset: Some(Subset::Paper500),
            ..Selection::default()
        },
        &dev_path,
    )
    .unwrap();
    assert_eq!(paper500.len(), 500);
    assert_eq!(paper500[..3], ["3687", "6238", "5388"], "the notebook's order");
    let narrowed = select(
        Selection {
            subset: Some(Subset::Paper500),
            ids: Some(ids_path.clone()),
            limit: Some(1),
        },
        &dev_path,
    );
    assert_eq!(
        narrowed,
        Ok(vec!["3687".to_owned()]),
        "ids keep the subset's order"
    );
    let limited = select(
        Selection {
            limit: Some(2),
            ..Selection::default()
        },
        &fixture("hotpotqa/simplified.json"),
    );
    assert_eq!(limited, Ok(vec!["0".to_owned(), "1".to_owned()]));

    let small = fixture("hotpotqa/simplified.json");
    let incomplete = select(
        Selection {
            subset: Some(Subset::Paper500),
            ..Selection::default()
        },
        &small,
    )
    .unwrap_err();
    assert!(
        incomplete.starts_with("subset `paper500` needs the HotpotQA dev set in official order, but `")
            && incomplete.contains("lacks 499 of its questions (e.g. position 3687)"),
        "{incomplete}"
    );
    let unknown = select(
        Selection {
            ids: Some(ids_path),
            ..Selection::default()
        },
        &small,
    )
    .unwrap_err();
    assert!(
        unknown.starts_with("ids file `[DIR]/ids.txt` names 2 ids that are not in `")
            && unknown.ends_with("e.g. `5388`, `3687`"),
        "{unknown}"
    );
}

// ---------------------------------------------------------------- score

/// `hotpot_evaluate_v1.py` on hard cases: the expected figures were computed with the official
/// script's `normalize_answer`, `f1_score` and `exact_match_score`, run by CPython.
#[test]
fn score_matches_the_official_script() {
    let cases: [(&str, &str); 12] = [
        ("Arthur's Magazine", "Arthur's Magazine"),
        ("The Beatles", "Beatles"),
        ("yes", "no"),
        ("yes it is", "yes"),
        ("no answer", "noanswer"),
        ("President Richard Nixon", "Richard Nixon"),
        ("1,000", "1000"),
        ("Beyoncé", "beyonce"),
        ("“Creed”", "Creed"),
        ("the cat sat", "cat sat the mat"),
        ("", "Paris"),
        ("Jonny Craig", "Jonny\" Craig"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let gold: Vec<serde_json::Value> = cases
        .iter()
        .enumerate()
        .map(
            |(idx, (_, gold))| serde_json::json!({"_id": format!("q{idx}"), "question": "?", "answer": gold}),
        )
        .chain([serde_json::json!({"_id": "unanswered", "question": "?", "answer": "Paris"})])
        .collect();
    let answers: serde_json::Map<String, serde_json::Value> = cases
        .iter()
        .enumerate()
        .map(|(idx, (prediction, _))| (format!("q{idx}"), serde_json::json!(prediction)))
        .chain([("not-in-gold".to_owned(), serde_json::json!("x"))])
        .collect();
    let gold_path = dir.path().join("gold.json");
    let predictions_path = dir.path().join("pred.json");
    std::fs::write(&gold_path, serde_json::to_string(&gold).unwrap()).unwrap();
    let predictions = serde_json::json!({"answer": answers, "sp": {}});
    std::fs::write(&predictions_path, predictions.to_string()).unwrap();

    let report = score(&predictions_path, &gold_path).unwrap();
    // Printed by the official functions over the same cases (a missing prediction counts zero).
    assert_eq!((report.n, report.missing), (13, 1));
    assert_eq!(
        (report.em, report.f1, report.prec, report.recall),
        (
            0.3076923076923077,
            0.43076923076923074,
            0.43589743589743585,
            0.4358974358974359
        )
    );
}

#[track_caller]
fn check_score(predictions: &str, gold: &Path, expected: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("predictions");
    std::fs::write(&path, predictions).unwrap();
    let report = score(&path, gold).unwrap();
    let mut text = Vec::new();
    report.write_text(&mut text).unwrap();
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(format!("{json}\n{}", String::from_utf8(text).unwrap()), expected);
}

#[test]
fn score_counts_missing_predictions_as_zero() {
    let simplified = fixture("hotpotqa/simplified.json");
    check_score(
        r#"{"answer": {"0": "yes", "1": "Chief of Protocol", "3": "yes"}}"#,
        &simplified,
        "{\"n\":6,\"em\":0.3333333333333333,\"f1\":0.3333333333333333,\"prec\":0.3333333333333333,\"recall\":0.3333333333333333,\"missing\":3}\n\
         EM 0.3333  F1 0.3333  precision 0.3333  recall 0.3333  (n = 6)\n\
         missing        3 predictions, scored zero (e.g. `2`, `4`, `5`)\n",
    );
    // A results file: runs by id; a torn last line is ignored, an errored run answers nothing.
    check_score(
        "{\"id\": \"2\", \"question\": \"?\", \"steps\": [], \"answer\": \"Animorphs\"}\n\
         {\"id\": \"0\", \"question\": \"?\", \"steps\": [], \"answer\": null, \"stopped\": \"error\"}\n\
         {\"id\": \"1\", \"question\": \"?\", \"st",
        &simplified,
        "{\"n\":6,\"em\":0.16666666666666666,\"f1\":0.16666666666666666,\"prec\":0.16666666666666666,\"recall\":0.16666666666666666,\"missing\":4}\n\
         EM 0.1667  F1 0.1667  precision 0.1667  recall 0.1667  (n = 6)\n\
         missing        4 predictions, scored zero (e.g. `1`, `3`, `4`, `5`)\n",
    );
}

// ---------------------------------------------------------------- evaluate

/// A model that answers each question with its script, call by call, after `delay`.
struct ScriptedLlm {
    scripts: HashMap<String, Vec<String>>,
    calls_by_question: Mutex<HashMap<String, usize>>,
    n_calls: AtomicUsize,
    delay: Duration,
}

impl ScriptedLlm {
    fn new(scripts: &[(&str, &[&str])], delay: Duration) -> ScriptedLlm {
        ScriptedLlm {
            scripts: scripts
                .iter()
                .map(|(question, calls)| {
                    let calls = calls.iter().map(|call| (*call).to_owned()).collect();
                    ((*question).to_owned(), calls)
                })
                .collect(),
            calls_by_question: Mutex::new(HashMap::new()),
            n_calls: AtomicUsize::new(0),
            delay,
        }
    }
}

/// The input line of the question being asked: the last `Question: ` or `Claim: ` line of the prompt.
fn asked(prompt: &str) -> String {
    prompt
        .lines()
        .rev()
        .find_map(|line| {
            line.strip_prefix("Question: ")
                .or_else(|| line.strip_prefix("Claim: "))
        })
        .unwrap_or_default()
        .to_owned()
}

impl Llm for ScriptedLlm {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.n_calls.fetch_add(1, Ordering::SeqCst);
            let question = asked(request.prompt);
            let call = {
                let mut calls = self.calls_by_question.lock().unwrap();
                let count = calls.entry(question.clone()).or_default();
                *count += 1;
                *count - 1
            };
            let text = self
                .scripts
                .get(&question)
                .and_then(|calls| calls.get(call))
                .ok_or(LlmError::ReplayExhausted {
                    step: request.step,
                    call: call + 1,
                })?;
            Ok(Completion {
                text: text.clone(),
                usage: Some(react_docstore::llm::TokenUsage {
                    prompt_tokens: request.prompt.len() as u64 / 4,
                    completion_tokens: text.len() as u64 / 4,
                }),
            })
        })
    }

    fn model(&self) -> &str {
        "scripted"
    }
}

/// Opens explorers that say which question's paragraphs they were given.
struct ContextDocstoreSource;

struct ContextDocstore {
    titles: Vec<String>,
}

impl DocstoreSource for ContextDocstoreSource {
    fn open(&self, context: &[ContextParagraph]) -> Box<dyn Docstore> {
        let titles = context.iter().map(|paragraph| paragraph.title.clone()).collect();
        Box::new(ContextDocstore { titles })
    }
}

impl Docstore for ContextDocstore {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(async move {
            Ok(match self.titles.iter().find(|title| title.as_str() == entity) {
                Some(title) => format!("{title} is one of {} paragraphs.", self.titles.len()),
                None => format!("Could not find {entity}. Similar: {:?}.", self.titles.first()),
            })
        })
    }

    fn lookup(&mut self, keyword: &str) -> String {
        format!("No results for {keyword}.")
    }
}

/// Scripts for `fixtures/hotpotqa/simplified.json`: one of each way a run can end. The sixth
/// question has no script: the model fails on it, and the evaluation carries on.
const SIMPLIFIED_SCRIPTS: [(&str, &[&str]); 5] = [
    (
        "Were Scott Derrickson and Ed Wood of the same nationality?",
        &[
            " I need to search Scott Derrickson.\nAction 1: Search[Scott Derrickson]",
            " Both are American.\nAction 2: Finish[yes]",
        ],
    ),
    (
        "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?",
        // No action in the first completion: the fallback call supplies it.
        &[
            " Shirley Temple was Chief of Protocol.",
            " Finish[Chief of Protocol]",
        ],
    ),
    (
        "What science fantasy young adult series, told in first person, has a set of companion books narrating the stories of enslaved worlds and alien species?",
        &[
            " Let me google it.\nAction 1: Google[Animorphs]",
            " Then I answer.\nAction 2: Finish[The Animorphs series]",
        ],
    ),
    (
        "Are the Laleli Mosque and Esma Sultan Mansion located in the same neighborhood?",
        &[
            " Search.\nAction 1: Search[Laleli Mosque]",
            " Search again.\nAction 2: Search[Laleli Mosque]",
            " And again.\nAction 3: Search[Laleli Mosque]",
            " Once more.\nAction 4: Search[Laleli Mosque]",
        ],
    ),
    (
        "The director of the romantic comedy \"Big Stone Gap\" is based in what New York city?",
        &[
            " Search.\nAction 1: Search[Big Stone Gap]",
            " Look.\nAction 2: Lookup[director]",
            " Search more.\nAction 3: Search[Adriana Trigiani]",
            " Search again.\nAction 4: Search[Greenwich Village]",
        ],
    ),
];

fn config(questions: PathBuf, results: PathBuf, concurrency: usize) -> EvalConfig {
    EvalConfig {
        questions,
        selection: Selection::default(),
        profile: Profile::Default,
        max_steps: 4,
        fewshot: None,
        concurrency,
        results,
        resume: Resume::SkipDone,
        progress: Progress::Hidden,
    }
}

fn services(llm: Arc<ScriptedLlm>) -> EvalServices {
    EvalServices {
        llm,
        docstore: Arc::new(ContextDocstoreSource),
        toolbox: Toolbox::default(),
    }
}

/// The summary with what varies from run to run (timings, temp paths) filtered out.
fn render_summary(summary: &Summary) -> String {
    let mut text = Vec::new();
    summary.write_text(&mut text).unwrap();
    let mut json = serde_json::to_value(summary).unwrap();
    json["wall_seconds"] = "[seconds]".into();
    json["questions_per_minute"] = "[rate]".into();
    json["results"] = "[results]".into();
    let text = String::from_utf8(text).unwrap();
    let text: Vec<String> = text
        .lines()
        .map(|line| {
            if line.starts_with("wall time") {
                "wall time      [filtered]".to_owned()
            } else if line.starts_with("results") {
                "results        [results]".to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect();
    format!(
        "{}\n{}\n",
        text.join("\n"),
        serde_json::to_string_pretty(&json).unwrap()
    )
}

fn read_results(path: &Path) -> Vec<Run> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

#[track_caller]
fn assert_each_once(runs: &[Run], n_questions: usize) {
    let ids: Vec<&str> = runs.iter().map(|run| run.id.as_deref().unwrap()).collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(
        (ids.len(), unique.len()),
        (n_questions, n_questions),
        "ids {ids:?}"
    );
}

#[tokio::test]
async fn eval_scores_every_way_a_run_ends_and_resumes_without_calls() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let config = config(fixture("hotpotqa/simplified.json"), results.clone(), 3);
    let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::ZERO));
    let summary = eval::evaluate(&config, &services(llm.clone()), std::future::pending())
        .await
        .unwrap();
    crate::assert_snapshot!(render_summary(&summary));

    let runs = read_results(&results);
    assert_each_once(&runs, 6);
    let failed = runs.iter().find(|run| run.id.as_deref() == Some("5")).unwrap();
    assert_eq!(
        failed.error.as_deref(),
        Some("the recording has no completion for step 1 (call 1 of that step)")
    );
    // `score` on the results file agrees with the summary.
    let report = score(&results, &config.questions).unwrap();
    assert_eq!(
        (report.n, report.em, report.f1),
        (summary.n, summary.em, summary.f1)
    );

    // Run again: everything is resumed, the model is not called.
    let n_calls = llm.n_calls.load(Ordering::SeqCst);
    let again = eval::evaluate(&config, &services(llm.clone()), std::future::pending())
        .await
        .unwrap();
    assert_eq!(llm.n_calls.load(Ordering::SeqCst), n_calls);
    assert_eq!(
        (again.done, again.resumed, again.em, again.f1),
        (6, 6, summary.em, summary.f1)
    );
    assert_eq!(read_results(&results).len(), 6);

    // `--retry-errors`: the errored question runs again (and fails again: its script is empty),
    // nothing else does, and the file still holds each question once.
    let retry = EvalConfig {
        resume: Resume::RetryErrors,
        ..config.clone()
    };
    let retried = eval::evaluate(&retry, &services(llm.clone()), std::future::pending())
        .await
        .unwrap();
    assert_eq!((retried.resumed, retried.errors), (5, 1));

    // A budget of one step finishes no question: exit code 1, "ran but nothing answered".
    let one_step = EvalConfig {
        max_steps: 1,
        results: dir.path().join("one-step.jsonl"),
        ..config.clone()
    };
    const SEARCH_ONLY: &[&str] = &[" Let me look.\nAction 1: Search[Something]"];
    let searching: Vec<(&str, &[&str])> = SIMPLIFIED_SCRIPTS
        .iter()
        .map(|(question, _)| (*question, SEARCH_ONLY))
        .collect();
    let llm_one = Arc::new(ScriptedLlm::new(&searching, Duration::ZERO));
    let unanswered = eval::evaluate(&one_step, &services(llm_one), std::future::pending())
        .await
        .unwrap();
    assert_eq!(unanswered.n_finished(), 0);
    assert_eq!(unanswered.exit_code(), 1);
    assert_eq!(llm.n_calls.load(Ordering::SeqCst), n_calls + 1);
    assert_each_once(&read_results(&results), 6);
}

#[tokio::test]
async fn eval_hands_each_question_its_own_context() {
    let dir = tempfile::tempdir().unwrap();
    let questions = fixture("hotpotqa/official.json");
    let file = QuestionFile::read(&questions).unwrap();
    let scripts: Vec<(String, Vec<String>)> = file
        .questions
        .iter()
        .map(|question| {
            let title = &question.context[3].title;
            let answer = question.answer.clone().unwrap();
            let calls = vec![
                format!(" Search.\nAction 1: Search[{title}]"),
                format!(" Done.\nAction 2: Finish[{answer}]"),
            ];
            (question.question.clone(), calls)
        })
        .collect();
    let borrowed: Vec<Vec<&str>> = scripts
        .iter()
        .map(|(_, calls)| calls.iter().map(String::as_str).collect())
        .collect();
    let script_refs: Vec<(&str, &[&str])> = scripts
        .iter()
        .zip(&borrowed)
        .map(|((question, _), calls)| (question.as_str(), calls.as_slice()))
        .collect();
    let llm = Arc::new(ScriptedLlm::new(&script_refs, Duration::ZERO));
    let results = dir.path().join("results.jsonl");
    let summary = eval::evaluate(
        &config(questions, results.clone(), 2),
        &services(llm),
        std::future::pending(),
    )
    .await
    .unwrap();
    assert_eq!((summary.n, summary.em), (3, 1.0));
    for run in read_results(&results) {
        let question = file
            .questions
            .iter()
            .find(|question| Some(&question.id) == run.id.as_ref())
            .unwrap();
        let expected = format!("{} is one of 10 paragraphs.", question.context[3].title);
        assert_eq!(run.steps[0].observation.as_deref(), Some(expected.as_str()));
    }
}

#[tokio::test]
async fn eval_of_fever_claims_scores_label_accuracy() {
    let dir = tempfile::tempdir().unwrap();
    let scripts: [(&str, &[&str]); 3] = [
        (
            "Colin Kaepernick became a starting quarterback during the 49ers 63rd season in the National Football League.",
            &[" Unclear.\nAction 1: Finish[NOT ENOUGH INFO]"],
        ),
        ("Tilda Swinton is a vegan.", &[" No.\nAction 1: Finish[REFUTES]"]),
        (
            "Fox 2000 Pictures released the film Soul Food.",
            &[" Yes.\nAction 1: Finish[SUPPORTS]"],
        ),
    ];
    let llm = Arc::new(ScriptedLlm::new(&scripts, Duration::ZERO));
    let results = dir.path().join("results.jsonl");
    // The bar's code path runs too (indicatif draws nothing: stderr is not a terminal here).
    let config = EvalConfig {
        progress: Progress::Bar,
        ..config(fixture("fever/paper_dev.jsonl"), results, 1)
    };
    let summary = eval::evaluate(&config, &services(llm), std::future::pending())
        .await
        .unwrap();
    crate::assert_snapshot!(render_summary(&summary));
}

/// Polls until the results file has `n` lines.
async fn results_reach(path: &Path, n: usize) {
    loop {
        let lines = std::fs::read_to_string(path)
            .map(|text| text.lines().count())
            .unwrap_or(0);
        if lines >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[derive(Debug, Clone, Copy)]
enum Kill {
    /// The evaluation future is dropped, as when the process dies.
    DropFuture,
    /// The interrupt future resolves, as on Ctrl-C.
    Interrupt,
}

#[track_caller]
fn check_killed_and_resumed(kill: Kill) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results.jsonl");
        let config = config(fixture("hotpotqa/simplified.json"), results.clone(), 2);
        let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::from_millis(30)));
        match kill {
            Kill::DropFuture => {
                let services = services(llm);
                tokio::select! {
                    _ = eval::evaluate(&config, &services, std::future::pending()) => {
                        panic!("the evaluation finished before it was killed")
                    }
                    () = results_reach(&results, 2) => {}
                }
            }
            Kill::Interrupt => {
                let summary = eval::evaluate(&config, &services(llm), results_reach(&results, 2))
                    .await
                    .unwrap();
                assert!(summary.interrupted);
                assert_eq!(summary.exit_code(), 2, "interrupted");
                assert!((2..6).contains(&summary.done), "done {}", summary.done);
            }
        }
        let n_before = read_results(&results).len();
        assert!((2..6).contains(&n_before), "{n_before} lines when killed");
        // A crash in the middle of a write leaves a torn last line.
        let mut text = std::fs::read_to_string(&results).unwrap();
        text.push_str(r#"{"format":"react-docstore.run.v1","id":"4","quest"#);
        std::fs::write(&results, text).unwrap();

        let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::from_millis(1)));
        let summary = eval::evaluate(&config, &services(llm), std::future::pending())
            .await
            .unwrap();
        assert_eq!(
            (summary.done, summary.resumed, summary.interrupted),
            (6, n_before, false)
        );
        assert_each_once(&read_results(&results), 6);
        assert_eq!(summary.em, 2.0 / 6.0);
        assert_eq!(summary.exit_code(), 0, "some questions were answered");
    });
}

#[test]
fn eval_killed_half_way_resumes_with_each_question_once() {
    check_killed_and_resumed(Kill::DropFuture);
    check_killed_and_resumed(Kill::Interrupt);
}

#[test]
fn score_command_prints_the_json_object() {
    let dir = tempfile::tempdir().unwrap();
    let predictions = dir.path().join("pred.json");
    std::fs::write(&predictions, r#"{"answer": {"0": "Yes.", "2": "the Animorphs"}}"#).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .arg("score")
        .arg(&predictions)
        .arg(fixture("hotpotqa/simplified.json"))
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "{\"n\":6,\"em\":0.3333333333333333,\"f1\":0.3333333333333333,\"prec\":0.3333333333333333,\"recall\":0.3333333333333333,\"missing\":4}\n"
    );
}
