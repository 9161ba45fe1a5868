//! Benchmark of `report` and `compare` at the scale of a full HotpotQA dev evaluation: two results
//! files of 7,405 runs each, shaped like `eval`'s — the real dev questions and gold answers
//! (`hotpot_dev_v1_simplified.json`, official order, ids = positions as `eval` gives them) with
//! the 512 real Reflexion trajectories (`fixtures/runs/reflexion/`) cycled over them, B shifted
//! by one trial so the files disagree. A run keeps its trajectory and stop; its answer becomes the
//! question's gold where the recorded run was right (so about a third are right, as recorded);
//! tokens, which those runs did not record, are estimated at 4 characters a token over the
//! growing prompt. Prints the time and peak memory of `compare` and `report` (one file, two
//! files), the file sizes, and, when Chromium is installed, what the page costs the browser.
//!
//! `cargo run --release --bin bench_report` (from the repository root; `-- --dev FILE` when
//! the dev file is elsewhere than `../shared/data/react/hotpot_dev_v1_simplified.json`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use react_docstore::analysis::compare::{self, DEFAULT_SEED, ScoredEvaluation};
use react_docstore::analysis::report::{ReportConfig, write_report};
use react_docstore::base::metrics::AnswerScore;
use react_docstore::record::run::Run;
use serde_json::Value;

/// The few-shot prompt a HotpotQA question starts with, in characters (about 1,700 tokens).
const FEWSHOT_CHARS: usize = 6_800;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dev = args
        .iter()
        .position(|arg| arg == "--dev")
        .and_then(|idx| args.get(idx + 1))
        .map_or_else(
            || PathBuf::from("../shared/data/react/hotpot_dev_v1_simplified.json"),
            PathBuf::from,
        );
    let questions: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&dev)?)?;
    let trajectories = recorded_runs(Path::new("fixtures/runs/reflexion"))?;
    println!(
        "{} dev questions, {} recorded trajectories; load average {}",
        questions.len(),
        trajectories.len(),
        load_average()
    );

    let dir = tempfile::tempdir()?;
    let a = dir.path().join("dev.a.results.jsonl");
    let b = dir.path().join("dev.b.results.jsonl");
    write_results(&a, &questions, &trajectories, 0)?;
    write_results(&b, &questions, &trajectories, 103)?;
    for path in [&a, &b] {
        println!(
            "results        {:>6.1} MB  {}",
            mb(path),
            path.file_name().unwrap().to_string_lossy()
        );
    }

    let started = Instant::now();
    let (scored_a, scored_b) = (ScoredEvaluation::read(&a)?, ScoredEvaluation::read(&b)?);
    let comparison = compare::compare(&scored_a, &scored_b, DEFAULT_SEED, compare::Golds::MustAgree)?;
    println!(
        "compare        {:>6.2} s  (read and score both, pair, 10,000 bootstrap resamples); n {}, only A {}, only B {}, p {:.3e}",
        started.elapsed().as_secs_f64(),
        comparison.n,
        comparison.a_only,
        comparison.b_only,
        comparison.mcnemar_p
    );
    drop((scored_a, scored_b));

    let mut pages = Vec::new();
    for (name, results) in [
        ("one file", vec![a.clone()]),
        ("two files", vec![a.clone(), b.clone()]),
    ] {
        let out = dir.path().join(format!("{}.html", name.replace(' ', "-")));
        let started = Instant::now();
        let written = write_report(&ReportConfig {
            results,
            questions: Some(dev.clone()),
            out: out.clone(),
            seed: DEFAULT_SEED,
            golds: compare::Golds::MustAgree,
            prices: None,
        })?;
        println!(
            "report         {:>6.2} s  {name}: {} questions, {:.1} MB of HTML",
            started.elapsed().as_secs_f64(),
            written.questions,
            written.bytes as f64 / 1e6
        );
        pages.push(out);
    }
    println!("peak memory    {:>6.0} MB (whole process)", peak_rss_mb());
    match chromium() {
        Some(chromium) => {
            for page in &pages {
                browser_figures(&chromium, page, dir.path())?;
            }
        }
        None => println!("browser        (no chromium on PATH: not measured)"),
    }
    println!("load average   {}", load_average());
    Ok(())
}

