//! Extra tools: the calculator table, WebSearch against recorded SerpApi bodies, `--tool` commands,
//! and a replayed run that uses Calculate and WebSearch.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use react_docstore::agent::action::ActionGrammar;
use react_docstore::agent::environment::{Environment, Workbench};
use react_docstore::agent::fewshot::Fewshot;
use react_docstore::agent::prompt::{Prompt, PromptOptions};
use react_docstore::agent::trace::TracePrinter;
use react_docstore::apps::replay::replay_run;
use react_docstore::base::profile::Profile;
use react_docstore::base::secret::ApiKey;
use react_docstore::docstore::{Docstore, DocstoreError};
use react_docstore::record::run::Run;
use react_docstore::tools::Toolbox;
use react_docstore::tools::calculator::{self, MAX_EXPRESSION_CHARS};
use react_docstore::tools::websearch::MAX_BODY_BYTES;
use react_docstore::tools::{
    BuiltinTool, CommandTool, CommandToolConfig, ToolsConfig, websearch::Network, websearch::WebSearch,
    websearch::WebSearchConfig,
};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TEST_KEY: &str = "test-serpapi-key-0123456789";

#[test]
fn calculator_table() {
    let deep = format!("{}1{}", "(".repeat(70), ")".repeat(70));
    let long = format!("1{}", "+1".repeat(MAX_EXPRESSION_CHARS / 2));
    let inputs: Vec<&str> = vec![
        // Recorded model inputs (langchain-mini traces).
        "(75 F - 32) * 5/9",
        "((75-32) * 5/9)",
        "floor(year/5)",
        "floor(2023/5)",
        "sqrt(51)",
        "(cos(2)+3!)*(-sqrt(2)*3)",
        "asin(0.5)^3",
        // The issue's examples.
        "25^(1/2)",
        "2023/5",
        "ceil(404.6)",
        // Numbers.
        "42",
        "-0",
        "3.25",
        ".5",
        "7.",
        "1e3",
        "2.5E-3",
        "6.02e23",
        "1e-7",
        "0.1 + 0.2",
        "1/3",
        "2^100",
        // Precedence and associativity.
        "2 + 3 * 4",
        "(2 + 3) * 4",
        "10 - 4 - 3",
        "100 / 10 / 5",
        "2^3^2",
        "(2^3)^2",
        "-2^2",
        "(-2)^2",
        "2^-1",
        "--3",
        "+4",
        "3 - -2",
        "7 % 3",
        "-7 % 3",
        "7.5 % 2",
        "2 * 3!",
        "3!!",
        "0!",
        // Functions and constants.
        "sqrt(16)",
        "abs(-3.5)",
        "ceil(-1.5)",
        "floor(-1.5)",
        "round(2.5)",
        "round(-2.5)",
        "round(3.14159, 2)",
        "exp(1)",
        "ln(e)",
        "log(100)",
        "log(8, 2)",
        "log10(1000)",
        "sin(pi/2)",
        "cos(0)",
        "tan(pi/4)",
        "asin(1)",
        "acos(1)",
        "atan(1) * 4",
        "min(3, 1, 2)",
        "max(3, 1, 2)",
        "PI",
        "e",
        "Sqrt(9)",
        // Model spellings.
        "2**10",
        "6 × 7",
        "84 ÷ 2",
        "5 − 3",
        "2π",
        "2 * π",
        "1,000 + 1",
        "1,234,567 / 1,000",
        "max(1,2)",
        "\"(1+2)*3\"",
        "`2 + 2`",
        // Errors, with positions.
        "",
        "   ",
        "2 +",
        "(1 + 2",
        "1 + 2)",
        "1 / 0",
        "5 % 0",
        "sqrt(-1)",
        "ln(0)",
        "log(10, 1)",
        "acos(2)",
        "(-8)^(1/3)",
        "0^-1",
        "2.5!",
        "(-1)!",
        "sqrt 4",
        "sqrt()",
        "sqrt(1, 2)",
        "min()",
        "round(1.5, 0.5)",
        "2 2",
        "1.2.3",
        "3 != 4",
        "x = 2 + 3",
        "2 + 3 =",
        "2(3)",
        // Limits.
        "9^9^9^9",
        "171!",
        "1e308 * 10",
        "1e400",
        &deep,
        &long,
        // Model-style inputs with units or words.
        "75 F",
        "134 °F - 32",
        "$1,500 + $20,000",
        "20% of 50",
        "five times three",
        "the population of Paris / 2",
        "2023 - 1889 years",
        "10 km / 2 h",
    ];
    let mut table = String::new();
    for input in &inputs {
        let shown = if input.len() > 60 {
            format!("{}... ({} chars)", &input[..40], input.chars().count())
        } else {
            (*input).to_owned()
        };
        writeln!(table, "{shown:?}\n    => {}", calculator::observation(input)).unwrap();
    }
    assert!(inputs.len() >= 60);
    crate::assert_snapshot!(table);
}

