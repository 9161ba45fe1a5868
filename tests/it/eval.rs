//! `eval` and `score`: question files in every format, their errors, official-metric parity, and
//! whole evaluations with a scripted in-process model and a fake docstore — killed and resumed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use react_docstore::agent::trace::LogOutput;
use react_docstore::analysis::score::score;
use react_docstore::analysis::summary::Summary;
use react_docstore::base::profile::Profile;
use react_docstore::docstore::{ContextParagraph, Docstore, DocstoreError, DocstoreSource};
use react_docstore::eval::{self, EvalConfig, EvalError, EvalServices, Progress, Resume};
use react_docstore::llm::{Completion, Llm, LlmError, LlmRequest};
use react_docstore::record::questions::{Contexts, QuestionFile};
use react_docstore::record::results::{ResultsError, ResultsFile};
use react_docstore::record::run::Run;
use react_docstore::record::selection::{Selection, Subset};
use react_docstore::solver::setup::AgentSetup;
use react_docstore::tools::Toolbox;

use crate::{Captured, fixture};

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
    check_malformed(
        "id,question,answer\n0,Who?,Me\n",
        &format!(
            "question file `questions.json` is neither a JSON array nor JSON Lines of records (it starts with `id,question,answer`): {FORMATS}"
        ),
    );
    check_malformed(
        "\u{feff}  \"Who wrote it?\"\n",
        &format!(
            "question file `questions.json` is neither a JSON array nor JSON Lines of records (it starts with `\"Who wrote it?\"`): {FORMATS}"
        ),
    );
    check_malformed("[]", "question file `questions.json` holds no question");
    check_malformed("\n", "question file `questions.json` holds no question");
}

/// The formats a question file may have, as errors name them.
const FORMATS: &str = "question files are HotpotQA (the official JSON, the Hugging Face or the ReAct-simplified one, or JSON Lines of these) or FEVER (JSON Lines)";

/// `eval` with no model configured: a question file that is missing or of another format is named
/// first, before the model.
#[test]
fn the_question_file_is_checked_before_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("q.csv");
    std::fs::write(&csv, "id,question,answer\n0,Who?,Me\n").unwrap();
    let run = |file: &str| {
        let output = crate::binary()
            .current_dir(dir.path())
            .args(["eval", file])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        String::from_utf8(output.stderr).unwrap()
    };
    assert_eq!(
        run("dev.json"),
        "error: cannot read question file `dev.json`: No such file or directory (os error 2)\n"
    );
    assert_eq!(
        run("q.csv"),
        format!(
            "error: question file `q.csv` is neither a JSON array nor JSON Lines of records (it starts with `id,question,answer`): {FORMATS}\n"
        )
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no results file is written"
    );
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

    // Through `Selection::read`, as `eval` selects: filtering while the file is read.
    let select = |selection: Selection, path: &Path| -> Result<Vec<String>, String> {
        selection
            .read(path, Contexts::Unused)
            .map(|file| file.questions.into_iter().map(|question| question.id).collect())
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
    let reflexion100 = select(
        Selection {
            subset: Some(Subset::Reflexion100),
            ..Selection::default()
        },
        &dev_path,
    )
    .unwrap();
    assert_eq!(reflexion100.len(), 100);
    assert_eq!(reflexion100[..3], ["4367", "1867", "3504"], "the sample's order");
    let narrowed = select(
        Selection {
            subset: Some(Subset::Paper500),
            ids: Some(ids_path.clone()),
            limit: Some(1),
            shard: None,
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

#[test]
fn a_fever_file_short_of_a_subset_is_told_to_use_the_whole_fever_dev_file() {
    // The FEVER notebook shuffles the same 7,405 positions: a FEVER file is pointed at FEVER's
    // dev claims, not at HotpotQA's files.
    let small = fixture("fever/paper_dev.jsonl");
    let error = Selection {
        subset: Some(Subset::Paper500),
        ..Selection::default()
    }
    .read(&small, Contexts::Unused)
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        format!(
            "subset `paper500` needs FEVER's dev claims in their published order, but `{}` lacks 499 of its questions (e.g. position 3687); use the whole paper_dev.jsonl (9,999 claims)",
            small.display()
        )
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
    assert_eq!((report.scores.n, report.missing), (13, 1));
    assert_eq!(
        (
            report.scores.em,
            report.scores.f1,
            report.scores.prec,
            report.scores.recall
        ),
        (
            0.3076923076923077,
            0.43076923076923074,
            0.43589743589743585,
            0.4358974358974359
        )
    );
}

#[track_caller]
/// The score's notes (gaps), once its figures are as expected.
fn check_score(predictions: &str, gold: &Path, expected: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("predictions");
    std::fs::write(&path, predictions).unwrap();
    let report = score(&path, gold).unwrap();
    let mut text = Vec::new();
    report.write_text(&mut text).unwrap();
    let json = serde_json::to_string(&report).unwrap();
    assert_eq!(format!("{json}\n{}", String::from_utf8(text).unwrap()), expected);
    report.gaps
}

#[test]
fn score_counts_missing_predictions_as_zero() {
    let simplified = fixture("hotpotqa/simplified.json");
    check_score(
        r#"{"answer": {"0": "yes", "1": "Chief of Protocol", "3": "yes"}}"#,
        &simplified,
        "{\"n\":6,\"em\":0.3333333333333333,\"f1\":0.3333333333333333,\"prec\":0.3333333333333333,\"recall\":0.3333333333333333,\"missing\":3,\"errors\":0,\"incomplete\":true,\"tokens_recorded\":false}\n\
         EM 0.3333  F1 0.3333  precision 0.3333  recall 0.3333  (n = 6; incomplete: 3 missing, scored zero)\n\
         missing        3 predictions, scored zero (e.g. `2`, `4`, `5`)\n\
         tokens         not recorded: official predictions hold answers only (score `eval` results for tokens and cost)\n",
    );
    // A results file: runs by id; a torn last line is left out and said so, an errored run
    // answers nothing and is said beside the figure.
    let notes = check_score(
        "{\"id\": \"2\", \"question\": \"?\", \"steps\": [], \"answer\": \"Animorphs\"}\n\
         {\"id\": \"0\", \"question\": \"?\", \"steps\": [], \"answer\": null, \"stopped\": \"error\"}\n\
         {\"id\": \"1\", \"question\": \"?\", \"st",
        &simplified,
        "{\"n\":6,\"em\":0.16666666666666666,\"f1\":0.16666666666666666,\"prec\":0.16666666666666666,\"recall\":0.16666666666666666,\"missing\":4,\"errors\":1,\"incomplete\":true,\"tokens_recorded\":true,\"tokens\":{\"runs\":2,\"runs_with_tokens\":0,\"input\":0,\"cached_input\":0,\"cache_write\":0,\"output\":0,\"reasoning\":0}}\n\
         EM 0.1667  F1 0.1667  precision 0.1667  recall 0.1667  (n = 6; incomplete: 1 error and 4 missing, scored zero)\n\
         errors         1 run ended in an error, scored zero (e.g. `0`); `eval` asks again the ones that may fix themselves, `--retry-errors` the rest\n\
         missing        4 predictions, scored zero (e.g. `1`, `3`, `4`, `5`)\n\
         tokens         not recorded: none of the 2 runs records usage (its model server reported none)\n",
    );
    assert!(
        notes[0].ends_with(
            "`, line 3: the last line is cut short (a write still in progress, or interrupted): left out"
        ),
        "{notes:?}"
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
                reasoning: None,
                ending: Default::default(),
                usage: Some(react_docstore::llm::TokenUsage {
                    prompt_tokens: request.prompt.len() as u64 / 4,
                    completion_tokens: text.len() as u64 / 4,
                    reasoning_tokens: 0,
                    ..Default::default()
                }),
                past_stop: None,
            })
        })
    }

    fn model(&self) -> &str {
        "scripted"
    }
}

