//! `--method`: every row of the ReAct paper's Table 1 against a local scripted model server —
//! the prompts sent (the `paper` profile's byte-equal to the repository's keys), the answers
//! read, CoT-SC's vote and its requests, both backoffs, and replay equal to the record.

use std::sync::{Arc, Mutex};

use react_docstore::agent::action::Action;
use react_docstore::agent::action::ActionError;
use react_docstore::agent::environment::{Environment, EnvironmentError};
use react_docstore::agent::prompt::PromptOptions;
use react_docstore::base::method::Method;
use react_docstore::base::profile::Profile;
use react_docstore::base::task::Task;
use react_docstore::llm::{CallPurpose, Completion, Llm, LlmError, LlmRequest, SampleRequest, Samples};
use react_docstore::record::run::{BackoffReason, Run, Stopped};
use react_docstore::solver::{Examples, MethodConfig, Solver};
use react_docstore::tools::Toolbox;
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const QUESTION: &str = "Which magazine was started first Arthur's Magazine or First for Women?";

/// A model in process that records every prompt and answers from a script: `step` for the loop's
/// calls (by step number), `samples` for sampling requests (the choices of each request in turn).
struct ScriptedModel {
    steps: Vec<String>,
    samples: Mutex<Vec<Vec<String>>>,
    prompts: Mutex<Vec<String>>,
}

impl ScriptedModel {
    fn new(steps: &[&str], samples: Vec<Vec<&str>>) -> ScriptedModel {
        ScriptedModel {
            steps: steps.iter().map(|step| (*step).to_owned()).collect(),
            samples: Mutex::new(
                samples
                    .into_iter()
                    .map(|request| request.into_iter().map(str::to_owned).collect())
                    .collect(),
            ),
            prompts: Mutex::new(Vec::new()),
        }
    }

    fn prompts(&self) -> Vec<String> {
        self.prompts.lock().unwrap().clone()
    }
}

impl Llm for ScriptedModel {
    fn complete<'a>(
        &'a self,
        request: LlmRequest<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Completion, LlmError>> {
        self.prompts.lock().unwrap().push(request.prompt.to_owned());
        assert_eq!(request.purpose, CallPurpose::Step);
        let text = self.steps.get(request.step - 1).cloned().unwrap_or_default();
        Box::pin(async move {
            Ok(Completion {
                text,
                reasoning: None,
                ending: Default::default(),
                usage: None,
                past_stop: None,
            })
        })
    }

    fn sample<'a>(
        &'a self,
        request: SampleRequest<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Samples, LlmError>> {
        self.prompts.lock().unwrap().push(request.prompt.to_owned());
        let texts = self.samples.lock().unwrap().remove(0);
        Box::pin(async move {
            Ok(Samples {
                texts,
                reasoning: Vec::new(),
                endings: Vec::new(),
                usage: None,
            })
        })
    }

    fn model(&self) -> &str {
        "scripted"
    }
}

/// Observations by action: Search answers with a sentence naming what was searched.
struct Pages;

impl Environment for Pages {
    fn observe<'a>(
        &'a mut self,
        _step: usize,
        action: &'a Result<Action, ActionError>,
        written: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<String, EnvironmentError>> {
        let observation = match action {
            Ok(Action::Search(entity)) => format!("{entity} was started in 1844."),
            _ => format!("Invalid action: {written}"),
        };
        Box::pin(async move { Ok(observation) })
    }
}

fn solver(method: Method, profile: Profile, task: Task, max_steps: usize) -> Solver {
    let config = MethodConfig {
        method,
        samples: 5,
        sample_temperature: 0.7,
        sc_stop: None,
    };
    Solver::new(
        &config,
        profile,
        &Examples::Bundled(task),
        &Toolbox::default(),
        &PromptOptions::default(),
        max_steps,
    )
    .unwrap()
}

async fn solve(solver: &Solver, model: &ScriptedModel, question: &str) -> (Run, Vec<String>) {
    let mut events = Vec::new();
    let episode = solver
        .solve(model, question, &mut Pages, &mut |event| {
            events.push(format!("{event:?}"))
        })
        .await;
    (episode.run, events)
}

/// [`solve`] the question with `method` under the default profile, HotpotQA's examples and at
/// most `max_steps` steps.
async fn solve_default(method: Method, max_steps: usize, model: &ScriptedModel) -> (Run, Vec<String>) {
    solve(
        &solver(method, Profile::Default, Task::HotpotQa, max_steps),
        model,
        QUESTION,
    )
    .await
}

