//! Replays of recorded runs: the 512 Reflexion trajectories, LangChain's notebook run, and the
//! synthetic corner cases — answers, scores, parsed actions, scratchpads and the CLI.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use futures::future::BoxFuture;
use react_docstore::agent::Agent;
use react_docstore::agent::Episode;
use react_docstore::agent::action::{Action, ActionGrammar};
use react_docstore::agent::environment::Recording;
use react_docstore::agent::prompt::{Prompt, PromptOptions};
use react_docstore::agent::trace::TracePrinter;
use react_docstore::apps::replay::replay_run;
use react_docstore::base::metrics::normalize_answer;
use react_docstore::base::profile::Profile;
use react_docstore::llm::{CallPurpose, Completion, Llm, LlmError, LlmRequest, ReplayLlm};
use react_docstore::record::run::Run;
use react_docstore::record::run::Stopped;

use crate::fixture;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn replay(run: &Run) -> Episode {
    block_on(replay_run(
        run,
        None,
        None,
        &|_, _| None,
        &mut TracePrinter::silent(),
    ))
}

/// A recorded run (its JSON) without what a replay derives: each step's thought and action, the
/// answer, the stop, the scores and the counts of invalid actions and fallback calls. A replay of
/// it must rebuild them from the completions (or replies) alone, not copy them.
pub fn without_derived_fields(run: &serde_json::Value) -> serde_json::Value {
    let mut run = run.clone();
    let fields = run.as_object_mut().unwrap();
    for field in ["answer", "stopped", "em", "f1"] {
        fields.remove(field);
    }
    for count in ["invalid_actions", "fallback_calls"] {
        fields["usage"][count] = 0.into();
    }
    for step in fields["steps"].as_array_mut().unwrap() {
        let step = step.as_object_mut().unwrap();
        step.remove("thought");
        step.remove("action");
    }
    run
}

fn runs_in(dir: &str) -> Vec<(PathBuf, Run)> {
    let paths = react_docstore::record::files::recorded_paths(
        &[fixture(dir)],
        react_docstore::record::files::Wanted::Runs,
    )
    .unwrap();
    assert!(!paths.is_empty(), "no runs in {dir}");
    paths
        .into_iter()
        .map(|path| (path.clone(), Run::read(&path).unwrap()))
        .collect()
}

#[test]
fn every_trial_gives_back_its_logged_answers_and_score() {
    for trial in 1..=5 {
        let runs = runs_in(&format!("runs/reflexion/trial-{trial}"));
        let mut n_correct = 0;
        for (path, recorded) in &runs {
            let replayed = replay(recorded).run;
            assert_eq!(replayed.answer, recorded.answer, "answer of {}", path.display());
            // Reflexion's agent had no repeated-action stop, and a run file does not say which
            // policy recorded it: a recording that did not stop for repetition replays without the
            // stop (src/apps/replay.rs), so even the ten runs the stop would have cut end as recorded.
            assert_eq!(replayed.stopped, recorded.stopped, "stop of {}", path.display());
            assert_eq!(
                replayed.steps.len(),
                recorded.steps.len(),
                "steps of {}",
                path.display()
            );
            for (step, logged) in replayed.steps.iter().zip(&recorded.steps) {
                assert_eq!(
                    step.action,
                    logged.action,
                    "action {} of {}",
                    step.n,
                    path.display()
                );
                assert_eq!(
                    step.observation,
                    logged.observation,
                    "observation {} of {}",
                    step.n,
                    path.display()
                );
            }
            let status = path
                .file_stem()
                .unwrap()
                .to_str()
                .unwrap()
                .rsplit('-')
                .next()
                .unwrap();
            let em = replayed.em.unwrap();
            assert_eq!(
                em == 1,
                status == "correct",
                "EM of {} ({status})",
                path.display()
            );
            n_correct += usize::from(em);
        }
        assert_eq!(n_correct, 34, "correct answers in trial {trial}");
    }
}

