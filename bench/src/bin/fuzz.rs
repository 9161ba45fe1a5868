//! A long fuzz run of the parsers that read outside text — the action grammar and the calculator
//! (model text), the HTML reader (`parse_search_page`, server pages) and the readers of run files
//! (`replay`, `export`, `score`, `merge` on mutated results lines) — on the generators and checks
//! of `bench/src/targets.rs`. Prints inputs/s and the panics caught, per target.
//!
//! `cargo run --release --bin fuzz -- --seconds 60`
//!
//! An allocation that fails aborts the process, which no `catch_unwind` sees: the readers of run
//! files are fuzzed in a child process (this program again, `--child`) whose address space is
//! capped at 4 GiB, so an unbounded allocation fails there at once. The child writes each input
//! to a file before checking it; when it dies of a signal, the parent counts an abort, keeps that
//! input, and starts another child for the time left.

use bench::targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::TestRunner;

/// One parser under fuzzing and what it went through.
struct Target {
    name: &'static str,
    inputs: BoxedStrategy<String>,
    check: fn(&str),
    n_inputs: u64,
    n_panics: u64,
    first_panic: Option<String>,
    busy: Duration,
}

impl Target {
    fn new(name: &'static str, inputs: BoxedStrategy<String>, check: fn(&str)) -> Target {
        Target {
            name,
            inputs,
            check,
            n_inputs: 0,
            n_panics: 0,
            first_panic: None,
            busy: Duration::ZERO,
        }
    }

    /// Generates one input and checks it, counting a panic instead of dying of it.
    fn fuzz_one(&mut self, runner: &mut TestRunner) -> anyhow::Result<()> {
        let started = Instant::now();
        let input = self
            .inputs
            .new_tree(runner)
            .map_err(|reason| anyhow::anyhow!("cannot generate an input: {reason}"))?
            .current();
        let check = self.check;
        if catch_unwind(AssertUnwindSafe(|| check(&input))).is_err() {
            self.n_panics += 1;
            self.first_panic.get_or_insert(input);
        }
        self.n_inputs += 1;
        self.busy += started.elapsed();
        Ok(())
    }