/// The repository's prompt strings, copied verbatim into `fixtures/react/` (see its SOURCE.md).
fn repository_key(file: &str, key: &str) -> String {
    let text = std::fs::read_to_string(crate::fixture(&format!("react/{file}"))).unwrap();
    let prompts: Value = serde_json::from_str(&text).unwrap();
    prompts[key].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn paper_prompts_are_the_repository_keys_plus_the_question() {
    // (method, task, file, key, the label the model continues after)
    let cases = [
        (
            Method::Act,
            Task::HotpotQa,
            "prompts_naive.json",
            "webact_simple6",
            "Question",
            "Action 1:",
        ),
        (
            Method::Cot,
            Task::HotpotQa,
            "prompts_naive.json",
            "cotqa_simple6",
            "Question",
            "Thought:",
        ),
        (
            Method::Standard,
            Task::HotpotQa,
            "prompts_naive.json",
            "webqa_simple6",
            "Question",
            "Answer:",
        ),
        (
            Method::Act,
            Task::Fever,
            "fever.json",
            "webact_simple3",
            "Claim",
            "Action 1:",
        ),
        (
            Method::Cot,
            Task::Fever,
            "fever.json",
            "cotqa_simple3",
            "Claim",
            "Thought:",
        ),
        (
            Method::Standard,
            Task::Fever,
            "fever.json",
            "webqa_simple3",
            "Claim",
            "Answer:",
        ),
        (
            Method::CotSc,
            Task::Fever,
            "fever.json",
            "cotqa_simple3",
            "Claim",
            "Thought:",
        ),
    ];
    for (method, task, file, key, label, cue) in cases {
        let model = ScriptedModel::new(&["Finish[x]"], vec![vec![" x\nAnswer: x"; 5]]);
        let (run, _) = solve(&solver(method, Profile::Paper, task, 7), &model, QUESTION).await;
        let expected = format!("{}{label}: {QUESTION}\n{cue}", repository_key(file, key));
        assert_eq!(model.prompts()[0], expected, "{method} on {task:?}");
        assert_eq!(run.answer.as_deref(), Some("x"), "{method} on {task:?}");
        assert_eq!(run.format, "react-docstore.run.v2");
        assert_eq!(run.method, Some(method));
    }
}

#[tokio::test]
async fn default_prompts_clean_the_examples_and_keep_the_prefix_across_questions() {
    let model = ScriptedModel::new(&[], vec![vec![" 1844"], vec![" 1989"]]);
    let standard = solver(Method::Standard, Profile::Default, Task::Fever, 7);
    solve(&standard, &model, "First claim.").await;
    solve(&standard, &model, "Second claim.").await;
    let prompts = model.prompts();
    let prefix = prompts[0].strip_suffix("Claim: First claim.\nAnswer:").unwrap();
    assert_eq!(prompts[1], format!("{prefix}Claim: Second claim.\nAnswer:"));
    // The repository's `Answer:REFUTES` is spaced, its trailing spaces dropped.
    assert!(
        prefix.contains("\nAnswer: REFUTES\n") && !prefix.contains(" \n"),
        "{prefix}"
    );
    let act = solver(Method::Act, Profile::Default, Task::HotpotQa, 7);
    let model = ScriptedModel::new(&["Finish[x]"], vec![]);
    solve(&act, &model, QUESTION).await;
    let prompt = &model.prompts()[0];
    // The mojibake of `webact_simple6` repaired: `1844–1846`, `1898 – August`.
    assert!(
        prompt.contains("Magazine (1844-1846)") && prompt.contains("1898 – August"),
        "{prompt}"
    );
    assert!(
        prompt.starts_with("Solve a question answering task with interleaving Action, Observation steps.")
    );
    assert!(!prompt.contains("Thought"), "{prompt}");
}

#[tokio::test]
async fn act_runs_the_loop_without_thoughts() {
    let model = ScriptedModel::new(
        &[
            " Search[Arthur's Magazine]",
            " Finish[Arthur's Magazine]\nObservation 2: x",
        ],
        vec![],
    );
    let (run, events) = solve_default(Method::Act, 7, &model).await;
    assert_eq!(run.answer.as_deref(), Some("Arthur's Magazine"));
    assert_eq!(run.stopped, Some(Stopped::Finish));
    assert!(run.steps.iter().all(|step| step.thought.is_none()));
    assert_eq!(
        run.steps[0].observation.as_deref(),
        Some("Arthur's Magazine was started in 1844.")
    );
    assert!(model.prompts()[1].ends_with(&format!(
        "Question: {QUESTION}\nAction 1: Search[Arthur's Magazine]\nObservation 1: Arthur's Magazine was started in 1844.\nAction 2:"
    )));
    assert!(events[0].starts_with("Acted"), "{events:?}");
}

#[tokio::test]
async fn cot_reads_the_answer_line_and_a_completion_without_one_is_no_answer() {
    let model = ScriptedModel::new(
        &[],
        vec![
            vec![
                " Let's think step by step. It was 1844, so the answer is Arthur's Magazine.\nAnswer: Arthur's Magazine",
            ],
            vec![" I do not know."],
        ],
    );
    let cot = solver(Method::Cot, Profile::Default, Task::HotpotQa, 7);
    let (run, _) = solve(&cot, &model, QUESTION).await;
    assert_eq!(
        (run.answer.as_deref(), run.stopped),
        (Some("Arthur's Magazine"), Some(Stopped::Finish))
    );
    assert_eq!(run.samples.len(), 1);
    let (run, _) = solve(&cot, &model, QUESTION).await;
    assert_eq!(
        (run.answer, run.stopped, run.error),
        (None, Some(Stopped::NoAnswer), None)
    );
}

/// CoT completions answering each of `answers` (`None`: no answer line).
fn cot_samples(answers: &[Option<&str>]) -> Vec<String> {
    answers
        .iter()
        .map(|answer| match answer {
            Some(answer) => format!(" Let's think step by step.\nAnswer: {answer}"),
            None => " I cannot tell.".to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn cot_sc_votes_over_the_normalised_answers_and_backs_off_below_half() {
    let config = |method| MethodConfig {
        method,
        samples: 21,
        sample_temperature: 0.7,
        sc_stop: None,
    };
    let solver_21 = |method| {
        Solver::new(
            &config(method),
            Profile::Default,
            &Examples::Bundled(Task::HotpotQa),
            &Toolbox::default(),
            &PromptOptions::default(),
            7,
        )
        .unwrap()
    };
    // 10 of 21 for the winner: `cot-sc` answers it, `cot-sc-then-react` backs off to ReAct.
    let mut answers = vec![Some("The Beatles"); 10];
    answers.extend([Some("Queen"); 6]);
    answers.extend([None; 5]);
    answers[0] = Some("beatles.");
    let samples = cot_samples(&answers);
    let sampled = samples.iter().map(String::as_str).collect::<Vec<_>>();
    let model = ScriptedModel::new(
        &[" I know.\nAction 1: Finish[ReAct's answer]"],
        vec![sampled.clone(), sampled.clone()],
    );
    let (run, _) = solve(&solver_21(Method::CotSc), &model, QUESTION).await;
    let vote = run.vote.clone().unwrap();
    assert_eq!(
        (vote.answer.as_deref(), vote.votes, vote.samples, vote.answered),
        (Some("beatles."), 10, 21, 16)
    );
    assert_eq!(run.answer.as_deref(), Some("beatles."));
    let (run, events) = solve(&solver_21(Method::CotScThenReact), &model, QUESTION).await;
    assert_eq!(run.answer.as_deref(), Some("ReAct's answer"));
    assert_eq!(run.answered_by, Some(Method::React));
    assert_eq!(
        run.backoff.map(|backoff| backoff.reason),
        Some(BackoffReason::WeakMajority)
    );
    assert_eq!((run.samples.len(), run.steps.len()), (21, 1));
    assert!(
        events.iter().any(|event| event.starts_with("BackedOff")),
        "{events:?}"
    );
    // 11 of 21 keeps CoT-SC's answer: no ReAct call at all.
    answers[20] = Some("The Beatles");
    let samples = cot_samples(&answers);
    let model = ScriptedModel::new(&[], vec![samples.iter().map(String::as_str).collect()]);
    let (run, _) = solve(&solver_21(Method::CotScThenReact), &model, QUESTION).await;
    assert_eq!(
        (run.answer.as_deref(), run.answered_by, run.backoff),
        (Some("beatles."), Some(Method::CotSc), None)
    );
    assert!(run.steps.is_empty());
}

#[tokio::test]
async fn react_then_cot_sc_backs_off_on_the_budget_and_on_repetition_but_not_on_an_error() {
    let answers = cot_samples(&[Some("1844"); 5]);
    let samples: Vec<Vec<&str>> = vec![answers.iter().map(String::as_str).collect()];
    // The budget: two searches in two steps.
    let model = ScriptedModel::new(
        &[
            " I search.\nAction 1: Search[A]",
            " I search.\nAction 2: Search[B]",
        ],
        samples.clone(),
    );
    let (run, _) = solve_default(Method::ReactThenCotSc, 2, &model).await;
    assert_eq!(
        run.backoff.map(|backoff| backoff.reason),
        Some(BackoffReason::MaxSteps)
    );
    assert_eq!(
        (run.answer.as_deref(), run.answered_by, run.steps.len()),
        (Some("1844"), Some(Method::CotSc), 2)
    );
    assert_eq!(run.max_steps, Some(2));
    // Repetition: the same search four times stops the run; CoT-SC answers.
    let same = " I search.\nAction: Search[A]";
    let model = ScriptedModel::new(&[same, same, same, same, same], samples.clone());
    let (run, _) = solve_default(Method::ReactThenCotSc, 7, &model).await;
    assert_eq!(
        run.backoff.map(|backoff| backoff.reason),
        Some(BackoffReason::RepeatedAction)
    );
    assert_eq!(run.answer.as_deref(), Some("1844"));
    // ReAct that finishes is kept.
    let model = ScriptedModel::new(&[" Done.\nAction 1: Finish[1989]"], samples);
    let (run, _) = solve_default(Method::ReactThenCotSc, 7, &model).await;
    assert_eq!(
        (run.answer.as_deref(), run.answered_by, run.backoff),
        (Some("1989"), Some(Method::React), None)
    );
    assert!(run.samples.is_empty());
}

/// `Finish[]` is no answer: ReAct alone ends without one, and `react-then-cot-sc` backs off to
/// CoT-SC as when ReAct runs out of steps.
#[tokio::test]
async fn an_empty_finish_is_no_answer_and_backs_off() {
    let answers = cot_samples(&[Some("1844"); 5]);
    for finish in ["Finish[]", "Finish[   ]", "Finish[ \t ]"] {
        let step = format!(" I give up.\nAction 1: {finish}");
        let samples: Vec<Vec<&str>> = vec![answers.iter().map(String::as_str).collect()];
        let model = ScriptedModel::new(&[&step], samples.clone());
        let (run, _) = solve_default(Method::React, 7, &model).await;
        assert_eq!(
            (run.answer, run.stopped),
            (None, Some(Stopped::Finish)),
            "{finish}"
        );

        let model = ScriptedModel::new(&[&step], samples);
        let (run, events) = solve_default(Method::ReactThenCotSc, 7, &model).await;
        assert_eq!(
            run.backoff.map(|backoff| backoff.reason),
            Some(BackoffReason::NoAnswer),
            "{finish}: {events:?}"
        );
        assert_eq!(
            (
                run.answer.as_deref(),
                run.answered_by,
                run.steps.len(),
                run.samples.len()
            ),
            (Some("1844"), Some(Method::CotSc), 1, 5),
            "{finish}"
        );
    }
}

/// A model server that fails: the ReAct phase's error is the run's, and nothing backs off.
#[tokio::test]
async fn an_error_is_no_backoff() {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "bad key"}})))
        .mount(&server)
        .await;
    let output = crate::binary()
        .args([
            "ask",
            "--method",
            "react-then-cot-sc",
            "--docstore",
            "corpus:fixtures/docstore/corpus-3.jsonl",
        ])
        .args(crate::completions_model(&server.uri()))
        .args(["--json", QUESTION])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let run: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(run["stopped"], "error");
    assert!(
        run.get("backoff").is_none() && run.get("samples").is_none(),
        "{run}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

/// The OpenAI-compatible server of the CLI tests: `/completions`, answering each request with
/// `choices_for(n)` completions, every request's body kept.
struct SamplingServer {
    /// Honour `n` (vLLM, OpenAI) or send one choice whatever was asked (llama-cpp-python 0.3.36).
    honours_n: bool,
    answers: Vec<String>,
    next: Arc<Mutex<usize>>,
}

impl Respond for SamplingServer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let asked = body["n"].as_u64().unwrap_or(1) as usize;
        let n = if self.honours_n { asked } else { 1 };
        let mut next = self.next.lock().unwrap();
        let choices: Vec<Value> = (0..n)
            .map(|_| {
                let text = self.answers[*next % self.answers.len()].clone();
                *next += 1;
                json!({"text": text})
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": choices,
            "usage": {"prompt_tokens": 100, "completion_tokens": 10 * n},
        }))
    }
}