/// The step at which a run repeats its action and observation for the fourth time in a row (the
/// `default` profile's repeated-action stop), counted from the recorded steps.
fn fourth_identical_step(run: &Run) -> Option<usize> {
    let mut in_a_row = 0;
    for (idx, step) in run.steps.iter().enumerate() {
        let repeats_last = idx > 0
            && step.observation.is_some()
            && (&step.action, &step.observation)
                == (&run.steps[idx - 1].action, &run.steps[idx - 1].observation);
        in_a_row = if repeats_last { in_a_row + 1 } else { 1 };
        if in_a_row == 4 {
            return Some(step.n);
        }
    }
    None
}

#[test]
fn without_its_recorded_stop_a_replay_decides_the_stop_itself() {
    let (mut n_cut, mut n_as_recorded) = (0, 0);
    for trial in 1..=5 {
        for (path, recorded) in runs_in(&format!("runs/reflexion/trial-{trial}")) {
            // The recording's outcome hidden: the replay follows the profile's own policy.
            let unstopped = Run {
                stopped: None,
                ..recorded.clone()
            };
            let replayed = replay(&unstopped).run;
            match fourth_identical_step(&recorded) {
                Some(step) => {
                    assert_eq!(
                        (replayed.steps.len(), replayed.stopped, replayed.answer),
                        (step, Some(Stopped::RepeatedAction), None),
                        "{}",
                        path.display()
                    );
                    n_cut += 1;
                }
                None => {
                    assert_eq!(
                        (replayed.steps.len(), replayed.stopped),
                        (recorded.steps.len(), recorded.stopped),
                        "{}",
                        path.display()
                    );
                    n_as_recorded += 1;
                }
            }
        }
    }
    // Questions 071 and 077 of each trial repeat themselves four times before the budget ends them.
    assert_eq!((n_cut, n_as_recorded), (10, 502));
}

/// Reflexion's `parse_action`: `^(\w+)\[(.+)\]$`.
fn reflexion_parse(text: &str) -> (String, String) {
    let open = text.find('[').unwrap();
    assert!(text.ends_with(']'), "{text}");
    (text[..open].to_owned(), text[open + 1..text.len() - 1].to_owned())
}

#[test]
fn every_logged_action_parses_to_the_action_executed() {
    let grammar = ActionGrammar::new(Profile::Default, []);
    let mut n_actions = 0;
    for (path, run) in runs_in("runs/reflexion/trial-1")
        .into_iter()
        .chain((2..=5).flat_map(|trial| runs_in(&format!("runs/reflexion/trial-{trial}"))))
    {
        for step in &run.steps {
            let written = step.action.as_deref().unwrap();
            let (name, argument) = reflexion_parse(written);
            let expected = match name.as_str() {
                "Search" => Action::Search(argument),
                "Lookup" => Action::Lookup(argument),
                "Finish" => Action::Finish(argument),
                other => panic!("{}: unexpected action {other}", path.display()),
            };
            assert_eq!(grammar.parse(written), Ok(expected.clone()), "{}", path.display());
            // And as the model wrote it, inside its completion.
            let completion = &step.completions[0];
            let split = grammar.split_completion(grammar.cut_completion(completion, step.n), step.n);
            assert_eq!(
                grammar.parse(&split.action.unwrap()),
                Ok(expected),
                "{}",
                path.display()
            );
            n_actions += 1;
        }
    }
    assert_eq!(n_actions, 1867);
}

fn describe(episode: &Episode) -> String {
    let run = &episode.run;
    format!(
        "{}--\nanswer: {:?}\nstopped: {}\nem: {:?} f1: {:?}\nusage: {:?}\n",
        episode.trajectory(),
        run.answer,
        run.stopped.map_or("none", Stopped::as_str),
        run.em,
        run.f1,
        run.usage
    )
}

