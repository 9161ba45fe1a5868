//! Load on `react-docstore serve`: N keep-alive connections sending ReAct steps (`/v1/step`,
//! each episode Search, Lookup, Lookup, Search with the state carried along), Search-R1
//! retrievals (`/retrieve`, one query, top 3 with scores), or both (`--only mixed`: even
//! connections step, odd ones retrieve).
//!
//! Two ways to load the server:
//!
//! - **Closed loop** (no `--rate`): each connection sends its next request as soon as the last is
//!   answered. It finds the throughput; its latencies are mostly time spent queueing.
//! - **Open loop** (`--rate N`, as wrk2 does): N requests a second spread evenly over the
//!   connections, each request due at a fixed time on its connection's schedule. A request's
//!   latency runs from the time it was *due*, not from when it could be sent, so a server that
//!   stalls is charged for every request that waited behind the stall (no coordinated omission).
//!   `--rate 4000,5000,6000` runs each rate in turn.
//!
//! Prints throughput, p50/p99/p99.9/max latency, errors and the server's resident memory; for
//! steps, the latency of each of the episode's four actions too. `--sample-every S` prints the
//! server's resident memory (VmRSS, anonymous and file-backed apart) every S seconds and a verdict
//! comparing the first and last anonymous figures.
//!
//! ```sh
//! cargo build --release --bin react-docstore --bin bench_serve
//! ./target/release/bench_serve --index /work/benchdata-serve/wiki-200k.index \
//!     --queries /work/benchdata-serve/wiki-200k.queries.tsv --only step --rate 5000 --seconds 60
//! ```
//!
//! The server is the release binary beside this benchmark (`target/release/react-docstore`),
//! started on a free loopback port and stopped with SIGTERM at the end.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bench::cpu;
use serde_json::{Value, json};

const USAGE: &str = "usage: bench_serve --index DIR --queries FILE [--connections N (64)] \
                     [--seconds N (30)] [--only step|retrieve|mixed] [--rate N[,N...]] \
                     [--warmup SECONDS (2 with --rate)] [--sample-every SECONDS] \
                     [--server-threads N] [--server BINARY]";

struct Options {
    index: PathBuf,
    queries: PathBuf,
    connections: usize,
    seconds: u64,
    only: Option<String>,
    /// Open loop: requests a second over all connections, one run per rate.
    rates: Vec<f64>,
    /// Requests due in the first seconds of a run are sent but not counted.
    warmup: Option<u64>,
    /// Print the server's memory every so many seconds.
    sample_every: Option<u64>,
    /// `TOKIO_WORKER_THREADS` for the server.
    server_threads: Option<usize>,
    /// Another build of `react-docstore` to load (to compare two versions).
    server: Option<PathBuf>,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        index: PathBuf::new(),
        queries: PathBuf::new(),
        connections: 64,
        seconds: 30,
        only: None,
        rates: Vec::new(),
        warmup: None,
        sample_every: None,
        server_threads: None,
        server: None,
    };
    let (mut index, mut queries) = (None, None);
    let bad = |arg: &str| format!("bad value for {arg}\n{USAGE}");
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--index" => index = Some(PathBuf::from(value()?)),
            "--queries" => queries = Some(PathBuf::from(value()?)),
            "--connections" => options.connections = value()?.parse().map_err(|_| bad(&arg))?,
            "--seconds" => options.seconds = value()?.parse().map_err(|_| bad(&arg))?,
            "--only" => options.only = Some(value()?),
            "--rate" => {
                options.rates = value()?
                    .split(',')
                    .map(|rate| rate.trim().parse::<f64>().ok().filter(|rate| *rate > 0.0))
                    .collect::<Option<_>>()
                    .ok_or_else(|| bad(&arg))?
            }
            "--warmup" => options.warmup = Some(value()?.parse().map_err(|_| bad(&arg))?),
            "--sample-every" => {
                options.sample_every = Some(
                    value()?
                        .parse()
                        .ok()
                        .filter(|every| *every > 0)
                        .ok_or_else(|| bad(&arg))?,
                )
            }
            "--server-threads" => options.server_threads = Some(value()?.parse().map_err(|_| bad(&arg))?),
            "--server" => options.server = Some(PathBuf::from(value()?)),
            _ => return Err(USAGE.to_owned()),
        }
    }
    options.index = index.ok_or(USAGE)?;
    options.queries = queries.ok_or(USAGE)?;
    if options.connections == 0 {
        return Err(bad("--connections"));
    }
    Ok(options)
}