/// A scripted model that answers the first `open` questions it is asked at once and holds each
/// later one until `until` resolves: a test then waits for an event (a line, a file), never for a
/// delay to pass.
struct Held {
    inner: ScriptedLlm,
    open: usize,
    asked: Mutex<Vec<String>>,
    until: Box<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>,
}

impl Held {
    fn new(open: usize, until: impl Fn() -> BoxFuture<'static, ()> + Send + Sync + 'static) -> Held {
        Held {
            inner: ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::ZERO),
            open,
            asked: Mutex::new(Vec::new()),
            until: Box::new(until),
        }
    }
}

impl Llm for Held {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            let question = asked(request.prompt);
            let order = {
                let mut asked = self.asked.lock().unwrap();
                if !asked.contains(&question) {
                    asked.push(question.clone());
                }
                asked.iter().position(|known| *known == question).unwrap()
            };
            if order >= self.open {
                (self.until)().await;
            }
            self.inner.complete(request).await
        })
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

/// Waits until `captured` holds a line starting with `prefix` (failing after a minute: a hang).
async fn logged(captured: Captured, prefix: &'static str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !captured.text().lines().any(|line| line.starts_with(prefix)) {
        assert!(std::time::Instant::now() < deadline, "no `{prefix}` line logged");
        tokio::time::sleep(Duration::from_millis(1)).await;
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
        contexts: Contexts::Unused,
        agent: AgentSetup {
            max_steps: Some(4),
            ..AgentSetup::default()
        },
        fewshot: Vec::new(),
        attempts: Default::default(),
        fewshot_from: None,
        concurrency,
        results,
        resume: Resume::SkipDone,
        progress: Progress::Hidden,
        log: LogOutput::stderr(),
    }
}

fn services(llm: Arc<impl Llm + 'static>) -> EvalServices {
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
        (report.scores.n, report.scores.em, report.scores.f1),
        (summary.scores.n, summary.scores.em, summary.scores.f1)
    );

    // Run again: everything is resumed, the model is not called.
    let n_calls = llm.n_calls.load(Ordering::SeqCst);
    let again = eval::evaluate(&config, &services(llm.clone()), std::future::pending())
        .await
        .unwrap();
    assert_eq!(llm.n_calls.load(Ordering::SeqCst), n_calls);
    assert_eq!(
        (again.done, again.resumed, again.scores.em, again.scores.f1),
        (6, 6, summary.scores.em, summary.scores.f1)
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

    // A budget of one step finishes no question: exit code 1, "ran but nothing answered" (every
    // question has a script here: none ends in an error, which would make it 2).
    let one_step = EvalConfig {
        agent: AgentSetup {
            max_steps: Some(1),
            ..AgentSetup::default()
        },
        results: dir.path().join("one-step.jsonl"),
        ..config.clone()
    };
    const SEARCH_ONLY: &[&str] = &[" Let me look.\nAction 1: Search[Something]"];
    let file = QuestionFile::read(&fixture("hotpotqa/simplified.json")).unwrap();
    let searching: Vec<(&str, &[&str])> = file
        .questions
        .iter()
        .map(|question| (question.question.as_str(), SEARCH_ONLY))
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
    let config = EvalConfig {
        contexts: Contexts::Required,
        ..config(questions, results.clone(), 2)
    };
    let summary = eval::evaluate(&config, &services(llm), std::future::pending())
        .await
        .unwrap();
    assert_eq!((summary.scores.n, summary.scores.em), (3, 1.0));
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
    // A view (the binary's bar) is told the round's progress.
    let view = Arc::new(RecordedView::default());
    let config = EvalConfig {
        progress: Progress::View(view.clone()),
        ..config(fixture("fever/paper_dev.jsonl"), results, 1)
    };
    let summary = eval::evaluate(&config, &services(llm), std::future::pending())
        .await
        .unwrap();
    crate::assert_snapshot!(render_summary(&summary));
    assert_eq!(
        *view.0.lock().unwrap(),
        [
            "started 4",
            "advanced 0",
            "advanced 1 EM 1.000 F1 1.000",
            "advanced 2 EM 0.500 F1 0.500",
            "advanced 3 EM 0.667 F1 0.667",
            "note question `166626`: the recording has no completion for step 1 (call 1 of that step)",
            "advanced 4 EM 0.500 F1 0.500",
            "finished"
        ]
    );
}