#[track_caller]
fn check_value(expression: &str, expected: &str) {
    assert_eq!(calculator::observation(expression), expected, "{expression}");
}

#[test]
fn calculator_values_people_expect() {
    check_value("((75-32) * 5/9)", "23.88888888888889");
    check_value("25^(1/2)", "5");
    check_value("2023/5", "404.6");
    check_value("ceil(404.6)", "405");
    check_value("floor(2023/5)", "404");
    check_value("1e-5", "1e-05");
    check_value("1e16", "1e+16");
    check_value("-0", "0");
}

/// Inputs that would compute for ages (or overflow the stack) are refused by the limit each
/// meets, named in the observation: a result too large stops at the operator that makes it (the
/// factorial of 170! is never looped over), a long or deep expression before it is evaluated.
/// Which limit refused them is checked, not a clock.
#[test]
fn calculator_limits_return_quickly() {
    let deep = "-".repeat(900);
    let long = "(".repeat(10_000);
    for (input, failure) in [
        ("9^9^9^9", "the result at position 4 is too large"),
        ("170!!", "the result at position 5 is too large"),
        (
            long.as_str(),
            "the expression is 10000 characters long; the limit is 1000",
        ),
        (
            deep.as_str(),
            "the expression nests deeper than 64 levels at position 65",
        ),
    ] {
        assert_eq!(
            calculator::observation(input),
            format!(
                "Please reformulate the expression. The calculator tool has failed with error: '{failure}'"
            ),
            "{input}"
        );
    }
}

/// Every `Calculate[...]` in the bundled few-shot examples is followed by the observation the
/// calculator really gives: the examples never teach the model a wrong answer.
#[test]
fn calculate_examples_show_real_observations() {
    let examples = include_str!("../../fewshot/calculate.txt");
    let lines: Vec<&str> = examples.lines().collect();
    let mut n_checked = 0;
    for (idx, line) in lines.iter().enumerate() {
        let Some((_, action)) = line.split_once(": Calculate[") else {
            continue;
        };
        let expression = action.strip_suffix(']').unwrap();
        let (_, shown) = lines[idx + 1].split_once(": ").unwrap();
        assert_eq!(shown, calculator::observation(expression), "{line}");
        n_checked += 1;
    }
    assert_eq!(n_checked, 3);
}

fn serpapi_body(name: &str) -> String {
    std::fs::read_to_string(crate::fixture(&format!("serpapi/{name}"))).unwrap()
}

async fn serpapi_server(query: &str, status: u16, body: String) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("q", query))
        .and(query_param("engine", "google"))
        .and(query_param("api_key", TEST_KEY))
        .respond_with(ResponseTemplate::new(status).set_body_string(body))
        .mount(&server)
        .await;
    server
}

fn websearch_config(server: &MockServer) -> WebSearchConfig {
    WebSearchConfig {
        search_url: format!("{}/search", server.uri()),
        api_key: Some(ApiKey::new(TEST_KEY)),
        first_retry_delay: Duration::from_millis(1),
        ..WebSearchConfig::default()
    }
}