async fn sampling_server(honours_n: bool, answers: &[Option<&str>]) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(SamplingServer {
            honours_n,
            answers: cot_samples(answers),
            next: Arc::default(),
        })
        .mount(&server)
        .await;
    server
}

fn ask_cot_sc(server: &MockServer, record: &std::path::Path) -> std::process::Output {
    crate::binary()
        .args([
            "ask",
            "--method",
            "cot-sc",
            "--samples",
            "5",
            "--api",
            "completions",
        ])
        .args(["--model", "m", "--base-url", &server.uri(), "--record"])
        .arg(record)
        .arg(QUESTION)
        .output()
        .unwrap()
}

#[tokio::test]
async fn cot_sc_asks_for_n_in_one_request_and_for_the_rest_where_n_is_ignored() {
    let answers = [
        Some("Arthur's Magazine"),
        Some("First for Women"),
        Some("Arthur's Magazine"),
        None,
    ];
    let dir = tempfile::tempdir().unwrap();
    for honours_n in [true, false] {
        let server = sampling_server(honours_n, &answers).await;
        let record = dir.path().join(format!("honours-{honours_n}.json"));
        let output = ask_cot_sc(&server, &record);
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "Arthur's Magazine\n",
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let requests = crate::request_bodies(&server).await;
        let asked: Vec<u64> = requests
            .iter()
            .map(|body| body["n"].as_u64().unwrap_or(1))
            .collect();
        assert!(
            requests.iter().all(|body| body["temperature"] == json!(0.7)),
            "{requests:?}"
        );
        let run = Run::read(&record).unwrap();
        if honours_n {
            assert_eq!(asked, [5]);
        } else {
            // One asked for 5 and got 1; the other 4 asked concurrently, one each: 5 in all.
            assert_eq!(asked, [5, 1, 1, 1, 1]);
        }
        assert_eq!(run.samples.len(), 5);
        assert_eq!(run.usage.llm_calls, asked.len() as u64);
        let vote = run.vote.unwrap();
        assert_eq!((vote.votes, vote.answered, vote.samples), (3, 4, 5));
        // Replay: no model, no network, the same answer and the same requests.
        let replayed = crate::binary()
            .args(["replay", "--json"])
            .arg(&record)
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&replayed.stdout)
            .lines()
            .next()
            .unwrap()
            .to_owned();
        let replayed: Run = serde_json::from_str(&line).unwrap();
        assert_eq!(replayed.answer.as_deref(), Some("Arthur's Magazine"));
        assert_eq!(replayed.samples, run.samples);
        assert_eq!(replayed.usage.llm_calls, run.usage.llm_calls);
        assert_eq!(replayed.method, Some(Method::CotSc));
    }
}