/// The server's resident memory in MiB, from /proc (Linux): all of it, anonymous, file-backed.
#[derive(Clone, Copy)]
struct Resident {
    total: f64,
    anon: f64,
    file: f64,
    /// Not memory, but what its anonymous part follows (each thread has a stack and may have a
    /// malloc arena).
    threads: f64,
}

fn resident(pid: u32) -> Resident {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    Resident {
        total: field("VmRSS:"),
        anon: field("RssAnon:"),
        file: field("RssFile:"),
        threads: status
            .lines()
            .find_map(|line| line.strip_prefix("Threads:"))
            .and_then(|rest| rest.trim().parse().ok())
            .unwrap_or(f64::NAN),
    }
}

/// The CPU time the server has used so far (user and system), from /proc (Linux).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name may hold spaces: the fields are counted after its closing parenthesis.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |idx: usize| {
        fields
            .get(idx)
            .and_then(|field| field.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; USER_HZ is 100.
    (ticks(11) + ticks(12)) / 100.0
}

/// The four actions of a step episode, apart; retrievals are one kind.
const STEP_KINDS: [&str; 4] = [
    "Search (no page open)",
    "Lookup (1st)",
    "Lookup (2nd)",
    "Search (page open)",
];

#[derive(Default)]
struct Tally {
    /// Per step action (index into [`STEP_KINDS`]), or all in slot 0 for retrievals.
    latencies: [Vec<Duration>; 4],
    errors: u64,
    /// Open loop: requests sent later than due because the connection was still waiting.
    late: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Step,
    Retrieve,
}

/// When one connection sends: at once (closed loop) or on a fixed schedule (open loop).
#[derive(Clone, Copy)]
struct Pace {
    /// The run's start (the schedule's origin).
    start: Instant,
    /// Open loop: the time between two requests on this connection, and this connection's
    /// offset in the first period (the connections are staggered).
    schedule: Option<(Duration, Duration)>,
    /// Requests due before this are not counted.
    counted_from: Instant,
    deadline: Instant,
}

/// One connection's loop until `pace.deadline`.
async fn connection(url: String, queries: Arc<Vec<String>>, offset: usize, kind: Kind, pace: Pace) -> Tally {
    // reqwest has no TLS crypto provider of its own here (`rustls-no-provider`): ring, as the
    // library installs it.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let mut tally = Tally::default();
    let mut idx = offset;
    let mut sent: u32 = 0;
    // When the next request is due: its latency counts from then.
    let mut next_due = || {
        let due = match pace.schedule {
            Some((period, stagger)) => pace.start + stagger + period * sent,
            None => Instant::now(),
        };
        sent += 1;
        due
    };
    let step_url = format!("{url}/v1/step");
    let retrieve_url = format!("{url}/retrieve");
    'run: loop {
        let query = &queries[idx % queries.len()];
        idx += 1;
        match kind {
            Kind::Step => {
                let mut state = Value::Null;
                let actions = [
                    format!("Search[{query}]"),
                    "Lookup[the]".to_owned(),
                    "Lookup[the]".to_owned(),
                    format!("Search[{}]", queries[(idx * 7) % queries.len()]),
                ];
                for (action_idx, action) in actions.into_iter().enumerate() {
                    let due = next_due();
                    if !pace.wait_for(due, &mut tally).await {
                        break 'run;
                    }
                    let answer = client
                        .post(&step_url)
                        .json(&json!({"action": action, "state": state}))
                        .send()
                        .await;
                    let ok = match answer {
                        Ok(response) if response.status().is_success() => {
                            match response.json::<Value>().await {
                                Ok(mut body) => {
                                    state = body["state"].take();
                                    true
                                }
                                Err(_) => false,
                            }
                        }
                        _ => false,
                    };
                    tally.record(&pace, due, ok, action_idx);
                }
            }
            Kind::Retrieve => {
                let due = next_due();
                if !pace.wait_for(due, &mut tally).await {
                    break 'run;
                }
                let answer = client
                    .post(&retrieve_url)
                    .json(&json!({"queries": [query], "topk": 3, "return_scores": true}))
                    .send()
                    .await;
                let ok = match answer {
                    Ok(response) if response.status().is_success() => response.bytes().await.is_ok(),
                    _ => false,
                };
                tally.record(&pace, due, ok, 0);
            }
        }
    }
    tally
}