#[test]
fn replayed_scratchpads() {
    let files = [
        "langchain/numbered",
        "langchain/unnumbered",
        "synthetic/fallback-call",
        "synthetic/hallucinated-observation",
        "synthetic/invalid-actions",
        "synthetic/repeated-action",
        "synthetic/paper-halted",
        "synthetic/paper-fallback",
        "synthetic/halted-by-budget",
        "synthetic/lookup-cursor",
        // Similar-titles misses.
        "reflexion/trial-1/001-correct",
        "reflexion/trial-1/000-incorrect",
        "reflexion/trial-1/085-incorrect",
        // Lookups, "No Results", a multi-line observation.
        "reflexion/trial-1/030-correct",
        "reflexion/trial-1/052-incorrect",
        "reflexion/trial-1/002-incorrect",
        // Halted by the six-step budget.
        "reflexion/trial-1/014-halted",
        "reflexion/trial-1/035-halted",
        "reflexion/trial-1/062-halted",
        "reflexion/trial-2/003-correct",
        "reflexion/trial-3/007-correct",
        "reflexion/trial-5/008-incorrect",
    ];
    for name in files {
        let run = Run::read(&fixture(&format!("runs/{name}.json"))).unwrap();
        let snapshot = name.replace('/', "__");
        crate::assert_snapshot!(snapshot, describe(&replay(&run)));
    }
}

/// Wraps a model and keeps every prompt it was sent.
struct PromptLog<'a> {
    inner: &'a dyn Llm,
    prompts: Mutex<Vec<(CallPurpose, String)>>,
}

impl Llm for PromptLog<'_> {
    fn complete<'a>(&'a self, request: LlmRequest<'a>) -> BoxFuture<'a, Result<Completion, LlmError>> {
        self.prompts
            .lock()
            .unwrap()
            .push((request.purpose, request.prompt.to_owned()));
        self.inner.complete(request)
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

#[test]
fn each_prompt_starts_with_the_previous_one() {
    for name in [
        "synthetic/fallback-call",
        "synthetic/invalid-actions",
        "reflexion/trial-1/030-correct",
    ] {
        let run = Run::read(&fixture(&format!("runs/{name}.json"))).unwrap();
        let recorded = ReplayLlm::new("replay", run.completions());
        let llm = PromptLog {
            inner: &recorded,
            prompts: Mutex::new(Vec::new()),
        };
        let grammar = ActionGrammar::new(run.profile, []);
        let prompt = Prompt::new(
            run.profile,
            &react_docstore::agent::fewshot::Fewshot::hotpotqa(),
            &Default::default(),
            &PromptOptions::default(),
        );
        let agent = Agent::new(&llm, &prompt, &grammar, 7);
        let mut environment = Recording::new(run.observations(), grammar.clone(), None);
        let episode = block_on(agent.run(&run.question, &mut environment, &mut |_| {}));
        assert_eq!(episode.run.answer, replay(&run).run.answer);
        assert!(episode.run.answer.is_some(), "{name}");
        let prompts = llm.prompts.into_inner().unwrap();
        assert_eq!(prompts.len() as u64, episode.run.usage.llm_calls);
        assert!(prompts[0].1.starts_with(prompt.text()), "{name}");
        for pair in prompts.windows(2) {
            assert!(
                pair[1].1.starts_with(&pair[0].1),
                "{name}: {:?} does not extend the previous prompt",
                pair[1]
            );
        }
        assert!(episode.scratchpad.text().starts_with(&prompts.last().unwrap().1));
    }
}

#[test]
fn a_run_file_round_trips_and_bad_files_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let run = replay(&Run::read(&fixture("runs/synthetic/fallback-call.json")).unwrap()).run;
    let path = dir.path().join("run.json");
    run.write(&path).unwrap();
    assert_eq!(Run::read(&path).unwrap(), run);

    let check = |name: &str, text: &str, expected: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let error = Run::read(&path).unwrap_err();
        let message =
            format!("{:#}", anyhow::Error::from(error)).replace(&dir.path().display().to_string(), "DIR");
        assert_eq!(message, expected);
    };
    check(
        "truncated.json",
        "{\"format\": \"react-docstore.run.v1\", \"question\": \"q\", \"steps\": [",
        "run file `DIR/truncated.json` is not a valid run (line 1, column 63): EOF while parsing a list at line 1 column 63",
    );
    check(
        "no-question.json",
        "{\"format\": \"react-docstore.run.v1\",\n \"steps\": []}",
        "run file `DIR/no-question.json` is not a valid run (line 2, column 13): missing field `question` at line 2 column 13",
    );
    check(
        "format.json",
        "{\"format\": \"react-docstore.run.v0\", \"question\": \"q\", \"steps\": []}",
        "run file `DIR/format.json`: field `format` is `react-docstore.run.v0`, expected `react-docstore.run.v1` or `react-docstore.run.v2`",
    );
    let unnumbered = dir.path().join("unnumbered.json");
    std::fs::write(
        &unnumbered,
        r#"{"question": "q", "steps": [{"completions": [" a\nAction 1: Finish[b]"]}]}"#,
    )
    .unwrap();
    assert_eq!(Run::read(&unnumbered).unwrap().steps[0].n, 1);
    check(
        "numbering.json",
        "{\"question\": \"q\", \"steps\": [{\"n\": 2, \"completions\": []}]}",
        "run file `DIR/numbering.json`: step 1 has `n` = 2, expected 1",
    );
    let missing = Run::read(Path::new("no/such/run.json")).unwrap_err();
    assert_eq!(missing.to_string(), "cannot read run file `no/such/run.json`");
}

