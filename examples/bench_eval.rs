//! Benchmark of `eval`'s concurrency: a local OpenAI-compatible server that answers every call
//! after 200 ms, questions of 4 steps each, through the real HTTP client; prints the makespan
//! against the ideal and the peak memory of the whole process (mock server included).
//!
//! `cargo run --release --example bench_eval` (figures in README.md); with `-- --index DIR`, the
//! 100-question run is repeated with every search going to the offline index at `DIR` (built by
//! `index build`, e.g. from `examples/gen_wiki.rs`'s corpus).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use react_docstore::Profile;
use react_docstore::docstore::{ContextParagraph, Docstore, DocstoreError, DocstoreSource, IndexSource};
use react_docstore::eval::{self, Contexts, EvalConfig, EvalServices, Progress, Resume, Selection};
use react_docstore::llm::{Api, OpenAiClient, OpenAiConfig};
use react_docstore::tool::Toolbox;
use react_docstore::trace::LogOutput;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const LATENCY: Duration = Duration::from_millis(200);
const STEPS_PER_QUESTION: usize = 4;

/// A local OpenAI-compatible server (`/v1/completions`): searches for three steps, finishes on
/// the fourth; every answer leaves after `LATENCY`.
struct SlowModel;

impl Respond for SlowModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let prompt = body["prompt"].as_str().unwrap_or_default();
        // The prompt ends with `Thought {step}:`.
        let step: usize = prompt
            .rsplit_once("Thought ")
            .and_then(|(_, rest)| rest.trim_end_matches(':').parse().ok())
            .unwrap_or(1);
        let text = if step < STEPS_PER_QUESTION {
            format!(" I should look up part {step}.\nAction {step}: Search[Entity {step}]")
        } else {
            format!(" I know it now.\nAction {step}: Finish[answer]")
        };
        ResponseTemplate::new(200)
            .set_body_json(serde_json::json!({
                "id": "cmpl-bench", "object": "text_completion", "model": "slow-model",
                "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt.len() / 4, "completion_tokens": 16, "total_tokens": prompt.len() / 4 + 16}
            }))
            .set_delay(LATENCY)
    }
}

async fn slow_model_server() -> MockServer {
    let server = MockServer::builder().disable_request_recording().start().await;
    Mock::given(method("POST"))
        .and(path("/v1/completions"))
        .respond_with(SlowModel)
        .mount(&server)
        .await;
    server
}

/// Answers every search at once with a paragraph of realistic length.
struct InstantDocstore;

impl DocstoreSource for InstantDocstore {
    fn open(&self, _context: &[ContextParagraph]) -> Box<dyn Docstore> {
        Box::new(InstantDocstore)
    }
}

impl Docstore for InstantDocstore {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(async move { Ok(format!("{entity} is a thing. ").repeat(40)) })
    }

    fn lookup(&mut self, keyword: &str) -> String {
        format!("No results for {keyword}.")
    }
}

fn write_questions(path: &Path, n_questions: usize) {
    let questions: Vec<serde_json::Value> = (0..n_questions)
        .map(|idx| {
            serde_json::json!({"question": format!("Question number {idx}?"), "answer": "answer", "type": "bridge"})
        })
        .collect();
    std::fs::write(path, serde_json::to_string(&questions).unwrap()).unwrap();
}