/// The recorded Reflexion runs, in name order.
fn recorded_runs(dir: &Path) -> anyhow::Result<Vec<Run>> {
    let mut paths = Vec::new();
    for trial in std::fs::read_dir(dir)? {
        for entry in std::fs::read_dir(trial?.path())? {
            paths.push(entry?.path());
        }
    }
    paths.sort();
    paths.retain(|path| path.extension().is_some_and(|ext| ext == "json"));
    paths.iter().map(|path| Ok(Run::read(path)?)).collect()
}

/// One results line per dev question: the trajectory `(idx + offset) % n` on that question.
fn write_results(
    path: &Path,
    questions: &[Value],
    trajectories: &[Run],
    offset: usize,
) -> anyhow::Result<()> {
    let mut text = String::new();
    for (idx, question) in questions.iter().enumerate() {
        let source = &trajectories[(idx + offset) % trajectories.len()];
        let mut run = source.clone();
        let gold = question["answer"].as_str().unwrap_or_default().to_owned();
        let was_right = AnswerScore::new(
            source.answer.as_deref().unwrap_or(""),
            source.gold.as_deref().unwrap_or(""),
        )
        .em;
        run.id = Some(idx.to_string());
        run.question = question["question"].as_str().unwrap_or_default().to_owned();
        if was_right {
            run.answer = Some(gold.clone());
        }
        run.gold = Some(gold);
        run.fewshot = Some("hotpotqa".to_owned());
        let mut prompt_chars = FEWSHOT_CHARS + run.question.len();
        for step in &run.steps {
            let completion: usize = step.completions.iter().map(String::len).sum();
            run.usage.llm_calls += 1;
            run.usage.prompt_tokens += (prompt_chars / 4) as u64;
            run.usage.completion_tokens += (completion / 4) as u64;
            prompt_chars += completion + step.observation.as_deref().map_or(0, str::len) + 20;
        }
        run.score();
        text.push_str(&serde_json::to_string(&run)?);
        text.push('\n');
    }
    std::fs::write(path, text)?;
    Ok(())
}

/// The page in headless Chromium with a timing script appended: the time to a drawn table (HTML
/// parsed, data parsed, first rows drawn), the rows in the document, and the time of a filter,
/// a sort and a jump to the middle of the table, each until its rows are drawn.
fn browser_figures(chromium: &Path, page: &Path, dir: &Path) -> anyhow::Result<()> {
    const TIMING: &str = r#"<script>
(function () {
  var out = { drawn_ms: Math.round(performance.now()) };
  out.rows_in_dom = document.querySelectorAll('#table-spacer .row').length;
  out.count = document.getElementById('count').textContent;
  var t = performance.now();
  var status = document.getElementById('status'); status.value = 'wrong'; status.dispatchEvent(new Event('change'));
  out.filter_ms = Math.round(performance.now() - t);
  out.after_filter = document.getElementById('count').textContent;
  t = performance.now();
  document.querySelector('#table-head button[data-key="question"]').click();
  out.sort_ms = Math.round(performance.now() - t);
  t = performance.now();
  var body = document.getElementById('table-body'); body.scrollTop = body.scrollHeight / 2; body.dispatchEvent(new Event('scroll'));
  window.dispatchEvent(new Event('resize'));
  out.scroll_ms = Math.round(performance.now() - t);
  out.rows_after_scroll = document.querySelectorAll('#table-spacer .row').length;
  var pre = document.createElement('pre'); pre.id = 'timing'; pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
})();
</script>"#;
    let html = std::fs::read_to_string(page)?;
    let timed = dir.join("timed.html");
    std::fs::write(&timed, html.replacen("</body>", &format!("{TIMING}</body>"), 1))?;
    let started = Instant::now();
    let output = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--window-size=1400,1000",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.join("chromium-profile").display()
        ))
        .arg(format!("file://{}", timed.display()))
        .output()?;
    let wall = started.elapsed().as_secs_f64();
    let dom = String::from_utf8_lossy(&output.stdout);
    let figures = dom
        .split("<pre id=\"timing\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or("(no figures: the page did not finish)");
    println!(
        "browser        {}: {figures} (chromium start to exit {wall:.1} s)",
        page.file_name().unwrap().to_string_lossy()
    );
    Ok(())
}

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

fn mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |meta| meta.len() as f64 / 1e6)
}

fn peak_rss_mb() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    usage.ru_maxrss as f64 / 1024.0
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}
