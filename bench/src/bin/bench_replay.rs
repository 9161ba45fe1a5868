//! Benchmark: replays every recorded run under `fixtures/runs/` and prints how long it took.
//!
//! `cargo run --release --bin bench_replay`

use std::time::Instant;

use react_docstore::agent::trace::TracePrinter;
use react_docstore::apps::replay::replay_run;
use react_docstore::record::run::Run;

fn main() -> anyhow::Result<()> {
    let root = bench::repository_root().join("fixtures/runs");
    let mut dirs = vec![root.join("langchain"), root.join("synthetic")];
    dirs.extend((1..=5).map(|trial| root.join(format!("reflexion/trial-{trial}"))));
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let read_start = Instant::now();
    let runs: Vec<Run> =
        react_docstore::record::files::recorded_paths(&dirs, react_docstore::record::files::Wanted::Runs)?
            .iter()
            .map(|path| Run::read(path))
            .collect::<Result<_, _>>()?;
    let read = read_start.elapsed();
    let mut best = f64::INFINITY;
    let mut n_correct = 0;
    for _ in 0..5 {
        let start = Instant::now();
        n_correct = 0;
        for run in &runs {
            let episode = runtime.block_on(replay_run(
                run,
                None,
                None,
                &|_, _| None,
                &mut TracePrinter::silent(),
            ));
            n_correct += usize::from(episode.run.em.unwrap_or(0));
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "replayed {} runs ({} correct) in {:.1} ms (best of 5; reading and parsing the files: {:.1} ms)",
        runs.len(),
        n_correct,
        best * 1e3,
        read.as_secs_f64() * 1e3
    );
    Ok(())
}
