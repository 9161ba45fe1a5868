//! `ask` and `chat` end to end, offline: a mock OpenAI-compatible server as the model and an
//! in-test docstore serving fixed observations; `--record` then `replay`; the CLI's output.

use futures::future::BoxFuture;
use react_docstore::agent::prompt::PromptOptions;
use react_docstore::agent::trace::TracePrinter;
use react_docstore::apps::ask::{self, AgentConfig, AskConfig, AskOutcome, AskOutput};
use react_docstore::apps::chat::{self, ChatConfig, ChatOutput};
use react_docstore::apps::replay::replay_run;
use react_docstore::base::input::Interaction;
use react_docstore::base::profile::Profile;
use react_docstore::docstore::{ContextParagraph, Docstore, DocstoreError, DocstoreSource};
use react_docstore::llm::openai::Api;
use react_docstore::record::run::Run;
use react_docstore::record::run::Stopped;
use react_docstore::tools::Toolbox;
use serde_json::Value;

use crate::Captured;
use crate::llm::{Sequence, client, model_server};

/// Serves one fixed page for every Search and one sentence for every Lookup.
struct FixedPages;

struct FixedExplorer;

impl DocstoreSource for FixedPages {
    fn open(&self, _context: &[ContextParagraph]) -> Box<dyn Docstore> {
        Box::new(FixedExplorer)
    }
}

impl Docstore for FixedExplorer {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        let observation = match entity {
            "Colorado orogeny" => {
                "The Colorado orogeny was an episode of mountain building (an orogeny) in Colorado and surrounding areas."
            }
            "High Plains" => {
                "The High Plains are a subregion of the Great Plains. From east to west, the High Plains rise in elevation from around 1,800 to 7,000 ft (550 to 2,130 m)."
            }
            other => {
                return Box::pin(async move { Ok(format!("Could not find {other}. No similar pages.")) });
            }
        };
        Box::pin(async move { Ok(observation.to_owned()) })
    }

    fn lookup(&mut self, _keyword: &str) -> String {
        "(Result 1 / 1) The eastern sector extends into the High Plains and is called the Central Plains orogeny.".to_owned()
    }
}

fn agent_config(today: Option<&str>) -> AgentConfig {
    AgentConfig {
        setup: react_docstore::solver::setup::AgentSetup::default(),
        examples: react_docstore::solver::Examples::Bundled(react_docstore::base::task::Task::HotpotQa),
        prompt_options: PromptOptions {
            today: today.map(str::to_owned),
        },
    }
}

/// `ask` against the fixed pages with no tools: its result and what it printed on stdout.
async fn ask_with(
    config: &AskConfig,
    llm: &dyn react_docstore::llm::Llm,
    trace: &mut TracePrinter,
) -> (Result<Run, ask::AskError>, String) {
    let mut stdout = Vec::new();
    let result = ask::ask(config, llm, &FixedPages, &Toolbox::default(), &mut stdout, trace).await;
    (result, String::from_utf8(stdout).unwrap())
}

/// `chat` against the fixed pages with no tools, reading `input`: its summary and its stdout.
async fn chat_with(
    config: &ChatConfig,
    llm: &dyn react_docstore::llm::Llm,
    mut input: &[u8],
    trace: &mut TracePrinter,
) -> (chat::ChatSummary, String) {
    let mut stdout = Vec::new();
    let summary = chat::chat(
        config,
        llm,
        &FixedPages,
        &Toolbox::default(),
        &mut input,
        &mut stdout,
        trace,
    )
    .await
    .unwrap();
    (summary, String::from_utf8(stdout).unwrap())
}

const QUESTION: &str =
    "What is the elevation range for the area that the eastern sector of the Colorado orogeny extends into?";

/// What the model writes, step by step: the ReAct paper's first example.
const COMPLETIONS: [&str; 4] = [
    "Thought 1: I need to search Colorado orogeny, find the area that the eastern sector of the Colorado orogeny extends into, then find the elevation range of the area.\nAction 1: Search[Colorado orogeny]",
    " It does not mention the eastern sector. So I need to look up eastern sector.\nAction 2: Lookup[eastern sector]",
    " The eastern sector of Colorado orogeny extends into the High Plains. So I need to search High Plains and find its elevation range.\nAction 3: Search[High Plains]\nObservation 3: (hallucinated, cut away)",
    " High Plains rise in elevation from around 1,800 to 7,000 ft, so the answer is 1,800 to 7,000 ft.\nAction 4: Finish[1,800 to 7,000 ft]",
];

