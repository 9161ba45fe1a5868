//! Benchmark of `eval`'s concurrency: a local OpenAI-compatible server that answers every call
//! after 200 ms, questions of 4 steps each, through the real HTTP client; prints the makespan
//! against the ideal and the peak memory of the whole process (mock server included).
//!
//! `cargo run --release --bin bench_eval` (figures in README.md); with `-- --index DIR`, the
//! 100-question run is repeated with every search going to the offline index at `DIR` (built by
//! `index build`, e.g. from `gen_wiki`'s corpus); with `-- --distractor`, the 100 real
//! HotpotQA questions of `fixtures/docstore/hotpotqa-distractor-100.json` are evaluated over
//! `--docstore distractor` (each question searching its own ten paragraphs: an exact title, a
//! title with a letter dropped, a Lookup), after timing how long a question's paragraphs take to
//! open; with `-- --cot-sc`, `--method cot-sc` (21 samples a question) is timed against a server
//! answering in 500 ms that honours `n` (one request a question), then one that ignores it (21
//! requests a question, never more in flight than `--concurrency`); with `-- --ceiling`, the
//! client-side ceiling: model calls per second against a server answering at once (then in 20 ms)
//! at high concurrency, with the CPU time the process (client and mock server) spent a call.
//! Every run prints the load average beside its figures.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench::cpu::cpu_seconds;
use futures::future::BoxFuture;
use react_docstore::agent::trace::LogOutput;
use react_docstore::base::profile::Profile;
use react_docstore::docstore::context_paragraphs;
use react_docstore::docstore::{
    ContextParagraph, DistractorSource, Docstore, DocstoreError, DocstoreSource, index::IndexSource,
};
use react_docstore::eval::{self, EvalConfig, EvalServices, Progress, Resume};
use react_docstore::llm::{openai::Api, openai::OpenAiClient, openai::OpenAiConfig};
use react_docstore::record::questions::Contexts;
use react_docstore::record::selection::Selection;
use react_docstore::tools::Toolbox;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const LATENCY: Duration = Duration::from_millis(200);
const STEPS_PER_QUESTION: usize = 4;

const DISTRACTOR_QUESTIONS: &str = "fixtures/docstore/hotpotqa-distractor-100.json";

/// A local OpenAI-compatible server (`/v1/completions`): three actions, then `Finish` on the
/// fourth step; every answer leaves after `LATENCY`. Without scripts the actions are
/// `Search[Entity {step}]`; with them, the question's own (found by its text in the prompt).
struct SlowModel {
    scripts: HashMap<String, Script>,
    latency: Duration,
}

/// What the model does for one question: its three actions, then its answer.
struct Script {
    actions: [String; STEPS_PER_QUESTION - 1],
    answer: String,
}

impl Respond for SlowModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let prompt = body["prompt"].as_str().unwrap_or_default();
        // The prompt ends with `Thought {step}:`.
        let step: usize = prompt
            .rsplit_once("Thought ")
            .and_then(|(_, rest)| rest.trim_end_matches(':').parse().ok())
            .unwrap_or(1);
        let question = prompt
            .rsplit_once("\nQuestion: ")
            .and_then(|(_, rest)| rest.split_once('\n'))
            .map_or("", |(question, _)| question);
        let script = self.scripts.get(question);
        let text = match script {
            Some(script) if step < STEPS_PER_QUESTION => {
                format!(
                    " I should look it up.\nAction {step}: {}",
                    script.actions[step - 1]
                )
            }
            Some(script) => format!(" I know it now.\nAction {step}: Finish[{}]", script.answer),
            None if step < STEPS_PER_QUESTION => {
                format!(" I should look up part {step}.\nAction {step}: Search[Entity {step}]")
            }
            None => format!(" I know it now.\nAction {step}: Finish[answer]"),
        };
        ResponseTemplate::new(200)
            .set_body_json(serde_json::json!({
                "id": "cmpl-bench", "object": "text_completion", "model": "slow-model",
                "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt.len() / 4, "completion_tokens": 16, "total_tokens": prompt.len() / 4 + 16}
            }))
            .set_delay(self.latency)
    }
}

async fn slow_model_server(scripts: HashMap<String, Script>) -> MockServer {
    model_server(scripts, LATENCY).await
}