#[test]
fn normalized_answers_of_the_langchain_run() {
    let run = Run::read(&fixture("runs/langchain/unnumbered.json")).unwrap();
    let replayed = replay(&run).run;
    assert_eq!(
        normalize_answer(replayed.answer.as_deref().unwrap()),
        "bill clinton"
    );
    assert_eq!((replayed.em, replayed.f1), (Some(1), Some(1.0)));
}

#[test]
fn cli_replays_a_run_as_text_and_json() {
    let command = |args: &[&str]| {
        let mut command = std::process::Command::new(insta_cmd::get_cargo_bin("react-docstore"));
        command
            .args(args)
            .env("NO_COLOR", "1")
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        command
    };
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    settings.bind(|| {
        let run = "fixtures/runs/synthetic/fallback-call.json";
        insta_cmd::assert_cmd_snapshot!("cli_replay_text", command(&["replay", run]));
        let both = ["replay", "--json", run, "fixtures/runs/langchain/numbered.json"];
        insta_cmd::assert_cmd_snapshot!("cli_replay_json", command(&both));
        insta_cmd::assert_cmd_snapshot!(
            "cli_replay_missing_file",
            command(&["replay", "no/such/run.json"])
        );
        let halted = [
            "replay",
            "--json",
            "fixtures/runs/synthetic/halted-by-budget.json",
        ];
        insta_cmd::assert_cmd_snapshot!("cli_replay_nothing_answered", command(&halted));
    });
}

#[test]
fn paper_profile_reproduces_the_notebooks_printed_trajectory() {
    let run = Run::read(&fixture("runs/react-paper/fever-3522.json")).unwrap();
    let printed = std::fs::read_to_string(fixture("runs/react-paper/fever-3522.printed.txt")).unwrap();
    let episode = replay(&run);
    // The notebook's `step_str` of each step; `print(step_str)` adds a newline after each.
    let step_strs: Vec<String> = episode
        .run
        .steps
        .iter()
        .map(|step| {
            let n = step.n;
            format!(
                "Thought {n}: {}\nAction {n}: {}\nObservation {n}: {}\n",
                step.thought.as_deref().unwrap(),
                step.action.as_deref().unwrap(),
                step.observation.as_deref().unwrap()
            )
        })
        .collect();
    let as_printed: String = step_strs.iter().map(|step| format!("{step}\n")).collect();
    assert_eq!(as_printed, printed);
    let question_line = format!("Claim: {}\n", run.question);
    assert_eq!(episode.trajectory(), question_line + &step_strs.concat());
    assert_eq!(episode.run.answer.as_deref(), Some(""));
    assert_eq!(episode.run.stopped, Some(Stopped::MaxSteps));
    assert_eq!(episode.run.usage.invalid_actions, 5);
}