#[tokio::test]
async fn ask_reaches_finish_records_and_replays_identically() {
    let server = model_server("chat/completions", Sequence::chat(&COMPLETIONS)).await;
    let llm = client(&server, Api::Chat);
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("run.json");
    let config = AskConfig {
        question: QUESTION.to_owned(),
        agent: agent_config(None),
        output: AskOutput::Answer,
        record: Some(record.clone()),
        fewshot_from: None,
    };
    let trace = Captured::default();
    let (run, stdout) = ask_with(&config, &llm, &mut trace.printer()).await;
    let run = run.unwrap();

    assert_eq!(stdout, "1,800 to 7,000 ft\n");
    assert_eq!(run.stopped, Some(Stopped::Finish));
    assert_eq!(AskOutcome::of(&run), AskOutcome::Answered);
    assert_eq!(run.model.as_deref(), Some("gpt-4"));
    assert_eq!(
        (
            run.usage.llm_calls,
            run.usage.prompt_tokens,
            run.usage.completion_tokens
        ),
        (4, 4 * 229, 4 * 35),
        "usage read from the recorded bodies"
    );
    crate::assert_snapshot!("ask_trace", trace.text());

    // The prompt the model saw at step 2 carries step 1, and the stop sequence of step 2.
    let requests = server.received_requests().await.unwrap();
    let second: Value = requests[1].body_json().unwrap();
    let user = second["messages"][1]["content"].as_str().unwrap();
    assert!(user.ends_with(&format!(
        "Question: {QUESTION}\nThought 1: I need to search Colorado orogeny, find the area that the eastern sector of the Colorado orogeny extends into, then find the elevation range of the area.\nAction 1: Search[Colorado orogeny]\nObservation 1: The Colorado orogeny was an episode of mountain building (an orogeny) in Colorado and surrounding areas.\nThought 2:"
    )));
    assert_eq!(second["stop"], serde_json::json!(["\nObservation 2:"]));

    let recorded = Run::read(&record).unwrap();
    assert_eq!(recorded, run);
    let replayed = replay_run(&recorded, None, None, &|_, _| None, &mut TracePrinter::silent()).await;
    assert_eq!(replayed.run.answer, run.answer);
    assert_eq!(replayed.run.steps, run.steps);
    assert_eq!(replayed.run.stopped, run.stopped);
}

#[tokio::test]
async fn ask_json_prints_the_run_and_a_failing_model_ends_it_with_the_error() {
    let server = model_server(
        "chat/completions",
        wiremock::ResponseTemplate::new(500)
            .set_body_json(serde_json::json!({"error": {"message": "The server had an error while processing your request. Sorry about that!"}})),
    )
    .await;
    let llm = client(&server, Api::Chat);
    let config = AskConfig {
        question: QUESTION.to_owned(),
        agent: agent_config(None),
        output: AskOutput::Run,
        record: None,
        fewshot_from: None,
    };
    let (run, stdout) = ask_with(&config, &llm, &mut TracePrinter::silent()).await;
    let run = run.unwrap();
    assert_eq!(AskOutcome::of(&run), AskOutcome::Failed);
    assert_eq!(AskOutcome::of(&run).exit_code(), 2);
    let printed: Run = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed, run);
    let error = run.error.unwrap().replace(&server.uri(), "[SERVER]");
    assert_eq!(
        error,
        "the model server at `[SERVER]/v1/chat/completions` answered 500 Internal Server Error after 3 attempts: The server had an error while processing your request. Sorry about that!"
    );
}