impl Pace {
    /// Waits until a request due at `due` may go (open loop: until `due`; a request already
    /// overdue goes at once and is counted late). False when it falls after the run's end.
    async fn wait_for(&self, due: Instant, tally: &mut Tally) -> bool {
        if due >= self.deadline {
            return false;
        }
        if self.schedule.is_some() {
            let now = Instant::now();
            if due > now {
                tokio::time::sleep_until(due.into()).await;
            } else if now - due > Duration::from_millis(1) {
                tally.late += 1;
            }
        }
        true
    }
}

impl Tally {
    /// One answered request due at `due`, in latency slot `slot`: its latency from the time it was
    /// due, or an error; those due during the warm-up are not counted.
    fn record(&mut self, pace: &Pace, due: Instant, ok: bool, slot: usize) {
        if due < pace.counted_from {
            return;
        }
        if ok {
            self.latencies[slot].push(due.elapsed());
        } else {
            self.errors += 1;
        }
    }
}

fn percentile(sorted: &[Duration], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[idx].as_secs_f64() * 1000.0
}

fn spread(sorted: &[Duration]) -> String {
    format!(
        "p50 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  max {:.2} ms",
        percentile(sorted, 0.50),
        percentile(sorted, 0.99),
        percentile(sorted, 0.999),
        percentile(sorted, 1.0),
    )
}