#[test]
fn a_replay_that_ends_differently_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = Run::read(&fixture("runs/synthetic/halted-by-budget.json")).unwrap();
    // Recorded as halted after 2 steps, it replays under a budget of 3 to a Finish.
    run.stopped = Some(Stopped::MaxSteps);
    let path = dir.path().join("run.json");
    run.write(&path).unwrap();
    let config = react_docstore::apps::replay::ReplayConfig {
        paths: vec![path],
        output: react_docstore::apps::replay::Output::Json,
        profile: None,
        max_steps: Some(3),
        docstore: None,
        prices: None,
    };
    let mut stdout = Vec::new();
    let summary = block_on(react_docstore::apps::replay::replay(
        &config,
        &|_, _| None,
        &mut stdout,
        &mut TracePrinter::silent(),
    ))
    .unwrap();
    assert_eq!(
        (summary.n_runs, summary.n_changed, summary.exit_code()),
        (1, 1, 0)
    );
}

#[test]
fn replay_reads_a_run_file_once() {
    // A `.json` file of runs a line each, behind a named pipe: it is not one run, so it is read
    // as JSON Lines — from the bytes already read, since the pipe gives them once.
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs.json");
    let lines: String = ["synthetic/fallback-call.json", "langchain/numbered.json"]
        .iter()
        .map(|name| {
            let run: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(crate::fixture(&format!("runs/{name}"))).unwrap(),
            )
            .unwrap();
            format!("{run}\n")
        })
        .collect();
    let writer = crate::pipe_read_once(&runs, lines);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"));
    command.args(["replay", "--json"]).arg(&runs).env("NO_COLOR", "1");
    let (stdout, stderr, code) = crate::output_within_30s(&mut command, "a second read of the run file");
    writer.join().unwrap();
    assert_eq!(code, 0, "{stderr}");
    let sources: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap()
                .get("source")
                .cloned()
        })
        .collect();
    assert_eq!(
        sources,
        [1, 2].map(|line| serde_json::json!({"file": runs.to_str().unwrap(), "line": line}))
    );
}

/// `react-docstore ARGS` from the repository root: (exit code, stdout, stderr).
fn replay_cli(args: &[&str]) -> (i32, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(args)
        .env("NO_COLOR", "1")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn a_question_file_given_to_replay_is_named_as_one_and_eval_suggested() {
    for (file, what) in [
        ("fixtures/hotpotqa/official.jsonl", "a HotpotQA question file"),
        ("fixtures/hotpotqa/official.json", "a HotpotQA question file"),
        (
            "fixtures/docstore/hotpotqa-distractor-3.json",
            "a HotpotQA question file",
        ),
        ("fixtures/fever/paper_dev.jsonl", "a FEVER claim file"),
    ] {
        let (status, _, stderr) = replay_cli(&["replay", file]);
        assert_eq!(status, 2, "{file}: {stderr}");
        assert!(
            stderr.contains(&format!("`{file}` is {what}, not runs"))
                && stderr.contains(&format!("`eval {file}` runs its questions")),
            "{file}: {stderr}"
        );
    }
    // A run file that is broken is not called a question file.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    let text = std::fs::read_to_string(fixture("runs/langchain/numbered.json")).unwrap();
    std::fs::write(&broken, text.replace("\"steps\"", "\"steps\": 3, \"x\"")).unwrap();
    let (status, _, stderr) = replay_cli(&["replay", broken.to_str().unwrap()]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("is not a valid run"), "{stderr}");
    assert!(!stderr.contains("question file"), "{stderr}");
}

#[test]
fn replay_of_a_directory_names_the_files_that_are_not_runs_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    for (name, from) in [
        ("a-run.json", "runs/langchain/numbered.json"),
        ("b-questions.json", "hotpotqa/official.json"),
        ("c-run.json", "runs/synthetic/fallback-call.json"),
    ] {
        std::fs::copy(fixture(from), dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("d-notes.jsonl"), "not json\n").unwrap();
    let path = dir.path().to_str().unwrap();
    let (status, stdout, stderr) = replay_cli(&["replay", path]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        stderr.contains("-- skipped: `")
            && stderr.contains("b-questions.json` is a HotpotQA question file, not runs"),
        "{stderr}"
    );
    assert!(stderr.contains("d-notes.jsonl"), "{stderr}");
    let summary = stderr.lines().last().unwrap();
    assert!(
        summary.starts_with("-- 2 runs replayed") && summary.ends_with("; 2 files skipped (not runs)"),
        "{summary}"
    );
    let (status, stdout, _) = replay_cli(&["replay", "--json", path]);
    assert_eq!(status, 0);
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["summary"]["skipped_files"], 2, "{last}");
}