/// A server that refuses `n` (400 naming it) whenever a request asks for more than one completion,
/// and answers every other request with one CoT completion.
struct RefusesN;

impl Respond for RefusesN {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        if body["n"].as_u64().is_some_and(|n| n > 1) {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "'n' is not supported with this model.",
                "type": "invalid_request_error",
                "param": "n",
                "code": "unsupported_parameter",
            }}));
        }
        ResponseTemplate::new(200).set_body_json(json!({"choices": [{"text": " Let's think.\nAnswer: yes"}]}))
    }
}

/// Eight questions ask for `n` at once and are refused one after the other: each is asked again
/// without it, not only the first refused, and no request made once the client knows carries it.
#[tokio::test]
async fn a_refused_n_is_asked_again_without_it_for_every_request_in_flight() {
    let server = crate::serve_posts(RefusesN).await;
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("q10.json");
    let records: Vec<Value> = (1..=10)
        .map(|idx| json!({"question": format!("Is question {idx} a yes?"), "answer": "yes"}))
        .collect();
    std::fs::write(&questions, serde_json::to_string(&records).unwrap()).unwrap();
    let results = dir.path().join("r.jsonl");
    let output = crate::binary()
        .arg("eval")
        .arg(&questions)
        .args(["--method", "cot-sc", "--samples", "21", "--concurrency", "8"])
        .args(crate::completions_model(&server.uri()))
        .arg("--out")
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&results).unwrap();
    let runs: Vec<Run> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(runs.len(), 10);
    for run in &runs {
        assert_eq!(
            (
                run.stopped,
                run.error.as_deref(),
                run.samples.len(),
                run.answer.as_deref()
            ),
            (Some(Stopped::Finish), None, 21, Some("yes")),
            "{}",
            run.question
        );
    }
    // In the order received: each question's request with `n` is its first, and at most the 8
    // questions in flight at once sent one. A request made after the client learned of a refusal
    // would be a question's second with `n`, or a later question's.
    let requests = crate::request_bodies(&server).await;
    let mut seen = std::collections::HashSet::new();
    let mut with_n = 0;
    for body in &requests {
        let prompt = body["prompt"].as_str().unwrap().to_owned();
        let first = seen.insert(prompt);
        if body.get("n").is_some() {
            with_n += 1;
            assert!(first, "a question asked for `n` after its first request: {body}");
        }
    }
    assert_eq!(seen.len(), 10);
    assert!((1..=8).contains(&with_n), "{with_n} requests carried `n`");
    // One completion a request once `n` is refused: the refused request's retry, then 20 more.
    assert_eq!(requests.len() - with_n, 10 * 21);
}