#[tokio::test]
async fn chat_rewrites_the_follow_up_with_the_history() {
    let server = model_server(
        "chat/completions",
        Sequence::chat(&[
            "Thought 1: The current president of Poland is Andrzej Duda.\nAction 1: Finish[Andrzej Duda]",
            " Who is the wife of Andrzej Duda, the current president of Poland?",
            "Thought 1: I need to search Andrzej Duda and find his wife.\nAction 1: Search[Andrzej Duda]",
            " The page does not say; his wife is Agata Kornhauser-Duda.\nAction 2: Finish[Agata Kornhauser-Duda]",
        ]),
    )
    .await;
    let llm = client(&server, Api::Chat);
    let config = ChatConfig {
        agent: agent_config(Some("2023-11-22")),
        interaction: Interaction::Piped,
        output: ChatOutput::Answer,
    };
    let input = "Name of the current president of Poland\n\nWhat is the name of the wife of the president of Poland?\n";
    let trace = Captured::default();
    let (summary, stdout) = chat_with(&config, &llm, input.as_bytes(), &mut trace.printer()).await;

    assert_eq!(stdout, "Andrzej Duda\nAgata Kornhauser-Duda\n");
    assert_eq!(summary.n_questions, 2);
    assert_eq!(summary.exit_code(), 0);
    assert_eq!(
        summary.conversation.turns[1].question,
        "Who is the wife of Andrzej Duda, the current president of Poland?"
    );
    crate::assert_snapshot!("chat_trace", trace.text());

    let requests = server.received_requests().await.unwrap();
    let first: Value = requests[0].body_json().unwrap();
    assert!(
        first["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("finishes the task.\nToday is 2023-11-22.\nHere are some examples.\n")
    );
    let rewrite: Value = requests[1].body_json().unwrap();
    crate::assert_snapshot!(
        "chat_rewrite_prompt",
        rewrite["messages"][1]["content"].as_str().unwrap()
    );
    assert_eq!(rewrite["stop"], serde_json::json!(["\n"]));
    let third: Value = requests[2].body_json().unwrap();
    assert!(third["messages"][1]["content"].as_str().unwrap().ends_with(
        "Question: Who is the wife of Andrzej Duda, the current president of Poland?\nThought 1:"
    ));
}

/// A server error the client gives up on after its three attempts.
fn failing_attempts() -> [wiremock::ResponseTemplate; 3] {
    std::array::from_fn(|_| {
        wiremock::ResponseTemplate::new(500)
            .set_body_json(serde_json::json!({"error": {"message": "the server is overloaded"}}))
    })
}

fn chat_200(content: &str) -> wiremock::ResponseTemplate {
    wiremock::ResponseTemplate::new(200).set_body_json(crate::llm::chat_body(content))
}

/// Six input lines: answered; blank; not UTF-8; the rewrite fails; the run fails; answered.
const CHAT_INPUT: &[u8] = b"Name of the current president of Poland\n  \nWho \xff\xfe was it?\n\
Who was president before him?\nAnd his wife?\nWhat is the name of his wife?\n";

/// What the model answers to `CHAT_INPUT`, call by call.
fn chat_script() -> Sequence {
    let mut responses = vec![chat_200(
        "Thought 1: The current president of Poland is Andrzej Duda.\nAction 1: Finish[Andrzej Duda]",
    )];
    responses.extend(failing_attempts()); // rewriting line 4
    responses.push(chat_200(" Who is the wife of Andrzej Duda?")); // rewriting line 5
    responses.extend(failing_attempts()); // its run
    responses.push(chat_200(" What is the name of the wife of Andrzej Duda?")); // rewriting line 6
    responses.push(chat_200(
        "Thought 1: Andrzej Duda's wife is Agata Kornhauser-Duda.\nAction 1: Finish[Agata Kornhauser-Duda]",
    ));
    Sequence::new(responses)
}

async fn chat_piped(output: ChatOutput) -> (String, String, chat::ChatSummary) {
    let server = model_server("chat/completions", chat_script()).await;
    let llm = client(&server, Api::Chat);
    let config = ChatConfig {
        agent: agent_config(Some("2023-11-22")),
        interaction: Interaction::Piped,
        output,
    };
    let trace = Captured::default();
    let (summary, stdout) = chat_with(&config, &llm, CHAT_INPUT, &mut trace.printer()).await;
    assert_eq!(server.received_requests().await.unwrap().len(), 10);
    (stdout, trace.text(), summary)
}

#[tokio::test]
async fn chat_prints_one_line_per_question_and_carries_on_after_failures() {
    let (stdout, trace, summary) = chat_piped(ChatOutput::Answer).await;
    assert_eq!(stdout, "Andrzej Duda\n\n\n\nAgata Kornhauser-Duda\n");
    assert_eq!((summary.n_questions, summary.n_failed), (5, 3));
    assert_eq!(summary.exit_code(), 0);
    assert!(trace.contains("-- line 2 is blank: skipped\n"), "{trace}");
    assert!(
        trace.contains("-- line 3 is not valid UTF-8: skipped\n"),
        "{trace}"
    );
    assert!(
        trace.contains("-- cannot rewrite the question: the model server at"),
        "{trace}"
    );
    assert!(trace.contains("the server is overloaded"), "{trace}");
}

#[tokio::test]
async fn chat_json_prints_one_run_per_question_with_the_rewrite_in_its_usage() {
    let (stdout, _, _) = chat_piped(ChatOutput::Run).await;
    let runs: Vec<Run> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(runs.len(), 5, "{stdout}");
    let answers: Vec<Option<&str>> = runs.iter().map(|run| run.answer.as_deref()).collect();
    assert_eq!(
        answers,
        [
            Some("Andrzej Duda"),
            None,
            None,
            None,
            Some("Agata Kornhauser-Duda")
        ]
    );
    assert_eq!(runs[1].stopped, Some(Stopped::Error));
    assert_eq!(
        runs[1].error.as_deref(),
        Some("line 3 is not valid UTF-8: skipped")
    );
    assert_eq!(runs[1].question, "Who \u{fffd}\u{fffd} was it?");
    assert!(
        runs[2]
            .error
            .as_deref()
            .unwrap()
            .starts_with("cannot rewrite the question: "),
        "{:?}",
        runs[2].error
    );
    let usage = |run: &Run| {
        (
            run.usage.llm_calls,
            run.usage.prompt_tokens,
            run.usage.completion_tokens,
        )
    };
    assert_eq!(usage(&runs[0]), (1, 229, 35));
    assert_eq!(usage(&runs[2]), (0, 0, 0), "a call that failed is not counted");
    assert_eq!(runs[3].stopped, Some(Stopped::Error));
    assert_eq!(usage(&runs[3]), (1, 229, 35), "the rewrite");
    assert_eq!(runs[4].question, "What is the name of the wife of Andrzej Duda?");
    assert_eq!(usage(&runs[4]), (2, 2 * 229, 2 * 35), "the rewrite and the step");
}

#[tokio::test]
async fn chat_on_a_terminal_says_how_to_leave_and_exit_leaves() {
    let server = model_server("chat/completions", Sequence::chat(&["unused"])).await;
    let llm = client(&server, Api::Chat);
    let config = ChatConfig {
        agent: agent_config(None),
        interaction: Interaction::Terminal,
        output: ChatOutput::Answer,
    };
    let trace = Captured::default();
    let input = "exit\nName of the current president of Poland\n";
    let (summary, stdout) = chat_with(&config, &llm, input.as_bytes(), &mut trace.printer()).await;
    assert_eq!(
        trace.text(),
        "-- Ctrl-D (end of input) or `exit` ends the session.\n> "
    );
    assert!(stdout.is_empty());
    assert_eq!(summary.n_questions, 0);
    assert!(server.received_requests().await.unwrap().is_empty());
}

/// Piped input leaves on `exit` as a terminal does (`explore` too: one reader, `input::InputLines`).
#[tokio::test]
async fn chat_on_piped_input_leaves_on_exit_too() {
    let server = model_server(
        "chat/completions",
        Sequence::chat(&[
            "Thought 1: The current president of Poland is Andrzej Duda.\nAction 1: Finish[Andrzej Duda]",
        ]),
    )
    .await;
    let llm = client(&server, Api::Chat);
    let config = ChatConfig {
        agent: agent_config(None),
        interaction: Interaction::Piped,
        output: ChatOutput::Answer,
    };
    let input = "Name of the current president of Poland\nexit\nWho is his wife?\n";
    let trace = Captured::default();
    let (summary, stdout) = chat_with(&config, &llm, input.as_bytes(), &mut trace.printer()).await;
    assert_eq!(stdout, "Andrzej Duda\n");
    assert_eq!(summary.n_questions, 1);
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

/// `ask --record` into a directory that does not exist: refused before the model is paid.
#[tokio::test]
async fn ask_checks_the_record_path_before_calling_the_model() {
    let server = model_server("chat/completions", Sequence::chat(&COMPLETIONS)).await;
    let llm = client(&server, Api::Chat);
    let dir = tempfile::tempdir().unwrap();
    let config = AskConfig {
        question: QUESTION.to_owned(),
        agent: agent_config(None),
        output: AskOutput::Answer,
        record: Some(dir.path().join("missing/run.json")),
        fewshot_from: None,
    };
    let (result, stdout) = ask_with(&config, &llm, &mut TracePrinter::silent()).await;
    let error = result.unwrap_err();
    assert!(
        error.to_string().starts_with("cannot write run file `"),
        "{error}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
    assert!(stdout.is_empty());
}

/// A model that answers at once and, while it does, removes the directory the run file goes to.
struct RemovesRecordDirectory {
    dir: std::path::PathBuf,
}

impl react_docstore::llm::Llm for RemovesRecordDirectory {
    fn complete<'a>(
        &'a self,
        _request: react_docstore::llm::LlmRequest<'a>,
    ) -> BoxFuture<'a, Result<react_docstore::llm::Completion, react_docstore::llm::LlmError>> {
        std::fs::remove_dir_all(&self.dir).unwrap();
        Box::pin(async {
            Ok(react_docstore::llm::Completion {
                text: "Thought 1: It is 1,800 to 7,000 ft.\nAction 1: Finish[1,800 to 7,000 ft]".to_owned(),
                reasoning: None,
                ending: Default::default(),
                usage: None,
                past_stop: None,
            })
        })
    }

    fn model(&self) -> &str {
        "scripted"
    }
}

/// When the run file still cannot be written at the end, the answer paid for is printed first.
#[tokio::test]
async fn ask_prints_the_answer_before_a_record_that_fails_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let record_dir = dir.path().join("runs");
    std::fs::create_dir(&record_dir).unwrap();
    let llm = RemovesRecordDirectory {
        dir: record_dir.clone(),
    };
    for (output, expected) in [
        (AskOutput::Answer, "1,800 to 7,000 ft\n"),
        (AskOutput::Run, "\"answer\": \"1,800 to 7,000 ft\""),
    ] {
        std::fs::create_dir_all(&record_dir).unwrap();
        let config = AskConfig {
            question: QUESTION.to_owned(),
            agent: agent_config(None),
            output,
            record: Some(record_dir.join("run.json")),
            fewshot_from: None,
        };
        let (result, stdout) = ask_with(&config, &llm, &mut TracePrinter::silent()).await;
        let error = result.unwrap_err();
        assert!(matches!(error, ask::AskError::Record(_)), "{error}");
        assert!(stdout.contains(expected), "{output:?}: {stdout}");
    }
}