/// A writer that counts the writes that reach it (each one a system call on stderr).
#[derive(Clone, Default)]
struct CountedWrites(std::sync::Arc<Mutex<(usize, Vec<u8>)>>);

impl std::io::Write for CountedWrites {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut counted = self.0.lock().unwrap();
        counted.0 += 1;
        counted.1.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl CountedWrites {
    fn writes(&self) -> usize {
        self.0.lock().unwrap().0
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap().1).into_owned()
    }
}

#[test]
fn a_live_trace_writes_each_line_whole_and_a_replay_once_a_run() {
    use react_docstore::agent::trace::Color;
    // Live: each line in one write, as it comes.
    let out = CountedWrites::default();
    let mut trace = TracePrinter::new(Box::new(out.clone()), Color::Never);
    trace.header("Question:", "Who?");
    trace.note("a note");
    assert_eq!(
        (out.writes(), out.text()),
        (2, "Question: Who?\n-- a note\n".to_owned())
    );

    // A replay of 512 runs (some 7,000 lines): one write a run, and one for the summary.
    let out = CountedWrites::default();
    let mut trace = TracePrinter::new(Box::new(out.clone()), Color::Never)
        .flushed(react_docstore::agent::trace::Flush::EachRun);
    let config = react_docstore::apps::replay::ReplayConfig {
        paths: vec![fixture("runs/reflexion")],
        output: react_docstore::apps::replay::Output::Text,
        profile: None,
        max_steps: None,
        docstore: None,
        prices: None,
    };
    let mut stdout = Vec::new();
    let summary = block_on(react_docstore::apps::replay::replay(
        &config,
        &|_, _| None,
        &mut stdout,
        &mut trace,
    ))
    .unwrap();
    drop(trace);
    assert_eq!(summary.n_runs, 512);
    let text = out.text();
    assert!(text.lines().count() > 5000, "{}", text.lines().count());
    assert!(out.writes() <= summary.n_runs + 1, "{} writes", out.writes());
    assert!(
        text.ends_with(
            "-- 512 runs replayed, 464 answered; EM 0.3320 F1 0.4321 over 512 with gold answers\n"
        ),
        "{}",
        &text[text.len() - 200..]
    );

    // Where stdout goes elsewhere: a write when the buffer is full, the same text.
    let full = CountedWrites::default();
    let mut trace = TracePrinter::new(Box::new(full.clone()), Color::Never)
        .flushed(react_docstore::agent::trace::Flush::WhenFull);
    block_on(react_docstore::apps::replay::replay(
        &config,
        &|_, _| None,
        &mut Vec::new(),
        &mut trace,
    ))
    .unwrap();
    drop(trace);
    assert_eq!(full.text(), text);
    assert!(
        full.writes() <= text.len() / (64 * 1024) + 2,
        "{} writes",
        full.writes()
    );
}