#[test]
fn refused_before_any_call() {
    for (args, message) in [
        (
            &["--method", "cot", "--api", "tools"][..],
            "`--api tools` calls the ReAct actions as functions",
        ),
        (
            &["--method", "standard", "--tools", "calculate"][..],
            "takes no actions, so no tools",
        ),
        (&["--method", "cot", "--samples", "3"][..], "samples nothing"),
        (&["--method", "cot-sc", "--samples", "0"][..], "at least 1"),
        (&["--method", "cot", "--max-steps", "3"][..], "takes no steps"),
        (
            &["--method", "tree-of-thoughts"][..],
            "unknown method `tree-of-thoughts`",
        ),
    ] {
        let output = crate::binary()
            .arg("ask")
            .args(args)
            .args(["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "q"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[tokio::test]
async fn eval_names_the_method_on_every_line_and_refuses_to_resume_another() {
    let server = sampling_server(true, &[Some("yes"), Some("yes"), Some("no")]).await;
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    let eval = |method: &str| {
        crate::binary()
            .args([
                "eval",
                "fixtures/hotpotqa/official.json",
                "--method",
                method,
                "--json",
            ])
            .args(crate::completions_model(&server.uri()))
            .arg("--out")
            .arg(&results)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    let output = eval("cot-sc");
    crate::assert_exit_0(&output);
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["method"], "cot-sc");
    // Every question's 21 samples: 14 `yes`, 7 `no`.
    let share = summary["vote_share"].as_f64().unwrap();
    assert!((share - 14.0 / 21.0).abs() < 1e-9, "{summary}");
    let text = std::fs::read_to_string(&results).unwrap();
    assert!(text.lines().count() >= 1);
    for line in text.lines() {
        let run: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            (run["method"].as_str(), run["format"].as_str()),
            (Some("cot-sc"), Some("react-docstore.run.v2"))
        );
    }
    let output = eval("react");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not one evaluation: they differ in method — ")
            && stderr.contains("line 1 has `cot-sc`, this command has `react` (--method sets it)")
            && stderr.contains("pass another `--out`, or the same --method as its runs"),
        "{stderr}"
    );
}

/// Each method's recorded evaluation of `fixtures/runs/methods/` (three distractor questions):
/// the answers it must replay to, written by hand from the script in `make.py`.
const RECORDED: [(Method, [Option<&str>; 3]); 7] = [
    (
        Method::Standard,
        [Some("GmbH"), Some("Pete Doherty"), Some("Missouri")],
    ),
    (
        Method::Cot,
        [
            Some("Gesellschaft mit beschränkter Haftung"),
            Some("Jonny Craig"),
            Some("Bath, Maine"),
        ],
    ),
    // Seven samples each: 5 of 7, 5 of 7, and a three-way tie of 2 that goes to the first sampled.
    (
        Method::CotSc,
        [
            Some("Gesellschaft mit beschränkter Haftung"),
            Some("Jonny Craig"),
            Some("Bath, Maine"),
        ],
    ),
    (
        Method::Act,
        [
            Some("Gesellschaft mit beschränkter Haftung"),
            Some("Pete Doherty"),
            Some("Bath, Maine"),
        ],
    ),
    // The second question runs out of its seven steps.
    (
        Method::React,
        [
            Some("Gesellschaft mit beschränkter Haftung"),
            None,
            Some("Bath, Maine"),
        ],
    ),
    // The third question's 2 of 7 backs off to ReAct.
    (
        Method::CotScThenReact,
        [
            Some("Gesellschaft mit beschränkter Haftung"),
            Some("Jonny Craig"),
            Some("Bath, Maine"),
        ],
    ),
    // The second question's budget backs off to CoT-SC.
    (
        Method::ReactThenCotSc,
        [
            Some("Gesellschaft mit beschränkter Haftung"),
            Some("Jonny Craig"),
            Some("Bath, Maine"),
        ],
    ),
];

#[test]
fn every_method_replays_its_recorded_evaluation_with_no_model() {
    for (method, answers) in RECORDED {
        let path = crate::fixture(&format!("runs/methods/{method}.results.jsonl"));
        let output = crate::binary()
            .args(["replay", "--json"])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("differ"), "{method}: {stderr}");
        let runs: Vec<Run> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| !line.starts_with("{\"summary\""))
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let replayed: Vec<Option<&str>> = runs.iter().map(|run| run.answer.as_deref()).collect();
        assert_eq!(replayed, answers, "{method}");
        assert!(runs.iter().all(|run| run.method == Some(method)), "{method}");
        let format = if method == Method::React {
            "react-docstore.run.v1"
        } else {
            "react-docstore.run.v2"
        };
        assert!(runs.iter().all(|run| run.format == format), "{method}");
        // The trace, as a person reads it.
        let trace = crate::binary().arg("replay").arg(&path).output().unwrap();
        crate::assert_snapshot!(
            format!("replay_trace_{method}"),
            String::from_utf8_lossy(&trace.stderr)
        );
    }
}