/// A progress view that records the events it is told.
#[derive(Default)]
struct RecordedView(std::sync::Mutex<Vec<String>>);

impl react_docstore::eval::ProgressView for RecordedView {
    fn started(&self, n_questions: usize) {
        self.0.lock().unwrap().push(format!("started {n_questions}"));
    }
    fn advanced(&self, done: usize, scores: Option<(f64, f64)>) {
        let scores = scores.map_or(String::new(), |(em, f1)| format!(" EM {em:.3} F1 {f1:.3}"));
        self.0.lock().unwrap().push(format!("advanced {done}{scores}"));
    }
    fn note(&self, message: &str) {
        self.0.lock().unwrap().push(format!("note {message}"));
    }
    fn finished(&self) {
        self.0.lock().unwrap().push("finished".to_owned());
    }
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
        // Two questions finish; the two asked next wait for ever, so the kill comes when exactly
        // two runs are on disk, however slow the machine.
        let llm = Arc::new(Held::new(2, || Box::pin(std::future::pending())));
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
                assert_eq!(summary.done, 2);
            }
        }
        let n_before = read_results(&results).len();
        assert_eq!(n_before, 2, "lines when killed");
        // A crash in the middle of a write leaves a torn last line.
        let mut text = std::fs::read_to_string(&results).unwrap();
        text.push_str(r#"{"format":"react-docstore.run.v1","id":"4","quest"#);
        std::fs::write(&results, text).unwrap();

        let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::ZERO));
        let summary = eval::evaluate(&config, &services(llm), std::future::pending())
            .await
            .unwrap();
        assert_eq!(
            (summary.done, summary.resumed, summary.interrupted),
            (6, 2, false)
        );
        assert_each_once(&read_results(&results), 6);
        assert_eq!(summary.scores.em, 2.0 / 6.0);
        assert_eq!(
            (summary.errors, summary.exit_code()),
            (1, 2),
            "one question's script fails it: the figure is incomplete"
        );
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
    // Four of the six gold questions have no prediction: the figure is incomplete, exit 2.
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "{\"n\":6,\"em\":0.3333333333333333,\"f1\":0.3333333333333333,\"prec\":0.3333333333333333,\"recall\":0.3333333333333333,\"missing\":4,\"errors\":0,\"incomplete\":true,\"tokens_recorded\":false}\n"
    );
}

// ---------------------------------------------------------------- one writer, bytes, question checks

#[tokio::test]
async fn a_results_file_has_one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let (_held, _) = ResultsFile::open(&results).unwrap();
    let refused = ResultsFile::open(&results).unwrap_err().to_string();
    assert_eq!(
        refused,
        format!(
            "results file `{}` is in use by another evaluation (it holds the file's lock); wait for it to finish or choose another `--out`",
            results.display()
        )
    );
    drop(_held);

    // A second evaluation on the same file, plain or `--retry-errors`, is refused at once while
    // the first runs; the first goes on and the file holds each question once.
    let config = config(fixture("hotpotqa/simplified.json"), results.clone(), 1);
    let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::from_millis(20)));
    let first_services = services(llm.clone());
    let first = eval::evaluate(&config, &first_services, std::future::pending());
    let second = async {
        results_reach(&results, 1).await;
        let mut refusals = Vec::new();
        for resume in [Resume::SkipDone, Resume::RetryErrors] {
            let again = EvalConfig {
                resume,
                ..config.clone()
            };
            let n_calls = llm.n_calls.load(Ordering::SeqCst);
            let refused = eval::evaluate(&again, &services(llm.clone()), std::future::pending()).await;
            assert!(matches!(
                refused,
                Err(EvalError::Results(ResultsError::Locked { .. }))
            ));
            // Refused before any question ran (the first evaluation's calls aside).
            assert!(llm.n_calls.load(Ordering::SeqCst) <= n_calls + 1);
            refusals.push(refused);
        }
        refusals
    };
    let (summary, refusals) = tokio::join!(first, second);
    let summary = summary.unwrap();
    assert_eq!((summary.done, refusals.len()), (6, 2));
    assert_each_once(&read_results(&results), 6);
}