#[track_caller]
fn check_websearch(query: &str, fixture: &str, expected: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let observation = runtime.block_on(async {
        let server = serpapi_server(query, 200, serpapi_body(fixture)).await;
        let websearch = WebSearch::new(websearch_config(&server)).unwrap();
        websearch.search(query).await.unwrap()
    });
    assert_eq!(observation, expected);
}

#[test]
fn websearch_observations() {
    // Recorded: an answer box with `answer`.
    check_websearch(
        "Who is the president of Spain?",
        "serpapi_president_spain.json",
        "Pedro Sánchez",
    );
    // Recorded: no answer box, so the first organic result's snippet.
    check_websearch(
        "What is the current year?",
        "serpapi_current_year.json",
        "The current year is 2023 and today's date (according to the Gregorian calendar) is Tuesday, July 25, 2023. If you encounter AD or CE in front of, ...",
    );
    // Hand-made: an answer box with only a snippet.
    check_websearch(
        "boiling point of water",
        "answer_box_snippet.json",
        "The boiling point of water is 100 °C (212 °F) at sea level.",
    );
    // Hand-made: neither an answer box nor organic results.
    check_websearch(
        "qwzxv plorfinth",
        "no_results.json",
        "No search result found for qwzxv plorfinth.",
    );
}

#[tokio::test]
async fn websearch_waits_as_long_as_retry_after_asks() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(
            ResponseTemplate::new(200).set_body_string(serpapi_body("serpapi_president_spain.json")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let websearch = WebSearch::new(websearch_config(&server)).unwrap();
    let started = std::time::Instant::now();
    assert_eq!(
        websearch.search("president of Spain").await.unwrap(),
        "Pedro Sánchez"
    );
    // The backoff alone would have waited a millisecond.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn websearch_retries_then_caches_without_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(
            ResponseTemplate::new(200).set_body_string(serpapi_body("serpapi_president_spain.json")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let cache = tempfile::tempdir().unwrap();
    let config = WebSearchConfig {
        cache_dir: Some(cache.path().to_owned()),
        ..websearch_config(&server)
    };
    let websearch = WebSearch::new(config.clone()).unwrap();
    let (observation, logs) = crate::llm::captured_logs(websearch.search("president of Spain")).await;
    assert_eq!(observation.unwrap(), "Pedro Sánchez");
    // Each retry is announced as the other clients announce theirs.
    let host = server.uri().trim_start_matches("http://").to_owned();
    let warnings: Vec<&str> = logs.lines().filter(|line| line.contains("WARN")).collect();
    assert_eq!(
        warnings,
        [2, 3].map(|attempt| format!(
            " WARN react_docstore::base::http: web search {host}: HTTP 503 Service Unavailable; retrying in 0.0 s, attempt {attempt} of 4"
        )),
        "{logs}"
    );
    // The second search is served from the cache: the server saw three requests in all.
    assert_eq!(
        websearch.search("president of Spain").await.unwrap(),
        "Pedro Sánchez"
    );
    let offline = WebSearch::new(WebSearchConfig {
        network: Network::Offline,
        ..config
    })
    .unwrap();
    assert_eq!(
        offline.search("president of Spain").await.unwrap(),
        "Pedro Sánchez"
    );
    // Answers from the cache build no HTTP client (no TLS roots loaded); requests do.
    assert!(!offline.client_built());
    assert!(websearch.client_built());
    let miss = offline.search("something else").await.unwrap_err();
    assert_eq!(
        miss.to_string(),
        "the web search for `something else` is not cached and the network is off (`--offline`)"
    );

    let files: Vec<_> = walk(cache.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let cached = std::fs::read_to_string(&files[0]).unwrap();
    assert!(cached.contains("Pedro Sánchez"));
    assert!(!cached.contains(TEST_KEY));
    assert!(!format!("{websearch:?}").contains(TEST_KEY));
}

/// `--offline --tools websearch` answers what an earlier run searched, with no `--cache-dir` on
/// either run: WebSearch answers live in the page cache's default directory (here under a
/// temporary `XDG_CACHE_HOME`).
#[tokio::test(flavor = "multi_thread")]
async fn websearch_answers_are_cached_in_the_default_cache_dir() {
    let query = "Who is the president of Spain?";
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("q", query))
        .respond_with(
            ResponseTemplate::new(200).set_body_string(serpapi_body("serpapi_president_spain.json")),
        )
        .expect(1)
        .mount(&server)
        .await;
    let home = tempfile::tempdir().unwrap();
    let cache_home = home.path().join("cache");
    let explore = |extra: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"))
            .args(["explore", "--json", "--tools", "websearch", "--search-url"])
            .arg(format!("{}/search", server.uri()))
            .args(extra)
            .arg(format!("WebSearch[{query}]"))
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", &cache_home)
            .env("SERPAPI_API_KEY", TEST_KEY)
            .env_remove("REACT_CACHE_DIR")
            .env_remove("REACT_SEARCH_URL")
            .env_remove("REACT_PROFILE")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{extra:?}: {stderr}");
        String::from_utf8(output.stdout).unwrap()
    };
    let expected = format!("{{\"action\":\"WebSearch[{query}]\",\"observation\":\"Pedro Sánchez\"}}\n");
    assert_eq!(explore(&[]), expected);
    assert_eq!(explore(&["--offline"]), expected);

    let files = walk(&cache_home.join("react-docstore").join("websearch"));
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(!std::fs::read_to_string(&files[0]).unwrap().contains(TEST_KEY));
}

#[tokio::test]
async fn websearch_errors_never_show_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(401).set_body_string(r#"{"error": "Invalid API key."}"#))
        .mount(&server)
        .await;
    let websearch = WebSearch::new(websearch_config(&server)).unwrap();
    let (error, logs) = crate::llm::captured_logs(websearch.search("anything")).await;
    let error = error.unwrap_err();
    assert_eq!(
        error_chain(&error),
        "the web search for `anything` answered HTTP 401"
    );
    // The key travels in the query string: trace logging must not print the URL with it.
    assert!(logs.contains("TRACE"), "trace logging was on: {logs}");
    assert!(!logs.contains(TEST_KEY), "{logs}");

    // Nothing listens on this machine's port: refused, not retried (nothing will listen there in
    // the seconds retries wait), and reported naming the host and port, never the URL.
    let port = crate::refused_port();
    let closed = WebSearchConfig {
        search_url: format!("http://127.0.0.1:{port}/search"),
        ..websearch_config(&server)
    };
    let (error, logs) = crate::llm::captured_logs(WebSearch::new(closed).unwrap().search("anything")).await;
    let error = error.unwrap_err();
    let chain = error_chain(&error);
    assert!(
        chain.starts_with(&format!(
            "the web search for `anything` cannot reach `127.0.0.1:{port}`: connection refused, nothing listens there"
        )),
        "{chain}"
    );
    assert!(!logs.contains("retrying"), "{logs}");
    assert!(!chain.contains(TEST_KEY), "{chain}");
    assert!(!chain.contains("/search"), "{chain}");

    let no_key = WebSearch::new(WebSearchConfig::default()).unwrap_err();
    assert_eq!(
        no_key.to_string(),
        "the web search needs a SerpApi key: set `SERPAPI_API_KEY` or pass `--serpapi-key`"
    );
}

#[tokio::test]
async fn websearch_bounds_waits_and_bodies() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after-ms", "1e30"))
        .expect(1)
        .mount(&server)
        .await;
    let websearch = WebSearch::new(websearch_config(&server)).unwrap();
    let error = websearch.search("anything").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the web search for `anything` answered HTTP 429 and asked to wait 1e30 ms, longer than the 120 s this client waits"
    );

    let server = MockServer::start().await;
    let huge = format!(
        r#"{{"answer_box": {{"answer": "{}"}}}}"#,
        "a".repeat(MAX_BODY_BYTES)
    );
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_string(huge))
        .expect(1)
        .mount(&server)
        .await;
    let websearch = WebSearch::new(websearch_config(&server)).unwrap();
    let error = websearch.search("anything").await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("the web search for `anything` answered with more than {MAX_BODY_BYTES} bytes")
    );
}

fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        write!(chain, ": {cause}").unwrap();
        source = cause.source();
    }
    chain
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// How a command under test ends: by itself (its timeout then is one no machine reaches), or
/// never (it hangs for ever, so only its 1.5 s timeout ends it, whatever the machine's speed).
#[derive(Clone, Copy)]
enum Ends {
    ByItself,
    Never,
}

#[track_caller]
fn check_command(command: &str, argument: &str, ends: Ends, expected: &str) {
    let timeout = match ends {
        Ends::ByItself => Duration::from_secs(60),
        Ends::Never => Duration::from_millis(1500),
    };
    let config = CommandToolConfig {
        timeout,
        max_output_bytes: 64,
        ..CommandToolConfig::parse(&format!("Shell={command}")).unwrap()
    };
    let tool = CommandTool::new(config);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let observation = runtime.block_on(tool.run(argument)).unwrap();
    assert_eq!(observation, expected, "{command}");
}

#[test]
fn command_tools() {
    let script = crate::fixture("tools/shout.sh");
    let shout = format!("sh {}", script.display());
    check_command(&shout, "hello world", Ends::ByItself, "HELLO WORLD");
    check_command(
        &shout,
        "fail",
        Ends::ByItself,
        "Shell failed (exit status 3): shout: cannot shout `fail`",
    );
    check_command(
        &shout,
        "sleep",
        Ends::Never,
        "Shell did not finish within 1.5 seconds.",
    );
    check_command(
        &shout,
        "flood",
        Ends::ByItself,
        "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy [output cut at 64 bytes]",
    );
    check_command("true", "x", Ends::ByItself, "Shell returned no output.");
    check_command(
        "exit 1",
        "x",
        Ends::ByItself,
        "Shell failed (exit status 1): no message on stderr",
    );
    check_command("wc -c", "abc", Ends::ByItself, "4");
}