#[test]
fn the_report_shows_the_method_the_votes_and_both_phases() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("methods.html");
    crate::report::write_report(
        &[
            &crate::fixture("runs/methods/react.results.jsonl"),
            &crate::fixture("runs/methods/cot-sc-then-react.results.jsonl"),
        ],
        &page,
        &[],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<th>method</th><td>react</td><td>cot-sc-then-react</td>"),
        "the method row"
    );
    assert!(
        html.contains(r#""vote":["Bath, Maine",2,7]"#),
        "a CoT-SC question's vote"
    );
    assert!(
        html.contains(r#""backoff":["cot-sc","react","weak_majority"]"#),
        "the backoff"
    );
    assert!(html.contains(r#""samples_first":true"#) && html.contains("function samples("));
}

/// A model that sends one choice whatever `n` asks (as llama-cpp-python 0.3.36), and counts the
/// sampling requests in flight at once.
#[derive(Default)]
struct OneChoiceModel {
    in_flight: std::sync::atomic::AtomicUsize,
    most_in_flight: std::sync::atomic::AtomicUsize,
    requests: std::sync::atomic::AtomicUsize,
}

impl Llm for OneChoiceModel {
    fn complete<'a>(
        &'a self,
        _request: LlmRequest<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Completion, LlmError>> {
        unreachable!("CoT-SC only samples")
    }

    fn sample<'a>(
        &'a self,
        _request: SampleRequest<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Samples, LlmError>> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            self.requests.fetch_add(1, SeqCst);
            let now = self.in_flight.fetch_add(1, SeqCst) + 1;
            self.most_in_flight.fetch_max(now, SeqCst);
            // Give every other request that may start a chance to, before this one ends.
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
            self.in_flight.fetch_sub(1, SeqCst);
            Ok(Samples {
                texts: vec![" Let's think.\nAnswer: yes".to_owned()],
                reasoning: Vec::new(),
                endings: Vec::new(),
                usage: None,
            })
        })
    }

    fn model(&self) -> &str {
        "one-choice"
    }
}