#[test]
fn torn_line_repair_works_on_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.jsonl");
    let run = |id: &str, question: &str| {
        format!("{{\"id\": \"{id}\", \"question\": \"{question}\", \"steps\": [], \"answer\": \"yes\"}}\n")
    };
    // Line 2 is not UTF-8 (a Latin-1 `é`); line 3 is torn.
    let mut bytes = run("0", "caf\u{e9}?").into_bytes();
    bytes.extend_from_slice(
        b"{\"id\": \"1\", \"question\": \"caf\xE9?\", \"steps\": [], \"answer\": \"yes\"}\n",
    );
    bytes.extend_from_slice(br#"{"id": "2", "quest"#);
    std::fs::write(&path, &bytes).unwrap();
    let error = ResultsFile::open(&path).unwrap_err();
    assert_eq!(
        format!("{:#}", anyhow::Error::from(error)),
        format!(
            "results file `{}`, line 2: not valid UTF-8: invalid utf-8 sequence of 1 bytes from index 28",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the file is left untouched");

    // Multi-byte UTF-8 before a torn line: the cut lands exactly where the torn line starts.
    let whole = format!("{}{}", run("0", "caf\u{e9} \u{1F600}?"), run("1", "ok"));
    std::fs::write(&path, format!("{whole}{{\"id\": \"2\", \"qu")).unwrap();
    let (_results, stored) = ResultsFile::open(&path).unwrap();
    assert_eq!((stored.runs.len(), stored.torn_bytes), (2, 15));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
}

/// How an evaluation that must fail fails.
async fn evaluation_error(config: &EvalConfig, llm: &Arc<ScriptedLlm>) -> EvalError {
    eval::evaluate(config, &services(llm.clone()), std::future::pending())
        .await
        .expect_err("the evaluation fails")
}

/// Two question files with the same stem and ids by position, but other questions.
fn write_question_file(dir: &Path, folder: &str, questions: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir.join(folder)).unwrap();
    let path = dir.join(folder).join("dev.json");
    let records: Vec<serde_json::Value> = questions
        .iter()
        .map(|question| serde_json::json!({"question": question, "answer": "yes"}))
        .collect();
    std::fs::write(&path, serde_json::to_string(&records).unwrap()).unwrap();
    path
}

#[tokio::test]
async fn resuming_from_the_results_of_another_question_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_question_file(
        dir.path(),
        "a",
        &["Were Scott Derrickson and Ed Wood of the same nationality?"],
    );
    let b = write_question_file(
        dir.path(),
        "b",
        &[
            "Is the Laleli Mosque in the same neighborhood as the Esma Sultan Mansion, a building in Istanbul?",
        ],
    );
    let results = dir.path().join("dev.results.jsonl");
    let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::ZERO));
    eval::evaluate(
        &config(a, results.clone(), 1),
        &services(llm.clone()),
        std::future::pending(),
    )
    .await
    .unwrap();
    let before = std::fs::read(&results).unwrap();
    for resume in [Resume::SkipDone, Resume::RetryErrors] {
        let config = EvalConfig {
            resume,
            ..config(b.clone(), results.clone(), 1)
        };
        let error = evaluation_error(&config, &llm).await;
        assert_eq!(
            error.to_string(),
            format!(
                "results file `{}` belongs to other questions: its run of id `0` asks \"Were Scott Derrickson and Ed Wood of the same nationality?\", but `{}` asks \"Is the Laleli Mosque in the same neighborhood as the Esma Su…\" under that id; choose another `--out` (or remove the file)",
                results.display(),
                b.display()
            )
        );
    }
    assert_eq!(
        std::fs::read(&results).unwrap(),
        before,
        "the results file is left as it was"
    );
}

#[tokio::test]
async fn the_same_error_on_question_after_question_stops_the_evaluation() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    // No script: every question fails with the same error.
    let llm = Arc::new(ScriptedLlm::new(&[], Duration::ZERO));
    let captured = Captured::default();
    let config = EvalConfig {
        log: captured.log(),
        ..config(fixture("hotpotqa/simplified.json"), results.clone(), 1)
    };
    let error = evaluation_error(&config, &llm).await;
    assert_eq!(
        error.to_string(),
        format!(
            "evaluation stopped: the last 5 questions all failed alike: the recording has no completion for the step (the last one: the recording has no completion for step 1 (call 1 of that step)); they are recorded as errors; no question finished; run the same command again to resume; `--retry-errors` asks again the 5 that failed in a way that will not — every run is kept in `{}`",
            results.display()
        )
    );
    assert_eq!(eval::SAME_ERROR_STREAK, 5);
    assert_eq!(
        llm.n_calls.load(Ordering::SeqCst),
        5,
        "the sixth question never ran"
    );
    assert_eq!(read_results(&results).len(), 5);

    // Resumed, the errors are kept and the log says how to run them again.
    let scripted = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::ZERO));
    let summary = eval::evaluate(&config, &services(scripted), std::future::pending())
        .await
        .unwrap();
    assert_eq!((summary.resumed, summary.errors), (5, 6));
    let log = captured.text();
    assert!(
        log.contains(&format!(
            "{} holds runs that ended in an error that asking again will not fix (5): they are kept, not run again; `--retry-errors` runs them again",
            results.display()
        )),
        "{log}"
    );
}

#[tokio::test]
async fn without_a_terminal_progress_lines_are_printed() {
    let dir = tempfile::tempdir().unwrap();
    let captured = Captured::default();
    let config = EvalConfig {
        progress: Progress::Lines {
            every: Duration::from_millis(5),
        },
        log: captured.log(),
        ..config(
            fixture("hotpotqa/simplified.json"),
            dir.path().join("results.jsonl"),
            1,
        )
    };
    // The second question waits for a progress line that counts the first one done.
    let waited = captured.clone();
    let llm = Arc::new(Held::new(1, move || {
        Box::pin(logged(waited.clone(), "progress 1/6"))
    }));
    eval::evaluate(&config, &services(llm), std::future::pending())
        .await
        .unwrap();
    let log = captured.text();
    let done = log.lines().find(|line| line.starts_with("progress 1/6")).unwrap();
    // `progress 1/6, EM 1.000 F1 1.000, 95.2 questions/min, ETA 1s`.
    assert!(
        done.starts_with("progress 1/6, EM 1.000 F1 1.000, ") && done.contains(" questions/min, ETA "),
        "{done}"
    );
}

#[tokio::test]
async fn the_question_file_is_read_once_keeping_only_the_selection() {
    let questions = fixture("hotpotqa/official.json");
    let selection = Selection {
        limit: Some(1),
        ..Selection::default()
    };
    let kept = selection.read(&questions, Contexts::Required).unwrap();
    assert_eq!(kept.questions.len(), 1);
    assert_eq!(kept.questions[0].context.len(), 10);
    let dropped = selection.read(&questions, Contexts::Unused).unwrap();
    assert_eq!(dropped.questions[0].id, kept.questions[0].id);
    assert!(
        dropped.questions[0].context.is_empty(),
        "paragraphs nobody reads are dropped"
    );
    // A byte order mark before the array is skipped.
    let dir = tempfile::tempdir().unwrap();
    let with_bom = dir.path().join("bom.json");
    let text = std::fs::read_to_string(&questions).unwrap();
    std::fs::write(&with_bom, format!("\u{feff}{text}")).unwrap();
    let read = selection.read(&with_bom, Contexts::Required).unwrap();
    assert_eq!(read.questions, kept.questions);
    // A subset narrowed by ids keeps only what it picks.
    let ids = dir.path().join("ids.txt");
    std::fs::write(&ids, "2\n").unwrap();
    let by_ids = Selection {
        ids: Some(ids),
        ..Selection::default()
    };
    let picked = by_ids
        .read(&fixture("hotpotqa/simplified.json"), Contexts::Unused)
        .unwrap();
    assert_eq!(
        picked
            .questions
            .iter()
            .map(|question| question.id.as_str())
            .collect::<Vec<_>>(),
        ["2"]
    );

    // `--docstore distractor` on a file without paragraphs is refused before the results file exists.
    let config = EvalConfig {
        contexts: Contexts::Required,
        ..config(fixture("hotpotqa/simplified.json"), dir.path().join("r.jsonl"), 1)
    };
    let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::ZERO));
    let error = evaluation_error(&config, &llm).await;
    assert!(matches!(error, EvalError::NoContexts { .. }), "{error}");
    assert!(!dir.path().join("r.jsonl").exists());
}

