//! The integration tests: one binary, one module per area. Nothing here touches the network:
//! HTTP clients talk to local wiremock servers serving recorded bodies.

/// Where every snapshot lives: `tests/snapshots/`, committed and reviewed like code.
#[macro_export]
macro_rules! assert_snapshot {
    ($($arg:tt)*) => {{
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
        settings.set_prepend_module_to_snapshot(true);
        settings.bind(|| insta::assert_snapshot!($($arg)*));
    }};
}

/// A `Write` whose bytes a test reads back: what a trace printer or an evaluation's log wrote.
#[derive(Clone, Default)]
pub struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// A plain-text trace printer into this buffer.
    pub fn printer(&self) -> react_docstore::agent::trace::TracePrinter {
        react_docstore::agent::trace::TracePrinter::new(
            Box::new(self.clone()),
            react_docstore::agent::trace::Color::Never,
        )
    }

    /// An evaluation log into this buffer.
    pub fn log(&self) -> react_docstore::agent::trace::LogOutput {
        react_docstore::agent::trace::LogOutput::new(Box::new(self.clone()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// The binary, untouched by the environment it runs in: none of the user's model settings
/// (`OPENAI_*`, `REACT_MODEL`, `REACT_PROFILE`, `REACT_API`) and no colour.
pub fn binary() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_react-docstore"));
    command
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("REACT_MODEL")
        .env_remove("REACT_PROFILE")
        .env_remove("REACT_API")
        .env_remove("REACT_METHOD");
    command
}

/// A port on 127.0.0.1 that nothing listens on: bound by the system, then let go.
pub fn refused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A local server answering every POST with `responder` (a scripted model).
pub async fn serve_posts(responder: impl wiremock::Respond + 'static) -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

/// Fails the test, showing the command's stderr, unless it exited with 0.
#[track_caller]
pub fn assert_exit_0(output: &std::process::Output) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `--model m --api completions --base-url BASE_URL`: the binary asks the local completions
/// server at `base_url`.
pub fn completions_model(base_url: &str) -> [&str; 6] {
    ["--model", "m", "--api", "completions", "--base-url", base_url]
}

/// The JSON bodies of the requests `server` received, in the order received.
pub async fn request_bodies(server: &wiremock::MockServer) -> Vec<serde_json::Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

/// A path inside the repository's `fixtures/`.
pub fn fixture(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}
mod anthropic_api;
mod architecture;
mod ask;
mod audit;
mod batch;
mod bounds;
mod cache;
mod closed_pipe;
mod compare;
mod cost;
mod docs;
mod docstore;
mod end_to_end;
mod eval;
mod evaluation;
mod explore;
mod export;
mod function_calls;
mod fuzz;
mod index;
mod layers;
mod litellm;
mod llm;
mod mcp;
mod passback;
mod path_forms;
mod preservation;
mod methods;
mod reasoning;
mod replay;
mod replay_live;
mod responses_api;
mod report;
mod sc_stop;
mod score;
mod secrets;
mod serve;
mod shards;
mod task;
mod tools;
mod trials;
mod transparency;

/// `text` as a regex matching itself, for insta filters of server URLs and temp paths.
pub fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

/// The content type the mock Wikipedia answers with.
pub const HTML: &str = "text/html; charset=UTF-8";

/// The pages of `fixtures/wikipedia/` (three recorded, three synthetic), under the searches that
/// return them.
const WIKIPEDIA_PAGES: [(&str, &str); 6] = [
    ("Colorado orogeny", "colorado_orogeny_hit.html"),
    ("Colorado orogenyy", "colorado_orogenyy_similar.html"),
    ("Qwertzuiop Zzyzxian Orogeny", "nonexistent_miss.html"),
    ("Adam Clayton Powell", "synthetic_disambiguation.html"),
    ("[Adam Clayton Powell]", "synthetic_bracketed_results.html"),
    ("Gateway Arch", "synthetic_abbreviations_coordinates.html"),
];

/// A page of `fixtures/wikipedia/`.
pub fn wikipedia_page(name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("wikipedia/{name}"))).expect("fixture page")
}

/// A local Wikipedia: every page of `fixtures/wikipedia/` under `/w/index.php?search=...`.
pub async fn mock_wikipedia() -> wiremock::MockServer {
    use wiremock::matchers::{method, path, query_param};
    let server = wiremock::MockServer::start().await;
    for (search, page) in WIKIPEDIA_PAGES {
        wiremock::Mock::given(method("GET"))
            .and(path("/w/index.php"))
            .and(query_param("search", search))
            .respond_with(wiremock::ResponseTemplate::new(200).set_body_raw(wikipedia_page(page), HTML))
            .mount(&server)
            .await;
    }
    server
}

/// A named pipe at `path` that gives `text` to its first reader: a second read would wait for a
/// writer that never comes. Join the writer once the reader is done.
pub fn pipe_read_once(path: &std::path::Path, text: String) -> std::thread::JoinHandle<()> {
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; `mkfifo` reads it and keeps nothing.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let path = path.to_owned();
    std::thread::spawn(move || std::fs::write(&path, text).unwrap())
}

/// Runs `command` and gives back its stdout, stderr and exit code, killing it and failing the
/// test when it is not done within 30 s (`waited_for` says what it would be waiting for).
pub fn output_within_30s(command: &mut std::process::Command, waited_for: &str) -> (String, String, i32) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            pipe.read_to_string(&mut text).unwrap();
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the command waited for {waited_for}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (
        stdout.join().unwrap(),
        stderr.join().unwrap(),
        status.code().unwrap_or(-1),
    )
}

/// A `reqwest` client of a test's own, with the TLS crypto provider the library installs before
/// its first client (ring): a test must not depend on another having built one first (a
/// filtered run panicked in reqwest: "No rustls crypto provider is configured").
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The question a ReAct prompt asks (its last `Question:` line) and the step it asks for (its
/// closing `Thought n:`), as scripted model servers read them.
pub fn react_question_and_step(prompt: &str) -> (&str, usize) {
    let question = prompt
        .rsplit_once("\nQuestion: ")
        .and_then(|(_, asked)| asked.split('\n').next())
        .unwrap_or_else(|| panic!("no question in {prompt:.200}"));
    let step = prompt
        .rsplit_once("Thought ")
        .and_then(|(_, step)| step.trim_end_matches(':').parse().ok())
        .unwrap_or_else(|| panic!("no step asked in {prompt:.200}"));
    (question, step)
}

/// `--docstore` for the test corpus (`fixtures/index/pages.jsonl`), the docstore of the tests that
/// script a model over a few pages.
pub fn test_corpus() -> String {
    format!("corpus:{}", fixture("index/pages.jsonl").display())
}
