//! Load on `react-docstore serve`: N keep-alive connections sending ReAct steps (`/v1/step`,
//! each episode Search, Lookup, Lookup, Search with the state carried along) or Search-R1
//! retrievals (`/retrieve`, one query, top 3 with scores), as fast as the server answers.
//! Prints throughput, p50/p99 latency, errors and the server's resident memory at the start and
//! end of each run.
//!
//! ```sh
//! cargo build --release --bin react-docstore --example bench_serve
//! ./target/release/examples/bench_serve --index /work/benchdata-serve/wiki-200k.index \
//!     --queries /work/benchdata-serve/wiki-200k.queries.tsv --connections 64 --seconds 30
//! ```
//!
//! The server is the release binary beside this example (`target/release/react-docstore`),
//! started on a free loopback port and stopped with SIGTERM at the end.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const USAGE: &str = "usage: bench_serve --index DIR --queries FILE [--connections N (64)] \
                     [--seconds N (30)] [--only step|retrieve]";

struct Options {
    index: PathBuf,
    queries: PathBuf,
    connections: usize,
    seconds: u64,
    only: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut index = None;
    let mut queries = None;
    let mut connections = 64;
    let mut seconds = 30;
    let mut only = None;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--index" => index = Some(PathBuf::from(value()?)),
            "--queries" => queries = Some(PathBuf::from(value()?)),
            "--connections" => connections = value()?.parse().map_err(|_| USAGE.to_owned())?,
            "--seconds" => seconds = value()?.parse().map_err(|_| USAGE.to_owned())?,
            "--only" => only = Some(value()?),
            _ => return Err(USAGE.to_owned()),
        }
    }
    Ok(Options {
        index: index.ok_or(USAGE)?,
        queries: queries.ok_or(USAGE)?,
        connections,
        seconds,
        only,
    })
}

/// The server's resident memory, from /proc (Linux).
fn resident_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    errors: u64,
}

/// One connection's loop until `deadline`: steps or retrievals.
async fn connection(
    url: String,
    queries: Arc<Vec<String>>,
    offset: usize,
    kind: &'static str,
    deadline: Instant,
) -> Tally {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let mut tally = Tally::default();
    let mut idx = offset;
    while Instant::now() < deadline {
        let query = &queries[idx % queries.len()];
        idx += 1;
        match kind {
            "step" => {
                let mut state = Value::Null;
                for action in [
                    format!("Search[{query}]"),
                    "Lookup[the]".to_owned(),
                    "Lookup[the]".to_owned(),
                    format!("Search[{}]", queries[(idx * 7) % queries.len()]),
                ] {
                    let started = Instant::now();
                    let answer = client
                        .post(format!("{url}/v1/step"))
                        .json(&json!({"action": action, "state": state}))
                        .send()
                        .await;
                    match answer {
                        Ok(response) if response.status().is_success() => {
                            match response.json::<Value>().await {
                                Ok(body) => {
                                    tally.latencies.push(started.elapsed());
                                    state = body["state"].clone();
                                }
                                Err(_) => tally.errors += 1,
                            }
                        }
                        _ => tally.errors += 1,
                    }
                }
            }
            _ => {
                let started = Instant::now();
                let answer = client
                    .post(format!("{url}/retrieve"))
                    .json(&json!({"queries": [query], "topk": 3, "return_scores": true}))
                    .send()
                    .await;
                match answer {
                    Ok(response) if response.status().is_success() => match response.bytes().await {
                        Ok(_) => tally.latencies.push(started.elapsed()),
                        Err(_) => tally.errors += 1,
                    },
                    _ => tally.errors += 1,
                }
            }
        }
    }
    tally
}

fn percentile(sorted: &[Duration], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx].as_secs_f64() * 1000.0
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let queries: Vec<String> =
        std::io::BufReader::new(std::fs::File::open(&options.queries).expect("the queries file"))
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| line.split('\t').next().map(str::to_owned))
            .filter(|query| !query.is_empty())
            .collect();
    let queries = Arc::new(queries);
    let binary = std::env::current_exe()
        .expect("this example's path")
        .parent()
        .and_then(|examples| examples.parent())
        .expect("target/release")
        .join("react-docstore");
    let mut server = Command::new(&binary)
        .args(["serve", "--listen", "127.0.0.1:0", "--docstore"])
        .arg(format!("index:{}", options.index.display()))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {}: {error}", binary.display()));
    let mut startup = String::new();
    // Held until the server has stopped: it writes its last line there.
    let mut server_stderr = std::io::BufReader::new(server.stderr.take().unwrap());
    server_stderr.read_line(&mut startup).unwrap();
    eprint!("{startup}");
    let address = startup
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split(": ").next())
        .expect("the startup line names the address")
        .to_owned();
    let url = format!("http://{address}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let kinds: Vec<&'static str> = match options.only.as_deref() {
        Some("step") => vec!["step"],
        Some("retrieve") => vec!["retrieve"],
        _ => vec!["step", "retrieve"],
    };
    println!(
        "{} connections, {} s each, index {}, {} queries",
        options.connections,
        options.seconds,
        options.index.display(),
        queries.len()
    );
    for kind in kinds {
        let rss_before = resident_mib(server.id());
        let started = Instant::now();
        let deadline = started + Duration::from_secs(options.seconds);
        let tallies = runtime.block_on(async {
            let tasks: Vec<_> = (0..options.connections)
                .map(|offset| {
                    tokio::spawn(connection(
                        url.clone(),
                        queries.clone(),
                        offset * 31,
                        kind,
                        deadline,
                    ))
                })
                .collect();
            let mut tallies = Vec::new();
            for task in tasks {
                tallies.push(task.await.unwrap());
            }
            tallies
        });
        let elapsed = started.elapsed().as_secs_f64();
        let mut latencies: Vec<Duration> = tallies
            .iter()
            .flat_map(|tally| tally.latencies.iter().copied())
            .collect();
        let errors: u64 = tallies.iter().map(|tally| tally.errors).sum();
        latencies.sort();
        let rss_after = resident_mib(server.id());
        let endpoint = if kind == "step" { "/v1/step" } else { "/retrieve" };
        println!(
            "{endpoint:<10} {:>9.0} requests/s  p50 {:.2} ms  p99 {:.2} ms  {} requests, {errors} errors  server resident {:.0} MiB -> {:.0} MiB",
            latencies.len() as f64 / elapsed,
            percentile(&latencies, 0.50),
            percentile(&latencies, 0.99),
            latencies.len(),
            rss_before,
            rss_after,
        );
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let mut last = String::new();
    server_stderr.read_line(&mut last).unwrap();
    let status = server.wait().unwrap();
    println!("server stopped: {status}: {}", last.trim_end());
    ExitCode::SUCCESS
}