// ---------------------------------------------------------------- replaying results, FEVER scores

#[tokio::test]
async fn replaying_a_results_file_gives_back_the_eval_summary() {
    use react_docstore::agent::trace::TracePrinter;
    use react_docstore::apps::replay::{Output, ReplayConfig, replay};
    use react_docstore::record::files::{Wanted, recorded_paths};

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    let results = dir.path().join("b/dev.results.jsonl");
    let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::ZERO));
    let config = config(fixture("hotpotqa/simplified.json"), results.clone(), 3);
    let summary = eval::evaluate(&config, &services(llm), std::future::pending())
        .await
        .unwrap();
    let single = dir.path().join("a.json");
    std::fs::copy(fixture("runs/synthetic/fallback-call.json"), &single).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a run").unwrap();
    // Directories are searched recursively, in name order.
    assert_eq!(
        recorded_paths(&[dir.path().to_owned()], Wanted::Runs).unwrap(),
        [single.clone(), results.clone()]
    );

    let replay_json = |paths: Vec<PathBuf>| async {
        let config = ReplayConfig {
            paths,
            output: Output::Json,
            profile: None,
            max_steps: None,
            docstore: None,
            prices: None,
        };
        let mut stdout = Vec::new();
        let replayed = replay(&config, &|_, _| None, &mut stdout, &mut TracePrinter::silent()).await;
        (replayed, String::from_utf8(stdout).unwrap())
    };
    let (replayed, stdout) = replay_json(vec![results.clone()]).await;
    let replayed = replayed.unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 7, "six runs, then the summary");
    for (idx, line) in lines[..6].iter().enumerate() {
        assert_eq!(
            line["source"],
            serde_json::json!({"file": results.to_str().unwrap(), "line": idx + 1})
        );
    }
    let recorded = read_results(&results);
    for (line, run) in lines[..6].iter().zip(&recorded) {
        assert_eq!(line["id"].as_str(), run.id.as_deref());
        assert_eq!(line["answer"].as_str(), run.answer.as_deref());
    }
    let totals = &lines[6]["summary"];
    assert_eq!(
        (totals["n"].as_u64(), totals["em"].as_f64(), totals["f1"].as_f64()),
        (
            Some(summary.scores.n as u64),
            Some(summary.scores.em),
            Some(summary.scores.f1)
        )
    );
    assert_eq!(
        (replayed.n_changed, replayed.exit_code()),
        (0, 0),
        "replayed as recorded"
    );

    // A whole directory: the single run first (no line), then the results file's runs.
    let (_, stdout) = replay_json(vec![dir.path().to_owned()]).await;
    let first: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["source"],
        serde_json::json!({"file": single.to_str().unwrap()})
    );
    assert_eq!(stdout.lines().count(), 8);

    // A malformed line is named with its file and line.
    let mut text = std::fs::read_to_string(&results).unwrap();
    text = text.replacen("\n", "\n{\"id\": \"7\"}\n", 1);
    std::fs::write(&results, text).unwrap();
    let (replayed, _) = replay_json(vec![results.clone()]).await;
    let error = format!("{:#}", anyhow::Error::from(replayed.unwrap_err()));
    assert!(
        error.starts_with(&format!(
            "results file `{}`, line 2: not a run: missing field `question`",
            results.display()
        )),
        "{error}"
    );
}

#[test]
fn score_of_fever_results_reports_label_accuracy() {
    let predictions = "{\"id\": \"91198\", \"question\": \"?\", \"steps\": [], \"answer\": \"NOT ENOUGH INFO\"}\n\
         {\"id\": \"194462\", \"question\": \"?\", \"steps\": [], \"answer\": \"REFUTES\"}\n\
         {\"id\": \"137334\", \"question\": \"?\", \"steps\": [], \"answer\": \"supports\"}\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fever.results.jsonl");
    std::fs::write(&path, predictions).unwrap();
    let report = score(&path, &fixture("fever/paper_dev.jsonl")).unwrap();
    let mut text = Vec::new();
    report.write_text(&mut text).unwrap();
    crate::assert_snapshot!(format!(
        "{}\n{}",
        serde_json::to_string(&report).unwrap(),
        String::from_utf8(text).unwrap()
    ));
}

// ---------------------------------------------------------------- the eval command

/// `react-docstore eval QUESTIONS` against `model` (the completions API), results in `results`.
fn eval_command(questions: &Path, model: &wiremock::MockServer, results: &Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"));
    command
        .arg("eval")
        .arg(questions)
        .args(["--api", "completions", "--model", "mock", "--concurrency", "2"])
        .args(["--base-url", &format!("{}/v1", model.uri())])
        .arg("--out")
        .arg(results)
        .env_remove("OPENAI_API_KEY")
        .env("NO_COLOR", "1");
    command
}