    fn rate(&self) -> f64 {
        self.n_inputs as f64 / self.busy.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// The child's address space: far more than any input needs, far less than an unbounded count asks.
const CHILD_MEMORY_BYTES: u64 = 4 << 30;

fn main() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [child, seconds, last] = args.as_slice()
        && child == "--child"
    {
        return run_child(seconds.parse()?, Path::new(last));
    }
    let seconds = seconds_from_args()?;
    let children = std::thread::spawn(move || run_children(seconds));
    // Panics are counted and the first input of each kept; the default hook would print each one.
    std::panic::set_hook(Box::new(|_| {}));
    let mut runner = TestRunner::default();
    let mut targets = [
        Target::new(
            "action grammar",
            targets::completion().boxed(),
            targets::check_grammar,
        ),
        Target::new(
            "calculator",
            targets::expression().boxed(),
            targets::check_calculator,
        ),
        Target::new("HTML reader", targets::html().boxed(), targets::check_html),
    ];
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    while Instant::now() < deadline {
        for target in &mut targets {
            for _ in 0..64 {
                target.fuzz_one(&mut runner)?;
            }
        }
    }
    let _ = std::panic::take_hook();
    let run_files = children
        .join()
        .map_err(|_| anyhow::anyhow!("the children's thread panicked"))??;
    let elapsed = started.elapsed().as_secs_f64();
    let n_inputs: u64 = targets.iter().map(|target| target.n_inputs).sum::<u64>() + run_files.n_inputs;
    let n_panics: u64 = targets.iter().map(|target| target.n_panics).sum::<u64>() + run_files.n_panics;
    println!(
        "{n_inputs} inputs in {elapsed:.0} s ({:.0} inputs/s), {n_panics} panics, {} aborts",
        n_inputs as f64 / elapsed,
        run_files.n_aborts
    );
    for target in &targets {
        println!(
            "  {:<15} {:>10} inputs {:>10.0} inputs/s {:>4} panics",
            target.name,
            target.n_inputs,
            target.rate(),
            target.n_panics
        );
        if let Some(input) = &target.first_panic {
            println!("    first panicking input: {input:?}");
        }
    }
    println!(
        "  {:<15} {:>10} inputs {:>10.0} inputs/s {:>4} panics {:>4} aborts (in a child, memory capped at {} GiB)",
        "run files",
        run_files.n_inputs,
        run_files.n_inputs as f64 / run_files.busy.max(f64::MIN_POSITIVE),
        run_files.n_panics,
        run_files.n_aborts,
        CHILD_MEMORY_BYTES >> 30
    );
    if let Some(input) = &run_files.first_failure {
        println!("    first failing input: {input:?}");
    }
    Ok(if n_panics == 0 && run_files.n_aborts == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `--seconds N` (default 10).
fn seconds_from_args() -> anyhow::Result<f64> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(10.0),
        [flag, value] if flag == "--seconds" => match value.parse::<f64>() {
            Ok(seconds) if seconds > 0.0 && seconds.is_finite() => Ok(seconds),
            _ => anyhow::bail!("`--seconds {value}`: expected a positive number of seconds"),
        },
        _ => anyhow::bail!("usage: cargo run --release --bin fuzz -- [--seconds N]"),
    }
}

/// What the children that fuzzed the readers of run files went through.
#[derive(Default)]
struct ChildRuns {
    n_inputs: u64,
    n_panics: u64,
    n_aborts: u64,
    /// Seconds spent checking inputs.
    busy: f64,
    first_failure: Option<String>,
}

/// Children fuzzing the readers of run files for `seconds` in all: a child that dies (an abort,
/// any signal) is counted with the input it was checking, and another takes over.
fn run_children(seconds: f64) -> anyhow::Result<ChildRuns> {
    let dir = tempfile::tempdir()?;
    let last = dir.path().join("last-input");
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut runs = ChildRuns::default();
    while Instant::now() < deadline {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64()
            .max(0.1);
        let _ = std::fs::remove_file(&last);
        let output = std::process::Command::new(std::env::current_exe()?)
            .args(["--child", &left.to_string(), &last.display().to_string()])
            .stderr(std::process::Stdio::null())
            .output()?;
        let report = String::from_utf8_lossy(&output.stdout);
        // The child's counts so far, a line `inputs panics busy_seconds` every 64 inputs and at
        // its end (the last one it wrote counts); then `input: …`, its first panicking input.
        let mut counted = [0.0; 3];
        for line in report.lines() {
            if let Some(input) = line.strip_prefix("input: ") {
                runs.first_failure.get_or_insert(input.to_owned());
                continue;
            }
            let counts: Vec<f64> = line.split(' ').filter_map(|count| count.parse().ok()).collect();
            if let [inputs, panics, busy] = counts[..] {
                counted = [inputs, panics, busy];
            }
        }
        runs.n_inputs += counted[0] as u64;
        runs.n_panics += counted[1] as u64;
        runs.busy += counted[2];
        if !output.status.success() && output.status.code() != Some(1) {
            // Died before its report: what it was checking is in `last`.
            runs.n_aborts += 1;
            runs.n_inputs += 1;
            let input = std::fs::read_to_string(&last).unwrap_or_default();
            runs.first_failure.get_or_insert(input);
        }
    }
    Ok(runs)
}

/// The child: its address space capped, the readers of run files fuzzed for `seconds`, each
/// input written to `last` before it is checked; then one line of counts, and the first
/// panicking input.
fn run_child(seconds: f64, last: &Path) -> anyhow::Result<ExitCode> {
    let limit = libc::rlimit {
        rlim_cur: CHILD_MEMORY_BYTES,
        rlim_max: CHILD_MEMORY_BYTES,
    };
    // SAFETY: `setrlimit` reads the struct given and changes only this process's limit.
    if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
        anyhow::bail!(
            "cannot cap the child's memory: {}",
            std::io::Error::last_os_error()
        );
    }
    std::panic::set_hook(Box::new(|_| {}));
    let mut runner = TestRunner::default();
    let mut target = Target::new(
        "run files",
        targets::run_lines().boxed(),
        targets::check_run_lines,
    );
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < deadline {
        let input = target
            .inputs
            .new_tree(&mut runner)
            .map_err(|reason| anyhow::anyhow!("cannot generate an input: {reason}"))?
            .current();
        std::fs::write(last, &input)?;
        let started = Instant::now();
        let check = target.check;
        if catch_unwind(AssertUnwindSafe(|| check(&input))).is_err() {
            target.n_panics += 1;
            target.first_panic.get_or_insert(input);
        }
        target.n_inputs += 1;
        target.busy += started.elapsed();
        if target.n_inputs.is_multiple_of(64) {
            report_counts(&target)?;
        }
    }
    report_counts(&target)?;
    if let Some(input) = &target.first_panic {
        println!("input: {input:?}");
    }
    Ok(if target.n_panics == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The child's counts so far, on a line of their own, flushed: what the parent reads if the
/// child dies after it.
fn report_counts(target: &Target) -> anyhow::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    writeln!(
        stdout,
        "{} {} {}",
        target.n_inputs,
        target.n_panics,
        target.busy.as_secs_f64()
    )?;
    stdout.flush()?;
    Ok(())
}