#[tokio::test]
async fn samples_asked_one_by_one_stay_within_the_evaluations_concurrency() {
    use react_docstore::eval::{self, EvalConfig, EvalServices, Progress, Resume};
    use react_docstore::record::questions::Contexts;
    use react_docstore::record::selection::Selection;
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(OneChoiceModel::default());
    let config = EvalConfig {
        questions: crate::fixture("hotpotqa/official.json"),
        selection: Selection::default(),
        contexts: Contexts::Unused,
        agent: react_docstore::solver::setup::AgentSetup {
            method: Method::CotSc,
            samples: Some(5),
            sample_temperature: Some(0.7),
            ..Default::default()
        },
        fewshot: Vec::new(),
        attempts: Default::default(),
        fewshot_from: None,
        concurrency: 2,
        results: dir.path().join("r.jsonl"),
        resume: Resume::SkipDone,
        progress: Progress::Hidden,
        log: crate::Captured::default().log(),
    };
    let services = EvalServices {
        llm: model.clone(),
        docstore: Arc::new(react_docstore::docstore::DistractorSource::new(Profile::Default)),
        toolbox: Toolbox::default(),
    };
    let summary = eval::evaluate(&config, &services, std::future::pending())
        .await
        .unwrap();
    use std::sync::atomic::Ordering::SeqCst;
    // Three questions, five samples each, one a request: 15 requests, never more than 2 at once
    // (each question alone would ask its last 4 together).
    assert_eq!(summary.done, 3);
    assert_eq!(model.requests.load(SeqCst), 15);
    assert_eq!(model.most_in_flight.load(SeqCst), 2);
    let text = std::fs::read_to_string(dir.path().join("r.jsonl")).unwrap();
    for line in text.lines() {
        let run: Run = serde_json::from_str(line).unwrap();
        let requests: Vec<usize> = run.samples.iter().map(|sample| sample.request).collect();
        assert_eq!(requests, [1, 2, 3, 4, 5]);
        assert_eq!(run.usage.llm_calls, 5);
    }
}