/// A model server that refuses the key of every request.
async fn refusing_model() -> wiremock::MockServer {
    use wiremock::matchers::{method, path};
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(method("POST"))
        .and(path("/v1/completions"))
        .respond_with(wiremock::ResponseTemplate::new(401).set_body_json(
            serde_json::json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
        ))
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_stops_the_evaluation_at_once() {
    let model = refusing_model().await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let questions = fixture("hotpotqa/simplified.json");
    // A run that ended in an error, resumed: the evaluation says how to run it again.
    let first = QuestionFile::read(&questions).unwrap().questions[0]
        .question
        .clone();
    let errored = serde_json::json!({"id": "0", "question": first, "steps": [], "answer": null, "stopped": "error", "error": "timeout"});
    std::fs::write(&results, format!("{errored}\n")).unwrap();

    let output = eval_command(&questions, &model, &results).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: evaluation stopped: the model server at `{}/v1/completions` rejected the request (401 Unauthorized): Incorrect API key provided (asking again will not help: check the key, the model name and the URL); no question finished; run the same command again to resume; `--retry-errors` asks again the 1 that failed in a way that will not — every run is kept in `{}`",
            model.uri(),
            results.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("holds runs that ended in an error that asking again will not fix (1): they are kept, not run again; `--retry-errors` runs them again"), "{stderr}");
    // Only the questions already in flight reached the server, not the other four.
    let n_requests = model.received_requests().await.unwrap().len();
    assert!((1..=2).contains(&n_requests), "{n_requests} requests");
    assert_eq!(
        read_results(&results).len(),
        1,
        "refused questions are not recorded"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn which_model_errors_stop_the_evaluation() {
    use wiremock::matchers::{method, path};
    // 401/403/404: every question would meet them, the first one stops everything and is not
    // recorded. A 400 is about one prompt: each question records it, until the streak stops it.
    for (status, stops_at_once) in [(401, true), (403, true), (404, true), (400, false)] {
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(method("POST"))
            .and(path("/v1/completions"))
            .respond_with(wiremock::ResponseTemplate::new(status))
            .mount(&server)
            .await;
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results.jsonl");
        let services = EvalServices {
            llm: Arc::new(crate::llm::client(
                &server,
                react_docstore::llm::openai::Api::Completions,
            )),
            docstore: Arc::new(ContextDocstoreSource),
            toolbox: Toolbox::default(),
        };
        let config = config(fixture("hotpotqa/simplified.json"), results.clone(), 1);
        let error = eval::evaluate(&config, &services, std::future::pending())
            .await
            .expect_err("the evaluation stops");
        let EvalError::Stopped { reason, progress, .. } = error else {
            panic!("{status}: {error}")
        };
        let n_requests = server.received_requests().await.unwrap().len();
        if stops_at_once {
            assert!(
                matches!(reason, eval::StopReason::Refused { .. }),
                "{status}: {reason}"
            );
            assert_eq!(
                (progress.n_finished, n_requests, read_results(&results).len()),
                (0, 1, 0),
                "{status}"
            );
        } else {
            assert!(
                matches!(reason, eval::StopReason::Repeated { n_questions: 5, .. }),
                "{reason}"
            );
            assert_eq!(
                (
                    progress.n_finished,
                    progress.n_asked_again + progress.n_kept_errors,
                    n_requests,
                    read_results(&results).len()
                ),
                (0, 5, 5, 5)
            );
        }
    }
}

/// Answers the first call at once with a Finish, every later one after a long delay.
struct FirstFastThenSlow(AtomicUsize);

impl wiremock::Respond for FirstFastThenSlow {
    fn respond(&self, _request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body = serde_json::json!({"choices": [{"index": 0, "text": " Easy.\nAction 1: Finish[yes]", "finish_reason": "stop"}]});
        let template = wiremock::ResponseTemplate::new(200).set_body_json(body);
        match self.0.fetch_add(1, Ordering::SeqCst) {
            0 => template,
            _ => template.set_delay(Duration::from_secs(60)),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_and_sighup_stop_like_ctrl_c_and_a_second_eval_is_refused() {
    use wiremock::matchers::{method, path};
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
        let model = wiremock::MockServer::start().await;
        wiremock::Mock::given(method("POST"))
            .and(path("/v1/completions"))
            .respond_with(FirstFastThenSlow(AtomicUsize::new(0)))
            .mount(&model)
            .await;
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results.jsonl");
        let questions = fixture("hotpotqa/simplified.json");
        let mut command = eval_command(&questions, &model, &results);
        command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = command.spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::fs::read_to_string(&results).map_or(0, |text| text.lines().count()) == 0 {
            assert!(std::time::Instant::now() < deadline, "no result within 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }

        // The file is locked: a second evaluation on it, plain or retrying errors, is refused at once.
        for extra in [&[][..], &["--retry-errors"][..]] {
            let second = eval_command(&questions, &model, &results)
                .args(extra)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&second.stderr);
            assert_eq!(second.status.code(), Some(2), "{stderr}");
            assert_eq!(
                stderr,
                format!(
                    "error: results file `{}` is in use by another evaluation (it holds the file's lock); wait for it to finish or choose another `--out`\n",
                    results.display()
                )
            );
        }

        let pid = libc::pid_t::try_from(child.id()).unwrap();
        // SAFETY: `kill` has no memory effects; `pid` is our own child, not yet reaped.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stdout.starts_with("questions      6 selected, 1 done (0 resumed, 0 errors), interrupted\n"),
            "{name}: {stdout}"
        );
        assert!(stderr.contains("interrupted: 1 of 6 questions done"), "{stderr}");
        let runs = read_results(&results);
        assert_eq!((runs.len(), runs[0].answer.as_deref()), (1, Some("yes")));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn eval_reads_the_question_file_once() {
    // A named pipe can be read once: a second read would wait for a writer that never comes.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("dev.json");
    let text = std::fs::read_to_string(fixture("hotpotqa/official.json")).unwrap();
    let writer = crate::pipe_read_once(&fifo, text);
    let model = refusing_model().await;
    let mut command = eval_command(&fifo, &model, &dir.path().join("results.jsonl"));
    command.args(["--docstore", "distractor", "--limit", "1"]);
    let (_, stderr, _) = crate::output_within_30s(&mut command, "a second read of the question file");
    writer.join().unwrap();
    // It read the questions and reached the model (which refused the key).
    assert!(
        stderr.contains("error: evaluation stopped: the model server"),
        "{stderr}"
    );
}

#[tokio::test]
async fn eval_over_an_index_observes_through_it_and_records_its_snapshot() {
    use react_docstore::docstore::DocstoreInfo;
    use react_docstore::docstore::index::{BuildConfig, IndexSource, build};
    let dir = tempfile::tempdir().unwrap();
    let index_dir = dir.path().join("wiki");
    let built = build(
        &BuildConfig::new(
            vec![fixture("index/hotpotqa-abstracts.tar.bz2")],
            index_dir.clone(),
        ),
        &std::sync::atomic::AtomicBool::new(false),
    )
    .unwrap();
    let questions = write_question_file(dir.path(), "q", &["Where is Constantin Medien based?"]);
    let llm = Arc::new(ScriptedLlm::new(
        &[(
            "Where is Constantin Medien based?",
            &[
                " I need to search Constantin Medein.\nAction 1: Search[Constantin Medein]",
                " The title is Constantin Medien.\nAction 2: Search[Constantin Medien]",
                " It is based in Ismaning, so the answer is yes.\nAction 3: Finish[yes]",
            ],
        )],
        Duration::ZERO,
    ));
    let results = dir.path().join("dev.results.jsonl");
    let services = EvalServices {
        llm,
        docstore: Arc::new(IndexSource::open(&index_dir, Profile::Default).unwrap()),
        toolbox: Toolbox::default(),
    };
    let summary = eval::evaluate(
        &config(questions, results.clone(), 2),
        &services,
        std::future::pending(),
    )
    .await
    .unwrap();
    assert_eq!((summary.done, summary.scores.em), (1, 1.0));
    let runs = read_results(&results);
    assert_eq!(
        runs[0].docstore,
        Some(DocstoreInfo {
            kind: "index".to_owned(),
            snapshot: Some(built.manifest.snapshot.clone()),
        })
    );
    assert_eq!(
        runs[0].steps[0].observation.as_deref(),
        Some("Could not find Constantin Medein. Similar: ['Constantin Medien'].")
    );
    assert!(
        runs[0].steps[1]
            .observation
            .as_deref()
            .unwrap()
            .contains("based in Ismaning near Munich")
    );
}

// ---------------------------------------------------------------- an outage is one failure class

/// Searches each question's own text, then would answer: every question fetches its own URL.
#[derive(Default)]
struct SearchingLlm {
    n_calls: AtomicUsize,
}

impl Llm for SearchingLlm {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            self.n_calls.fetch_add(1, Ordering::SeqCst);
            let text = match request.step {
                1 => format!(
                    " I need to search it.\nAction 1: Search[{}]",
                    asked(request.prompt)
                ),
                step => format!(" Done.\nAction {step}: Finish[yes]"),
            };
            Ok(Completion {
                text,
                reasoning: None,
                ending: Default::default(),
                usage: None,
                past_stop: None,
            })
        })
    }

    fn model(&self) -> &str {
        "searching"
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wikipedia_outage_stops_the_evaluation_though_every_question_fails_on_its_own_url() {
    use react_docstore::docstore::{DocstoreConfig, HttpPolicy};
    use react_docstore::eval::{FailureClass, FailureKind, FailureOrigin};
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(wiremock::ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let questions: Vec<String> = (1..=8).map(|n| format!("Which city is number {n}?")).collect();
    let questions = write_question_file(
        dir.path(),
        "outage",
        &questions.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let results = dir.path().join("results.jsonl");
    let docstore = DocstoreConfig {
        wiki_url: server.uri(),
        cache_dir: Some(dir.path().join("cache")),
        http: HttpPolicy {
            max_retries: 1,
            min_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            ..HttpPolicy::default()
        },
        ..DocstoreConfig::new(Profile::Default)
    };
    let llm = Arc::new(SearchingLlm::default());
    let services = EvalServices {
        llm: llm.clone(),
        docstore: docstore.open().unwrap(),
        toolbox: Toolbox::default(),
    };
    let error = eval::evaluate(
        &config(questions.clone(), results.clone(), 1),
        &services,
        std::future::pending(),
    )
    .await
    .expect_err("the outage stops the evaluation");
    let EvalError::Stopped {
        reason: eval::StopReason::Repeated {
            n_questions, failure, ..
        },
        progress,
        ..
    } = &error
    else {
        panic!("{error}")
    };
    let host = server.address().to_string();
    assert_eq!(
        (*n_questions, progress.n_finished, progress.n_asked_again, failure),
        (
            5,
            0,
            5,
            &FailureClass {
                origin: FailureOrigin::Wikipedia { server: host.clone() },
                kind: FailureKind::Status(503),
            }
        )
    );
    assert_eq!(
        error.to_string(),
        format!(
            "evaluation stopped: the last 5 questions all failed alike: Wikipedia at `{host}` answered HTTP 503 (the last one: GET {}/w/index.php?search=Which+city+is+number+5%3F answered HTTP 503 after 2 attempt(s)); they are recorded as errors; no question finished; run the same command again to resume: it asks again the 5 that failed in a way that may fix itself — every run is kept in `{}`",
            server.uri(),
            results.display()
        )
    );
    assert_eq!(
        llm.n_calls.load(Ordering::SeqCst),
        5,
        "the model was asked only for the five questions that met the outage"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 5 * 2);
    let runs = read_results(&results);
    assert_eq!(runs.len(), 5);
    assert!(runs.iter().all(|run| {
        run.error
            .as_deref()
            .is_some_and(|error| error.contains("HTTP 503"))
    }));

    // Wikipedia is back: the same command asks the five again (no `--retry-errors`), and the
    // evaluation scores as one that met no outage.
    server.reset().await;
    let page = std::fs::read_to_string(fixture("wikipedia/colorado_orogeny_hit.html")).unwrap();
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(wiremock::ResponseTemplate::new(200).set_body_string(page))
        .mount(&server)
        .await;
    let resumed = eval::evaluate(
        &config(questions.clone(), results.clone(), 1),
        &services,
        std::future::pending(),
    )
    .await
    .unwrap();
    let clean = eval::evaluate(
        &config(questions, dir.path().join("clean.jsonl"), 1),
        &services,
        std::future::pending(),
    )
    .await
    .unwrap();
    assert_eq!((resumed.done, resumed.errors, resumed.resumed), (8, 0, 0));
    assert_eq!(resumed.scores, clean.scores);
    assert_eq!(resumed.scores.em, 1.0);
    assert!(read_results(&results).iter().all(|run| run.error.is_none()));
}

/// A model server that is not running, on this machine: `ask` and `eval` fail at once with the
/// same message, nothing retried, and `eval` says that no question finished.
#[test]
fn a_dead_local_model_server_fails_at_once() {
    let port = crate::refused_port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let refused = format!(
        "cannot reach the model server at `{base_url}/completions`: connection refused, nothing listens at 127.0.0.1:{port} (is the server running, on that port?)"
    );
    let started = std::time::Instant::now();
    let ask = crate::binary()
        .args(["ask", "--docstore", "corpus:fixtures/docstore/corpus-3.jsonl"])
        .args(["--api", "completions", "--model", "m", "--base-url", &base_url])
        .arg("Which magazine was started first Arthur's Magazine or First for Women?")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let ask_took = started.elapsed();
    let stderr = String::from_utf8_lossy(&ask.stderr);
    assert_eq!(ask.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("error: {refused}")), "{stderr}");
    assert!(!stderr.contains("retrying"), "{stderr}");
    // Retries would wait a second at least before the first.
    assert!(ask_took < Duration::from_secs(2), "{ask_took:?}");

    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.jsonl");
    let started = std::time::Instant::now();
    let eval = crate::binary()
        .arg("eval")
        .arg(fixture("hotpotqa/simplified.json"))
        .args(["--docstore", "corpus:fixtures/docstore/corpus-3.jsonl"])
        .args(["--api", "completions", "--model", "m", "--base-url", &base_url])
        .args(["--concurrency", "2", "--out"])
        .arg(&results)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let eval_took = started.elapsed();
    let stderr = String::from_utf8_lossy(&eval.stderr);
    assert_eq!(eval.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("error: evaluation stopped: {refused}")),
        "{stderr}"
    );
    assert!(stderr.contains("; no question finished"), "{stderr}");
    assert!(!stderr.contains("retrying"), "{stderr}");
    // The questions that met it are recorded as errors that may fix themselves: asked again.
    let recorded = read_results(&results);
    assert!(!recorded.is_empty());
    assert!(recorded.iter().all(|run| run.error.is_some()
        && run.error_kind == Some(react_docstore::record::run::RunErrorKind::Transient)));
    assert!(eval_took < Duration::from_secs(2), "{eval_took:?}");
}

// ---------------------------------------------------------------- refusals

#[tokio::test]
async fn the_library_refuses_what_the_command_line_refuses_in_its_words() {
    use react_docstore::base::method::Method;
    let dir = tempfile::tempdir().unwrap();
    let questions = fixture("hotpotqa/simplified.json");
    let results = dir.path().join("r.jsonl");
    let cases: [(&[&str], AgentSetup); 2] = [
        (
            &["--method", "cot", "--max-steps", "3"],
            AgentSetup {
                method: Method::Cot,
                max_steps: Some(3),
                ..AgentSetup::default()
            },
        ),
        (
            &["--samples", "5"],
            AgentSetup {
                samples: Some(5),
                ..AgentSetup::default()
            },
        ),
    ];
    for (flags, agent) in cases {
        let output = std::process::Command::new(insta_cmd::get_cargo_bin("react-docstore"))
            .arg("eval")
            .arg(&questions)
            .args(["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--out"])
            .arg(&results)
            .args(flags)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        let config = EvalConfig {
            agent,
            ..config(questions.clone(), results.clone(), 1)
        };
        let llm = Arc::new(ScriptedLlm::new(&SIMPLIFIED_SCRIPTS, Duration::ZERO));
        let error = evaluation_error(&config, &llm).await;
        assert_eq!(stderr, format!("error: {error}\n"), "{flags:?}");
        assert!(!results.exists(), "refused before the results file is made");
    }
}

/// An `eval --offline` of HotpotQA's distractor file over Wikipedia (the default docstore): its
/// searches miss the empty page cache, and the first failure is followed, once, by the docstore
/// that needs no network — the file's own paragraphs. A file without paragraphs gets no such note.
#[tokio::test(flavor = "multi_thread")]
async fn an_offline_eval_of_a_distractor_file_suggests_the_distractor_docstore() {
    let server = crate::serve_posts(wiremock::ResponseTemplate::new(200).set_body_json(
        serde_json::json!({"choices": [{"index": 0, "text": " I need to search it.\nAction 1: Search[VIVA Media]"}]}),
    ))
    .await;
    let dir = tempfile::tempdir().unwrap();
    let eval = |questions: &str| {
        let output = crate::binary()
            .args(["eval", questions, "--offline", "--cache-dir"])
            .arg(dir.path().join("cache"))
            .arg("--out")
            .arg(dir.path().join(format!("{}.jsonl", questions.len())))
            .args(crate::completions_model(&server.uri()))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        String::from_utf8(output.stderr).unwrap()
    };
    let distractor = "fixtures/docstore/hotpotqa-distractor-3.json";
    let stderr = eval(distractor);
    let hint = format!(
        "`{distractor}` holds each question's context paragraphs: `--docstore distractor` searches them (HotpotQA's distractor setting), with no network"
    );
    assert_eq!(stderr.matches(&hint).count(), 1, "{stderr}");
    assert!(
        stderr.find("offline: no cached page").unwrap() < stderr.find(&hint).unwrap(),
        "after the first failure: {stderr}"
    );
    let stderr = eval("fixtures/hotpotqa/simplified.json");
    assert!(stderr.contains("offline: no cached page"), "{stderr}");
    assert!(!stderr.contains("--docstore distractor"), "{stderr}");
}
