//! A long fuzz run of the parsers that read outside text — the action grammar and the calculator
//! (model text) and the HTML reader (`parse_search_page`, server pages) — on the generators and
//! checks of `bench/src/targets.rs`. Prints inputs/s and the panics caught, per parser.
//!
//! `cargo run --release --bin fuzz -- --seconds 60`

use bench::targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
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

fn main() -> anyhow::Result<ExitCode> {
    let seconds = seconds_from_args()?;
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
    let elapsed = started.elapsed().as_secs_f64();
    let n_inputs: u64 = targets.iter().map(|target| target.n_inputs).sum();
    let n_panics: u64 = targets.iter().map(|target| target.n_panics).sum();
    println!(
        "{n_inputs} inputs in {elapsed:.0} s ({:.0} inputs/s), {n_panics} panics",
        n_inputs as f64 / elapsed
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
    Ok(if n_panics == 0 {
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