/// Prints the server's memory every `every` until `stop`; returns the samples (seconds, memory).
fn sample_memory(
    pid: u32,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(u64, Resident)>> {
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut samples = Vec::new();
        let mut next = started + every;
        while !stop.load(Ordering::Relaxed) {
            if Instant::now() < next {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            let memory = resident(pid);
            let seconds = started.elapsed().as_secs();
            println!(
                "  t={seconds:>4} s  server VmRSS {:>6.1} MiB  RssAnon {:>6.1} MiB  RssFile {:>6.1} MiB  threads {}",
                memory.total, memory.anon, memory.file, memory.threads
            );
            samples.push((seconds, memory));
            next += every;
        }
        samples
    })
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let kinds: Vec<(&str, Vec<Kind>)> = match options.only.as_deref() {
        Some("step") => vec![("/v1/step", vec![Kind::Step])],
        Some("retrieve") => vec![("/retrieve", vec![Kind::Retrieve])],
        Some("mixed") => vec![("mixed", vec![Kind::Step, Kind::Retrieve])],
        None => vec![
            ("/v1/step", vec![Kind::Step]),
            ("/retrieve", vec![Kind::Retrieve]),
        ],
        Some(other) => {
            eprintln!("--only {other}: step, retrieve or mixed\n{USAGE}");
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
    let binary = options.server.clone().unwrap_or_else(|| {
        std::env::current_exe()
            .expect("this benchmark's path")
            .with_file_name("react-docstore")
    });
    let mut command = Command::new(&binary);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--docstore"])
        .arg(format!("index:{}", options.index.display()))
        .stderr(Stdio::piped());
    if let Some(threads) = options.server_threads {
        command.env("TOKIO_WORKER_THREADS", threads.to_string());
    }
    let mut server = command
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
    let rates: Vec<Option<f64>> = if options.rates.is_empty() {
        vec![None]
    } else {
        options.rates.iter().copied().map(Some).collect()
    };
    let warmup = Duration::from_secs(
        options
            .warmup
            .unwrap_or(if options.rates.is_empty() { 0 } else { 2 }),
    );
    println!(
        "{} connections, {} s each ({} s warm-up not counted), index {}, {} queries",
        options.connections,
        options.seconds,
        warmup.as_secs(),
        options.index.display(),
        queries.len()
    );
    let mut errors_in_all = 0;
    for (label, mix) in &kinds {
        for rate in &rates {
            let rss_before = resident(server.id());
            let cpu_before = cpu_seconds(server.id());
            let own_cpu_before = cpu::cpu_seconds();
            let stop_sampling = Arc::new(AtomicBool::new(false));
            let sampler = options
                .sample_every
                .map(|every| sample_memory(server.id(), Duration::from_secs(every), stop_sampling.clone()));
            let start = Instant::now() + Duration::from_millis(50);
            let counted_from = start + warmup;
            let deadline = counted_from + Duration::from_secs(options.seconds);
            let tallies = runtime.block_on(async {
                let tasks: Vec<_> = (0..options.connections)
                    .map(|conn_idx| {
                        let schedule = rate.map(|rate| {
                            let period = Duration::from_secs_f64(options.connections as f64 / rate);
                            (
                                period,
                                period.mul_f64(conn_idx as f64 / options.connections as f64),
                            )
                        });
                        let pace = Pace {
                            start,
                            schedule,
                            counted_from,
                            deadline,
                        };
                        tokio::spawn(connection(
                            url.clone(),
                            queries.clone(),
                            conn_idx * 31,
                            mix[conn_idx % mix.len()],
                            pace,
                        ))
                    })
                    .collect();
                let mut tallies = Vec::new();
                for task in tasks {
                    tallies.push(task.await.unwrap());
                }
                tallies
            });
            stop_sampling.store(true, Ordering::Relaxed);
            let samples = sampler.map(|sampler| sampler.join().unwrap());
            let measured = deadline.duration_since(counted_from).as_secs_f64();
            let mut by_action: [Vec<Duration>; 4] = Default::default();
            for tally in &tallies {
                for (all, one) in by_action.iter_mut().zip(&tally.latencies) {
                    all.extend_from_slice(one);
                }
            }
            let mut latencies: Vec<Duration> = by_action.iter().flatten().copied().collect();
            latencies.sort();
            let errors: u64 = tallies.iter().map(|tally| tally.errors).sum();
            let late: u64 = tallies.iter().map(|tally| tally.late).sum();
            errors_in_all += errors;
            let rss_after = resident(server.id());
            let cpu = cpu_seconds(server.id()) - cpu_before;
            let own_cpu = cpu::cpu_seconds() - own_cpu_before;
            let mode = match rate {
                Some(rate) => format!("open loop at {rate:.0}/s"),
                None => "closed loop".to_owned(),
            };
            let answered = latencies.len() as f64 / measured;
            // Warm-up requests are not counted: CPU time is shared out over all that were sent.
            let all_sent = answered * (measured + warmup.as_secs_f64());
            println!(
                "{label:<10} {mode}: {answered:.0} answered/s  {}  {} requests, {errors} errors, {late} sent late  CPU a request: server {:.0} us, load generator {:.0} us  server resident {:.0} MiB -> {:.0} MiB (anonymous {:.0} -> {:.0})",
                spread(&latencies),
                latencies.len(),
                cpu / all_sent * 1e6,
                own_cpu / all_sent * 1e6,
                rss_before.total,
                rss_after.total,
                rss_before.anon,
                rss_after.anon,
            );
            if mix.contains(&Kind::Step) && mix.len() == 1 {
                for (name, latencies) in STEP_KINDS.iter().zip(&mut by_action) {
                    latencies.sort();
                    println!("    {name:<22} {}", spread(latencies));
                }
            }
            if let Some(samples) = samples {
                verdict(&samples);
            }
        }
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let mut last = String::new();
    server_stderr.read_line(&mut last).unwrap();
    let status = server.wait().unwrap();
    println!("server stopped: {status}: {}", last.trim_end());
    if errors_in_all > 0 || !status.success() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// First against last anonymous memory: flat when it moved by at most 5 % or 4 MiB.
fn verdict(samples: &[(u64, Resident)]) {
    let (Some((first_at, first)), Some((last_at, last))) = (samples.first(), samples.last()) else {
        println!("memory: no sample (the run was shorter than --sample-every)");
        return;
    };
    let peak = samples
        .iter()
        .map(|(_, memory)| memory.anon)
        .fold(f64::MIN, f64::max);
    let growth = last.anon - first.anon;
    let flat = growth.abs() <= (first.anon * 0.05).max(4.0);
    println!(
        "memory: anonymous RSS {:.1} MiB at {first_at} s, {:.1} MiB at {last_at} s ({growth:+.1} MiB, {:+.1} %), peak {peak:.1} MiB; file-backed {:.1} -> {:.1} MiB: {}",
        first.anon,
        last.anon,
        growth / first.anon * 100.0,
        first.file,
        last.file,
        if flat { "flat" } else { "NOT flat" },
    );
}