/// The scripted model answering every call after `latency`.
async fn model_server(scripts: HashMap<String, Script>, latency: Duration) -> MockServer {
    let server = MockServer::builder().disable_request_recording().start().await;
    Mock::given(method("POST"))
        .and(path("/v1/completions"))
        .respond_with(SlowModel { scripts, latency })
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

/// Writes `n_questions` questions without context paragraphs.
fn write_questions(dir: &Path, n_questions: usize) -> PathBuf {
    let path = dir.join(format!("q{n_questions}.json"));
    let questions: Vec<serde_json::Value> = (0..n_questions)
        .map(|idx| {
            serde_json::json!({"question": format!("Question number {idx}?"), "answer": "answer", "type": "bridge"})
        })
        .collect();
    std::fs::write(&path, serde_json::to_string(&questions).unwrap()).unwrap();
    path
}

/// Evaluates every question of `questions` `concurrency` at a time, from a fresh results file;
/// returns the wall time.
async fn time_run(
    dir: &Path,
    model: &MockServer,
    docstore: Arc<dyn DocstoreSource>,
    questions: &Path,
    contexts: Contexts,
    n_questions: usize,
    concurrency: usize,
) -> Duration {
    let stem = questions
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("questions");
    let results = dir.join(format!("{stem}-c{concurrency}.results.jsonl"));
    let config = EvalConfig {
        questions: questions.to_owned(),
        selection: Selection::default(),
        contexts,
        agent: react_docstore::solver::setup::AgentSetup::default(),
        fewshot: Vec::new(),
        attempts: Default::default(),
        fewshot_from: None,
        concurrency,
        results,
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

/// The load average (1, 5, 15 minutes), to print beside a figure.
fn load_average() -> String {
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let fields: Vec<&str> = loadavg.split_whitespace().take(3).collect();
    format!("load average {}", fields.join(", "))
}

/// The real questions of the distractor setting, each with a script: its first paragraph's
/// title searched exactly, its second's with a letter dropped (a miss, so the ranked search),
/// then a Lookup of the first title's last word; the gold answer.
fn distractor_scripts(questions: &Path) -> (Vec<Vec<ContextParagraph>>, HashMap<String, Script>) {
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(questions).expect("the distractor questions"))
            .expect("a JSON array of questions");
    let mut contexts = Vec::new();
    let mut scripts = HashMap::new();
    for record in &records {
        let context = context_paragraphs(&record["context"]).expect("a HotpotQA context");
        let first = &context[0].title;
        let mut typo: Vec<char> = context[1].title.chars().collect();
        typo.remove(typo.len() / 2);
        let typo: String = typo.into_iter().collect();
        let last_word = first.split_whitespace().last().unwrap_or(first);
        let actions = [
            format!("Search[{first}]"),
            format!("Search[{typo}]"),
            format!("Lookup[{last_word}]"),
        ];
        let question = record["question"].as_str().expect("a question").to_owned();
        let answer = record["answer"].as_str().expect("an answer").to_owned();
        scripts.insert(question, Script { actions, answer });
        contexts.push(context);
    }
    (contexts, scripts)
}

/// Opens every context `rounds` times over; prints the mean, median and 99th percentile of one
/// question's open.
fn time_opens(contexts: &[Vec<ContextParagraph>], rounds: usize) {
    let source = DistractorSource::new(Profile::Default);
    for context in contexts {
        std::hint::black_box(source.open(context));
    }
    let mut times: Vec<Duration> = Vec::with_capacity(rounds * contexts.len());
    for _ in 0..rounds {
        for context in contexts {
            let started = Instant::now();
            std::hint::black_box(source.open(std::hint::black_box(context)));
            times.push(started.elapsed());
        }
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / times.len() as u32;
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    println!(
        "opening a question's {} paragraphs (distractor, {} opens): mean {:.3} ms, median {:.3} ms, p99 {:.3} ms; {}",
        contexts[0].len(),
        times.len(),
        ms(mean),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 99 / 100]),
        load_average()
    );
}

/// A local OpenAI-compatible server for CoT-SC: every request answered after `SAMPLE_LATENCY`
/// with `n` CoT completions (or one, as llama-cpp-python does), each arrival's time kept.
struct SamplingModel {
    honours_n: bool,
    arrivals: Arc<std::sync::Mutex<Vec<Instant>>>,
}

const SAMPLE_LATENCY: Duration = Duration::from_millis(500);

impl Respond for SamplingModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.arrivals.lock().unwrap().push(Instant::now());
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let n = if self.honours_n {
            body["n"].as_u64().unwrap_or(1)
        } else {
            1
        };
        let choices: Vec<serde_json::Value> = (0..n)
            .map(|idx| serde_json::json!({"index": idx, "text": " Let's think step by step. It is the answer.\nAnswer: answer", "finish_reason": "stop"}))
            .collect();
        ResponseTemplate::new(200)
            .set_body_json(serde_json::json!({"choices": choices, "usage": {"prompt_tokens": 550, "completion_tokens": 16 * n}}))
            .set_delay(SAMPLE_LATENCY)
    }
}