/// Whether process `pid` still runs: `kill -0` reaches it and it is not a zombie (a killed orphan
/// stays a zombie until init reaps it, which some sandboxes' init never does).
fn running(pid: &str) -> bool {
    let reachable = std::process::Command::new("sh")
        .args(["-c", &format!("kill -0 {pid} 2>/dev/null")])
        .status()
        .unwrap()
        .success();
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    });
    reachable && !zombie
}

/// Whether `pid` stops running within 10 s (a SIGKILL is delivered at once; this only bounds it).
fn stops_running(pid: &str) -> bool {
    for _ in 0..500 {
        if !running(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// What a command starts in the background is stopped with it: on the timeout, and when the
/// command exits first, whose output comes back at once although the background child still
/// holds the pipe.
#[test]
fn command_tools_leave_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let read_pid = || std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();

    let hangs = format!("sleep infinity & echo $! > '{}'; wait", pid_file.display());
    check_command(
        &hangs,
        "x",
        Ends::Never,
        "Shell did not finish within 1.5 seconds.",
    );
    let pid = read_pid();
    assert!(stops_running(&pid), "`sleep` ({pid}) outlived the timeout");

    // Its output comes back when the command exits: waiting for the child's end of the pipe
    // instead would end in the timeout, whatever the machine.
    let leaves_a_child = format!("sleep infinity & echo $! > '{}'; echo hi", pid_file.display());
    check_command(&leaves_a_child, "x", Ends::ByItself, "hi");
    let pid = read_pid();
    assert!(stops_running(&pid), "`sleep` ({pid}) outlived its command");
}

#[track_caller]
fn check_definition(definition: &str, expected: &str) {
    let shown = match CommandToolConfig::parse(definition) {
        Ok(config) => format!("{} runs `{}`", config.name, config.command),
        Err(error) => error.to_string(),
    };
    assert_eq!(shown, expected);
}

#[test]
fn command_tool_definitions() {
    check_definition("Upper=tr a-z A-Z", "Upper runs `tr a-z A-Z`");
    check_definition("Add = bc -l", "Add runs `bc -l`");
    check_definition(
        "Weather=curl -s 'wttr.in/?q=a=b'",
        "Weather runs `curl -s 'wttr.in/?q=a=b'`",
    );
    check_definition(
        "tr a-z A-Z",
        "`--tool tr a-z A-Z`: expected `NAME=COMMAND`, e.g. `--tool 'Weather=curl -s wttr.in/$(cat)?format=3'`",
    );
    check_definition(
        "my tool=cat",
        "`--tool my tool=cat`: the name `my tool` must start with a letter and hold only letters, digits and `_`",
    );
    check_definition("search=cat", "`--tool search=cat`: `search` is a built-in action");
    check_definition(
        "Look_Up=cat",
        "`--tool Look_Up=cat`: `Look_Up` is a built-in action",
    );
    check_definition("Echo=", "`--tool Echo=`: the command is empty");
}

#[test]
fn tools_config_builds_the_toolbox() {
    let config = ToolsConfig {
        builtin: vec![BuiltinTool::Calculate, "WebSearch".parse().unwrap()],
        commands: vec![CommandToolConfig::parse("Upper=tr a-z A-Z").unwrap()],
        websearch: WebSearchConfig {
            api_key: Some(ApiKey::new(TEST_KEY)),
            ..WebSearchConfig::default()
        },
    };
    let toolbox = config.open_toolbox().unwrap();
    assert_eq!(
        toolbox.names().collect::<Vec<_>>(),
        ["Calculate", "WebSearch", "Upper"]
    );
    assert!(!format!("{toolbox:?} {config:?}").contains(TEST_KEY));
    let unknown = "wolfram".parse::<BuiltinTool>().unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "unknown tool `wolfram`, expected `calculate` or `websearch`"
    );
    let twice = ToolsConfig {
        commands: vec![CommandToolConfig::parse("calculate=bc").unwrap()],
        ..config
    };
    assert_eq!(
        twice.open_toolbox().unwrap_err().to_string(),
        "the tool name `calculate` is registered twice"
    );
}

/// Two tools a model's call cannot tell apart are refused before any model call, in one line
/// naming both: `MyTool` and `My_Tool` are both the function `my_tool`.
#[tokio::test(flavor = "multi_thread")]
async fn tools_that_are_one_function_to_a_model_are_refused_naming_both() {
    let same = |names: &[&str]| ToolsConfig {
        commands: names
            .iter()
            .map(|name| CommandToolConfig::parse(&format!("{name}=cat")).unwrap())
            .collect(),
        ..ToolsConfig::default()
    };
    let cases: [(&[&str], &str); 2] = [
        (
            &["MyTool", "My_Tool"],
            "the tools `MyTool` and `My_Tool` are one function to a model (`my_tool`; case and `_` do not count): rename one",
        ),
        (
            &["Web_Search"],
            "the tools `WebSearch` and `Web_Search` are one function to a model (`web_search`; case and `_` do not count): rename one",
        ),
    ];
    for (names, expected) in cases {
        let mut config = same(names);
        if names.len() == 1 {
            config.builtin = vec![BuiltinTool::WebSearch];
            config.websearch.api_key = Some(ApiKey::new(TEST_KEY));
        }
        assert_eq!(
            config.open_toolbox().unwrap_err().to_string(),
            expected,
            "{names:?}"
        );
    }
    // Different functions are fine.
    assert!(same(&["MyTool", "MyTools", "My2Tool"]).open_toolbox().is_ok());

    let server = crate::llm::model_server("chat/completions", crate::llm::Sequence::chat(&[])).await;
    let output = crate::binary()
        .args([
            "ask",
            "q",
            "--api",
            "tools",
            "--tool",
            "MyTool=cat",
            "--tool",
            "My_Tool=cat",
        ])
        .args(["--base-url", &format!("{}/v1", server.uri()), "--model", "m"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("the tools `MyTool` and `My_Tool` are one function to a model (`my_tool`"),
        "{stderr}"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}

/// Search and Lookup have nowhere to go in these tests.
struct NoDocstore;

impl Docstore for NoDocstore {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(async move {
            Err(DocstoreError::Config(format!(
                "no docstore in this test for `Search[{entity}]`"
            )))
        })
    }

    fn lookup(&mut self, keyword: &str) -> String {
        format!("No results for {keyword}.")
    }
}

/// The recorded run replays to the same trajectory from its recorded observations, and from the
/// live tools (the calculator, and WebSearch against the recorded SerpApi body).
#[tokio::test]
async fn replayed_run_uses_calculate_and_websearch() {
    let recorded = Run::read(&crate::fixture("runs/tools/how-many-five-years.json")).unwrap();
    assert_eq!(recorded.tools, ["Calculate", "WebSearch"]);
    let episode = replay_run(&recorded, None, None, &|_, _| None, &mut TracePrinter::silent()).await;
    assert_eq!(episode.run.answer.as_deref(), Some("404"));
    assert_eq!(episode.run.steps, recorded.steps);
    // The agent records the tools its grammar read, so a replay of the replay parses them too.
    assert_eq!(episode.run.tools, recorded.tools);
    crate::assert_snapshot!(episode.trajectory());

    let server = serpapi_server("current year", 200, serpapi_body("serpapi_current_year.json")).await;
    let toolbox = ToolsConfig {
        builtin: vec![BuiltinTool::Calculate, BuiltinTool::WebSearch],
        commands: Vec::new(),
        websearch: websearch_config(&server),
    }
    .open_toolbox()
    .unwrap();
    let mut unrecorded = recorded.clone();
    for step in &mut unrecorded.steps {
        step.observation = None;
    }
    let live = |_: &Run, grammar: &ActionGrammar| -> Option<Box<dyn Environment>> {
        Some(Box::new(Workbench::new(
            Box::new(NoDocstore),
            toolbox.clone(),
            grammar.clone(),
        )))
    };
    let live_episode = replay_run(&unrecorded, None, None, &live, &mut TracePrinter::silent()).await;
    assert_eq!(live_episode.trajectory(), episode.trajectory());
    assert_eq!(live_episode.run.steps, recorded.steps);
}

/// A tool the model has not been given is an invalid action, with the valid ones listed.
#[tokio::test]
async fn unregistered_tool_is_an_invalid_action() {
    let grammar = ActionGrammar::new(Profile::Default, ["Calculate".to_owned()]);
    let mut toolbox = Toolbox::default();
    toolbox.register(Arc::new(react_docstore::tools::calculator::Calculate));
    let mut workbench = Workbench::new(Box::new(NoDocstore), toolbox, grammar.clone());
    let observe = |text: &str| {
        let parsed = grammar.parse(text);
        (parsed, text.to_owned())
    };
    let (parsed, written) = observe("calculate[6 * 7]");
    assert_eq!(workbench.observe(1, &parsed, &written).await.unwrap(), "42");
    let (parsed, written) = observe("WebSearch[current year]");
    assert_eq!(
        workbench.observe(2, &parsed, &written).await.unwrap(),
        "Invalid action: WebSearch[current year]. Valid actions are Search[...], Lookup[...], Finish[...], Calculate[...]"
    );
}

/// With tools on, the header lists them after the paper's three actions, and their examples follow
/// the HotpotQA ones.
#[test]
fn prompt_lists_enabled_tools_and_their_examples() {
    let toolbox = ToolsConfig {
        builtin: vec![BuiltinTool::Calculate, BuiltinTool::WebSearch],
        commands: vec![CommandToolConfig::parse("Upper=tr a-z A-Z").unwrap()],
        websearch: WebSearchConfig {
            api_key: Some(ApiKey::new(TEST_KEY)),
            ..WebSearchConfig::default()
        },
    }
    .open_toolbox()
    .unwrap();
    let prompt = Prompt::new(
        Profile::Default,
        &Fewshot::hotpotqa(),
        &toolbox,
        &PromptOptions::default(),
    );
    let text = prompt.text();
    let (header, _) = text.split_once("Here are some examples.\n").unwrap();
    crate::assert_snapshot!(header);
    assert!(text.contains(include_str!("../../fewshot/calculate.txt")));
    assert!(text.ends_with(include_str!("../../fewshot/websearch.txt")));
    let calculator_only = Prompt::new(
        Profile::Default,
        &Fewshot::hotpotqa(),
        &ToolsConfig {
            builtin: vec![BuiltinTool::Calculate],
            ..ToolsConfig::default()
        }
        .open_toolbox()
        .unwrap(),
        &PromptOptions::default(),
    );
    assert!(!calculator_only.text().contains("WebSearch"));
}

#[track_caller]
fn check_command_line(args: &[&str], expected_stderr: &str) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(args)
        .env("SERPAPI_API_KEY", TEST_KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stderr.contains(expected_stderr), "{args:?}: {stderr}");
    assert!(
        !stderr.contains(TEST_KEY) && !stdout.contains(TEST_KEY),
        "{args:?}"
    );
}

/// The tool flags are parsed and checked before any command runs, and `--help` hides the key.
#[test]
fn tool_flags_on_the_command_line() {
    check_command_line(
        &["ask", "q", "--tools", "calculate,wolfram"],
        "invalid value 'wolfram' for '--tools <TOOLS>': unknown tool `wolfram`, expected `calculate` or `websearch`",
    );
    check_command_line(
        &["ask", "q", "--tool", "no equals sign"],
        "expected `NAME=COMMAND`",
    );
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(["ask", "--help"])
        .env("SERPAPI_API_KEY", TEST_KEY)
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--serpapi-key <KEY>"), "{help}");
    assert!(help.contains("--tool <NAME=COMMAND>"), "{help}");
    assert!(!help.contains(TEST_KEY));
}

/// Cache files are named by the SHA-256 of their key (`react_docstore::base::digest::file_key`);
/// an entry written under the 64-bit FNV-1a name of earlier releases is still read, offline.
#[tokio::test]
async fn websearch_reads_an_entry_under_its_name_before_sha256_naming() {
    let cache = tempfile::tempdir().unwrap();
    let entries = cache.path().join("websearch");
    std::fs::create_dir_all(&entries).unwrap();
    let entry = r#"{"format":"react-docstore.websearch.v1","query":"Who wrote Hamlet?","observation":"William Shakespeare"}"#;
    // FNV-1a 64 of "https://serpapi.com/search\nWho wrote Hamlet?".
    std::fs::write(entries.join("5931fd13be5e15fb.json"), entry).unwrap();
    let offline = WebSearch::new(WebSearchConfig {
        cache_dir: Some(cache.path().to_owned()),
        network: Network::Offline,
        api_key: Some(ApiKey::new(TEST_KEY)),
        ..WebSearchConfig::default()
    })
    .unwrap();
    assert_eq!(
        offline.search("Who wrote Hamlet?").await.unwrap(),
        "William Shakespeare"
    );
    // Under its SHA-256 name, the entry is read first.
    std::fs::write(
        entries.join("30159b89f93759e5dc5b8e215547640d5562d5d609896c8097ac15d33225fd3d.json"),
        entry.replace("William Shakespeare", "W. Shakespeare"),
    )
    .unwrap();
    assert_eq!(
        offline.search("Who wrote Hamlet?").await.unwrap(),
        "W. Shakespeare"
    );
}