/// Evaluates `n_questions` fresh questions `concurrency` at a time; returns the wall time.
async fn time_run(
    dir: &Path,
    model: &MockServer,
    docstore: Arc<dyn DocstoreSource>,
    n_questions: usize,
    concurrency: usize,
) -> Duration {
    let name = format!("q{n_questions}-c{concurrency}");
    let questions = dir.join(format!("{name}.json"));
    write_questions(&questions, n_questions);
    let config = EvalConfig {
        questions,
        selection: Selection::default(),
        contexts: Contexts::Unused,
        profile: Profile::Default,
        max_steps: 7,
        fewshot: None,
        concurrency,
        results: dir.join(format!("{name}.results.jsonl")),
        resume: Resume::SkipDone,
        progress: Progress::Hidden,
        log: LogOutput::stderr(),
    };
    let services = EvalServices {
        llm: Arc::new(client(model)),
        docstore,
        toolbox: Toolbox::default(),
    };
    let started = Instant::now();
    let summary = eval::evaluate(&config, &services, std::future::pending())
        .await
        .expect("the benchmark evaluation runs");
    let elapsed = started.elapsed();
    assert_eq!((summary.done, summary.scores.em), (n_questions, 1.0));
    assert_eq!(summary.per_question.llm_calls, STEPS_PER_QUESTION as f64);
    elapsed
}

/// The real HTTP client, as `eval --api completions --base-url {server}/v1` builds it.
fn client(model: &MockServer) -> OpenAiClient {
    let mut config = OpenAiConfig::new("slow-model");
    config.base_url = format!("{}/v1", model.uri());
    config.api = Api::Completions;
    OpenAiClient::new(config).expect("a client of the local server")
}

fn ideal_makespan(n_questions: usize, concurrency: usize) -> Duration {
    LATENCY * (n_questions.div_ceil(concurrency) * STEPS_PER_QUESTION) as u32
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let index = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => None,
        [flag, dir] if flag == "--index" => Some(std::path::PathBuf::from(dir)),
        _ => {
            eprintln!("usage: bench_eval [--index DIR]");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    runtime.block_on(async {
        let model = slow_model_server().await;
        let (n, concurrency) = (100, 25);
        if let Some(index) = index {
            let source = IndexSource::open(&index, Profile::Default).expect("the index opens");
            let elapsed = time_run(dir.path(), &model, Arc::new(source), n, concurrency).await;
            let ideal = ideal_makespan(n, concurrency);
            println!(
                "{n} questions x {STEPS_PER_QUESTION} steps over the index {}, {}ms per call, --concurrency {concurrency}: {:.3} s (ideal {:.1} s, {:.3}x); peak memory (VmHWM) {:.1} MB",
                index.display(),
                LATENCY.as_millis(),
                elapsed.as_secs_f64(),
                ideal.as_secs_f64(),
                elapsed.as_secs_f64() / ideal.as_secs_f64(),
                peak_rss_mb()
            );
            return;
        }
        let elapsed = time_run(dir.path(), &model, Arc::new(InstantDocstore), n, concurrency).await;
        let ideal = ideal_makespan(n, concurrency);
        println!(
            "{n} questions x {STEPS_PER_QUESTION} steps, {}ms per call, --concurrency {concurrency}: {:.3} s (ideal {:.1} s, {:.3}x)",
            LATENCY.as_millis(),
            elapsed.as_secs_f64(),
            ideal.as_secs_f64(),
            elapsed.as_secs_f64() / ideal.as_secs_f64()
        );

        let n_sequential = 5;
        let elapsed = time_run(dir.path(), &model, Arc::new(InstantDocstore), n_sequential, 1).await;
        let per_question = elapsed.as_secs_f64() / n_sequential as f64;
        println!(
            "{n_sequential} questions, --concurrency 1: {:.3} s, {:.3} s a question -> {:.1} s for {n} questions (extrapolated; ideal {:.1} s)",
            elapsed.as_secs_f64(),
            per_question,
            per_question * n as f64,
            ideal_makespan(n, 1).as_secs_f64()
        );

        let (n_large, concurrency_large) = (500, 100);
        let elapsed = time_run(dir.path(), &model, Arc::new(InstantDocstore), n_large, concurrency_large).await;
        println!(
            "{n_large} questions, --concurrency {concurrency_large}: {:.3} s (ideal {:.1} s); peak memory of the process (VmHWM) {:.1} MB",
            elapsed.as_secs_f64(),
            ideal_makespan(n_large, concurrency_large).as_secs_f64(),
            peak_rss_mb()
        );
    });
}