mod cli {
    //! The binary: stdout, `--json`, exit codes and the message without a model.

    use insta_cmd::assert_cmd_snapshot;
    use std::process::Command;

    use crate::llm::{Sequence, model_server};
    use crate::regex_escape;

    fn command(server_uri: &str, args: &[&str]) -> Command {
        subcommand("ask", server_uri, args)
    }

    fn subcommand(name: &str, server_uri: &str, args: &[&str]) -> Command {
        let mut command = crate::binary();
        command.arg(name).args(args);
        if !server_uri.is_empty() {
            command.args(["--base-url", &format!("{server_uri}/v1"), "--model", "gpt-4"]);
        }
        command
    }

    fn settings(server_uri: &str) -> insta::Settings {
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
        settings.set_prepend_module_to_snapshot(true);
        if !server_uri.is_empty() {
            settings.add_filter(&regex_escape(server_uri), "[SERVER]");
        }
        settings
    }

    const FINISH: &str = "Thought 1: Arthur's Magazine was started in 1844, First for Women in 1989.\nAction 1: Finish[Arthur's Magazine]";
    const QUESTION: &str = "Which magazine was started first Arthur's Magazine or First for Women?";

    #[tokio::test(flavor = "multi_thread")]
    async fn ask_prints_the_answer_and_the_run() {
        let server = model_server("chat/completions", Sequence::chat(&[FINISH])).await;
        let uri = server.uri();
        settings(&uri).bind(|| {
            assert_cmd_snapshot!("cli_ask_answer", command(&uri, &[QUESTION]));
            assert_cmd_snapshot!("cli_ask_json", command(&uri, &[QUESTION, "--json"]));
        });
        let requests = server.received_requests().await.unwrap();
        assert_eq!(requests.len(), 2);
        assert!(
            requests
                .iter()
                .all(|request| request.headers.get("authorization").is_none())
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_api_key_goes_to_the_server_and_nowhere_else() {
        let server = model_server("chat/completions", Sequence::chat(&[FINISH])).await;
        let dir = tempfile::tempdir().unwrap();
        let record = dir.path().join("run.json");
        let output = command(&server.uri(), &[QUESTION, "--json"])
            .arg("--record")
            .arg(&record)
            .env("OPENAI_API_KEY", "sk-cli-secret")
            .env("RUST_LOG", "trace")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let written = [
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
            std::fs::read_to_string(&record).unwrap(),
        ];
        for text in written {
            assert!(text.contains("Arthur's Magazine"), "{text}");
            assert!(!text.contains("sk-cli-secret"), "{text}");
        }
        let requests = server.received_requests().await.unwrap();
        let authorization = requests[0].headers.get("authorization").unwrap();
        assert_eq!(authorization.to_str().unwrap(), "Bearer sk-cli-secret");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn ask_without_a_model_says_how_to_configure_one() {
        settings("").bind(|| {
            assert_cmd_snapshot!("cli_ask_no_model", command("", &[QUESTION]));
        });
    }

    /// Inputs that cannot work are refused before any model call, with a message saying why.
    #[tokio::test(flavor = "multi_thread")]
    async fn what_cannot_work_is_refused_before_the_model_is_called() {
        let server = model_server("chat/completions", Sequence::chat(&[FINISH])).await;
        let uri = server.uri();
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing/run.json");
        let missing = missing.to_str().unwrap();
        let cases: [(&str, &[&str], &str); 9] = [
            ("ask", &[" \t "], "the question is empty"),
            ("ask", &[""], "the question is empty"),
            (
                "ask",
                &[QUESTION, "--max-steps", "0"],
                "the step budget must be at least 1",
            ),
            (
                "chat",
                &["--max-steps", "0"],
                "the step budget must be at least 1",
            ),
            (
                "ask",
                &[QUESTION, "--today", "2026-02-30"],
                "`2026-02-30` is not a date: expected YYYY-MM-DD",
            ),
            (
                "ask",
                &[QUESTION, "--today", "22/11/2026"],
                "`22/11/2026` is not a date",
            ),
            ("chat", &["--today", "tomorrow"], "`tomorrow` is not a date"),
            ("ask", &[QUESTION, "--record", missing], "cannot write run file"),
            (
                "ask",
                &[QUESTION, "--record", dir.path().to_str().unwrap()],
                "it is a directory",
            ),
        ];
        for (name, args, expected) in cases {
            let output = subcommand(name, &uri, args)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{name} {args:?}: {stderr}");
            assert!(stderr.contains(expected), "{name} {args:?}: {stderr}");
            assert!(output.stdout.is_empty(), "{name} {args:?}");
        }
        assert!(server.received_requests().await.unwrap().is_empty());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn chat_json_prints_a_run_per_line() {
        let server = model_server("chat/completions", Sequence::chat(&[FINISH])).await;
        let output = subcommand("chat", &server.uri(), &["--json"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(format!("{QUESTION}\n").as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "{stdout}");
        let run: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(run["format"], "react-docstore.run.v1");
        assert_eq!(run["answer"], "Arthur's Magazine");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn chat_shows_the_rewritten_follow_up() {
        let server = model_server(
            "chat/completions",
            Sequence::chat(&[
                "Thought 1: The current president of Poland is Andrzej Duda.\nAction 1: Finish[Andrzej Duda]",
                " Who is the wife of Andrzej Duda, the current president of Poland?",
                "Thought 1: Andrzej Duda's wife is Agata Kornhauser-Duda.\nAction 1: Finish[Agata Kornhauser-Duda]",
            ]),
        )
        .await;
        let uri = server.uri();
        let input = "Name of the current president of Poland\nWhat is the name of his wife?\n";
        settings(&uri).bind(|| {
            assert_cmd_snapshot!(
                "cli_chat",
                subcommand("chat", &uri, &["--today", "2023-11-22"]).pass_stdin(input)
            );
        });
    }
}

/// A write killed mid-way (a crash, `kill -9`) leaves its temporary file; the next write of the
/// same run file removes it, and leaves a live writer's alone.
#[test]
fn a_run_file_write_removes_what_a_killed_write_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dir.path().join(format!(".run.json.tmp{dead}-0"));
    let live = dir
        .path()
        .join(format!(".run.json.tmp{}-999", std::process::id()));
    std::fs::write(&stale, b"{\"half\": ").unwrap();
    std::fs::write(&live, b"{").unwrap();
    Run::new("q", Profile::Default).write(&path).unwrap();
    assert!(!stale.exists());
    assert!(live.exists());
    assert!(Run::read(&path).is_ok());
}