/// The most requests in flight at once, from their arrival times (each takes `SAMPLE_LATENCY`).
fn max_in_flight(arrivals: &[Instant]) -> usize {
    let mut arrivals = arrivals.to_vec();
    arrivals.sort();
    (0..arrivals.len())
        .map(|idx| {
            arrivals[..=idx]
                .iter()
                .filter(|&&arrival| arrivals[idx].duration_since(arrival) < SAMPLE_LATENCY)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// `eval --method cot-sc` of `n_questions` at `concurrency` against a sampling server.
async fn time_cot_sc(dir: &Path, honours_n: bool, n_questions: usize, concurrency: usize) {
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let server = MockServer::builder().disable_request_recording().start().await;
    Mock::given(method("POST"))
        .and(path("/v1/completions"))
        .respond_with(SamplingModel {
            honours_n,
            arrivals: Arc::clone(&arrivals),
        })
        .mount(&server)
        .await;
    let questions = write_questions(dir, n_questions);
    let config = EvalConfig {
        questions: questions.clone(),
        selection: Selection::default(),
        contexts: Contexts::Unused,
        agent: react_docstore::solver::setup::AgentSetup {
            method: react_docstore::base::method::Method::CotSc,
            ..Default::default()
        },
        fewshot: Vec::new(),
        attempts: Default::default(),
        fewshot_from: None,
        concurrency,
        results: dir.join(format!("cot-sc-{honours_n}-{n_questions}.results.jsonl")),
        resume: Resume::SkipDone,
        progress: Progress::Hidden,
        log: LogOutput::stderr(),
    };
    let services = EvalServices {
        llm: Arc::new(client(&server)),
        docstore: Arc::new(InstantDocstore),
        toolbox: Toolbox::default(),
    };
    let started = Instant::now();
    let summary = eval::evaluate(&config, &services, std::future::pending())
        .await
        .expect("the benchmark evaluation runs");
    let elapsed = started.elapsed();
    assert_eq!((summary.done, summary.scores.em), (n_questions, 1.0));
    let arrivals = arrivals.lock().unwrap();
    let requests_per_question = arrivals.len() as f64 / n_questions as f64;
    let ideal = SAMPLE_LATENCY.as_secs_f64() * (arrivals.len() as f64 / concurrency as f64).ceil();
    println!(
        "--method cot-sc, {n_questions} questions x 21 samples, server {} n, {}ms a request, --concurrency {concurrency}: {:.3} s (ideal {ideal:.1} s, {:.3}x); {requests_per_question:.0} requests a question, at most {} in flight; {}",
        if honours_n { "honouring" } else { "ignoring" },
        SAMPLE_LATENCY.as_millis(),
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() / ideal,
        max_in_flight(&arrivals),
        load_average()
    );
}

enum Mode {
    /// An instant docstore: the agent's own overhead.
    Instant,
    /// `--method cot-sc` against a server that honours `n`, then one that ignores it.
    CotSc,
    /// Every search to the offline index at this directory.
    Index(PathBuf),
    /// Each question over its own context paragraphs.
    Distractor,
    /// Model calls per second against a server that answers at once (or in 20 ms).
    Ceiling,
}

fn main() {
    let mode = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => Mode::Instant,
        [flag, dir] if flag == "--index" => Mode::Index(PathBuf::from(dir)),
        [flag] if flag == "--distractor" => Mode::Distractor,
        [flag] if flag == "--cot-sc" => Mode::CotSc,
        [flag] if flag == "--ceiling" => Mode::Ceiling,
        _ => {
            eprintln!("usage: bench_eval [--index DIR | --distractor | --cot-sc | --ceiling]");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (n, concurrency) = (100, 25);
    let ideal = ideal_makespan(n, concurrency);
    let report = |label: &str, elapsed: Duration| {
        println!(
            "{n} questions x {STEPS_PER_QUESTION} steps{label}, {}ms per call, --concurrency {concurrency}: {:.3} s (ideal {:.1} s, {:.3}x); peak memory (VmHWM) {:.1} MB; {}",
            LATENCY.as_millis(),
            elapsed.as_secs_f64(),
            ideal.as_secs_f64(),
            elapsed.as_secs_f64() / ideal.as_secs_f64(),
            peak_rss_mb(),
            load_average()
        );
    };
    match mode {
        Mode::Ceiling => runtime.block_on(async {
            for (latency_ms, concurrency, n_questions) in [(0, 32, 1000), (0, 256, 2000), (20, 256, 2000), (20, 1024, 4000)] {
                let model = model_server(HashMap::new(), Duration::from_millis(latency_ms)).await;
                // A directory of its own: no run resumes another's results file.
                let run_dir = dir.path().join(format!("ceiling-{latency_ms}-{concurrency}"));
                std::fs::create_dir(&run_dir).unwrap();
                let questions = write_questions(&run_dir, n_questions);
                let cpu_before = cpu_seconds();
                let elapsed = time_run(&run_dir, &model, Arc::new(InstantDocstore), &questions, Contexts::Unused, n_questions, concurrency).await;
                let cpu = cpu_seconds() - cpu_before;
                let calls = (n_questions * STEPS_PER_QUESTION) as f64;
                println!(
                    "{n_questions} questions x {STEPS_PER_QUESTION} calls, server answering in {latency_ms} ms, --concurrency {concurrency}: {:.2} s, {:.0} model calls/s; CPU (client + mock server) {:.2} s, {:.0} µs a call; peak memory {:.1} MB; {}",
                    elapsed.as_secs_f64(),
                    calls / elapsed.as_secs_f64(),
                    cpu,
                    cpu / calls * 1e6,
                    peak_rss_mb(),
                    load_average()
                );
            }
        }),
        Mode::CotSc => runtime.block_on(async {
            time_cot_sc(dir.path(), true, n, concurrency).await;
            time_cot_sc(dir.path(), false, concurrency, concurrency).await;
        }),
        Mode::Index(index) => runtime.block_on(async {
            let model = slow_model_server(HashMap::new()).await;
            let source = IndexSource::open(&index, Profile::Default).expect("the index opens");
            let questions = write_questions(dir.path(), n);
            let elapsed = time_run(dir.path(), &model, Arc::new(source), &questions, Contexts::Unused, n, concurrency).await;
            report(&format!(" over the index {}", index.display()), elapsed);
        }),
        Mode::Distractor => {
            let questions = bench::repository_root().join(DISTRACTOR_QUESTIONS);
            let (contexts, scripts) = distractor_scripts(&questions);
            assert_eq!(contexts.len(), n);
            time_opens(&contexts, 10);
            runtime.block_on(async {
                let model = slow_model_server(scripts).await;
                let source = Arc::new(DistractorSource::new(Profile::Default));
                let elapsed = time_run(dir.path(), &model, source, &questions, Contexts::Required, n, concurrency).await;
                report(" over --docstore distractor (HotpotQA's contexts)", elapsed);
            });
        }
        Mode::Instant => runtime.block_on(async {
            let model = slow_model_server(HashMap::new()).await;
            let questions = write_questions(dir.path(), n);
            let elapsed = time_run(dir.path(), &model, Arc::new(InstantDocstore), &questions, Contexts::Unused, n, concurrency).await;
            report("", elapsed);

            let n_sequential = 5;
            let questions = write_questions(dir.path(), n_sequential);
            let elapsed = time_run(dir.path(), &model, Arc::new(InstantDocstore), &questions, Contexts::Unused, n_sequential, 1).await;
            let per_question = elapsed.as_secs_f64() / n_sequential as f64;
            println!(
                "{n_sequential} questions, --concurrency 1: {:.3} s, {:.3} s a question -> {:.1} s for {n} questions (extrapolated; ideal {:.1} s)",
                elapsed.as_secs_f64(),
                per_question,
                per_question * n as f64,
                ideal_makespan(n, 1).as_secs_f64()
            );

            let (n_large, concurrency_large) = (500, 100);
            let questions = write_questions(dir.path(), n_large);
            let elapsed = time_run(dir.path(), &model, Arc::new(InstantDocstore), &questions, Contexts::Unused, n_large, concurrency_large).await;
            println!(
                "{n_large} questions, --concurrency {concurrency_large}: {:.3} s (ideal {:.1} s); peak memory of the process (VmHWM) {:.1} MB; {}",
                elapsed.as_secs_f64(),
                ideal_makespan(n_large, concurrency_large).as_secs_f64(),
                peak_rss_mb(),
                load_average()
            );
        }),
    }
}