#[test]
fn a_run_of_a_method_this_build_does_not_know_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.json");
    let line = std::fs::read_to_string(crate::fixture("runs/methods/cot-sc.results.jsonl")).unwrap();
    let first = line
        .lines()
        .next()
        .unwrap()
        .replace(r#""method":"cot-sc""#, r#""method":"tree-of-thoughts""#);
    std::fs::write(&path, first).unwrap();
    let output = crate::binary().arg("replay").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("future.json") && stderr.contains("unknown method `tree-of-thoughts`"),
        "{stderr}"
    );
}

#[test]
fn fewshot_files_are_taken_in_their_methods_format() {
    use react_docstore::agent::fewshot::Fewshot;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        Fewshot::from_file(&path).unwrap()
    };
    let react = write(
        "react.txt",
        "Question: 2+2?\nThought 1: I add.\nAction 1: Finish[4]\n",
    );
    let cot = write(
        "cot.txt",
        "Question: 2+2?\nThought: Let's think step by step. 4.\nAnswer: 4\n",
    );
    let setup = |method, files: Vec<Fewshot>| {
        let config = MethodConfig {
            method,
            ..MethodConfig::default()
        };
        Solver::new(
            &config,
            Profile::Paper,
            &Examples::Files(files),
            &Toolbox::default(),
            &PromptOptions::default(),
            7,
        )
    };
    // A ReAct file serves Act without its thoughts.
    let act = setup(Method::Act, vec![react.clone()]).unwrap();
    assert_eq!(
        act.loop_prompt().unwrap().text(),
        "Question: 2+2?\nAction 1: Finish[4]\n"
    );
    // A CoT file is no Act file: the error names the file and both formats.
    let error = setup(Method::Act, vec![cot.clone()]).unwrap_err().to_string();
    assert!(
        error.contains("cot.txt") && error.contains("CoT (") && error.contains("Act ("),
        "{error}"
    );
    // A backoff takes one file per phase, in either order.
    let backoff = setup(Method::CotScThenReact, vec![cot.clone(), react.clone()]).unwrap();
    assert!(
        backoff
            .loop_prompt()
            .unwrap()
            .text()
            .ends_with("Action 1: Finish[4]\n")
    );
    assert!(backoff.answer_prompt().unwrap().text().ends_with("Answer: 4\n"));
    let error = setup(Method::ReactThenCotSc, vec![react])
        .unwrap_err()
        .to_string();
    assert!(error.contains("give one `--fewshot` file for each"), "{error}");
}
