//! The report's HTML (maud templates: every string from a results file is escaped by the engine):
//! the comparisons, each file's summary and pictures, and the frame the question table's script
//! fills from the embedded data.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::analysis::attempts::{AttemptScore, AttemptsSummary};
use crate::analysis::compare::{Comparison, Difference};
use crate::analysis::prices::Tokens;
use crate::analysis::report::charts::{BarChart, Layout, Series, Unit, XAxis, histogram, share_bins};
use crate::analysis::report::{AttemptsView, FileView, Report};
use crate::analysis::summary::Scores;
use crate::base::task::Task;
use crate::record::run::Stopped;

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("script.js");
/// No request leaves the page: no fetch, no image, no font from anywhere; only its own inline
/// style and script run.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const STOPS: [Stopped; 4] = [
    Stopped::Finish,
    Stopped::MaxSteps,
    Stopped::RepeatedAction,
    Stopped::Error,
];

pub(super) fn render(report: &Report) -> String {
    let names: Vec<String> = report.files.iter().map(|file| file.scored.name()).collect();
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(POLICY);
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="generator" content=(concat!("react-docstore ", env!("CARGO_PKG_VERSION")));
                title { "Evaluation report — " (names.join(" vs ")) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    h1 { "Evaluation report" }
                    p.files {
                        @for (idx, name) in names.iter().enumerate() {
                            span.file-tag { span.letter { (letter(idx)) } " " (name) }
                        }
                    }
                    nav #toc aria-label="contents" {
                        @if !report.comparisons.is_empty() { a href="#comparison" { "Comparison" } }
                        a href="#summary" { "Summary" }
                        a href="#pictures" { "Pictures" }
                        a href="#questions" { "Every question (" (report.n_questions) ")" }
                    }
                }
                @if !report.comparisons.is_empty() {
                    section #comparison {
                        h2 { "Comparison" }
                        @for (idx, comparison) in report.comparisons.iter().enumerate() {
                            (comparison_table(comparison, &names[0], &names[idx + 1], idx + 1))
                        }
                    }
                }
                section #summary {
                    h2 { "Summary" }
                    (summary_table(&report.files))
                }
                section #pictures {
                    h2 { "Pictures" }
                    @for (idx, file) in report.files.iter().enumerate() {
                        h3 { span.letter { (letter(idx)) } " " (names[idx]) }
                        div.charts {
                            @for chart in charts(file, report.has_questions) { (chart.render()) }
                            @if let Some(reduced) = &file.scored.reduced {
                                p.note { "Several attempts a question: the figures count each question by the " (reduced) "." }
                            }
                            @if !acts(file) && file.scored.runs.iter().all(|run| run.run().vote.is_none()) {
                                p.note { (file.method) " answers in one completion: no steps or votes to draw." }
                            }
                            @if !records_tokens(file) {
                                p.note { "No token counts recorded in this file (its model server did not report usage)." }
                            }
                        }
                    }
                }
                section #questions {
                    h2 { "Every question" }
                    div #controls {
                        label { "Show " select #status {
                            option value="all" { "all" }
                            option value="right" { "right" }
                            option value="wrong" { "wrong" }
                            option value="error" { "error" }
                            @if report.files.len() > 1 { option value="flipped" { "flipped" } }
                        } }
                        label { "stopped by " select #stop {
                            option value="" { "any" }
                            @for stop in STOPS { option value=(stop.as_str()) { (stop.as_str()) } }
                        } }
                        @if report.files.len() > 1 {
                            label { "in " select #file {
                                @for (idx, name) in names.iter().enumerate() {
                                    option value=(idx) { (letter(idx)) " " (name) }
                                }
                            } }
                        }
                        label { "containing " input #search type="search" placeholder="id, question, answer, gold" autocomplete="off"; }
                        span #count aria-live="polite" {}
                    }
                    p #legend {
                        @if report.files.len() > 1 {
                            span.swatch.flip {} " flipped: right in one file, wrong in the other (listed first). "
                        }
                        "Answers: " span.right { "right" } ", " span.wrong { "wrong" } ", " span.error { "error" } ". "
                        "A cut cell shows its whole text when you hover it; a click (or Enter) opens the question, its gold and every file's answer and trajectory below the table."
                    }
                    div #table role="table" aria-label="questions" {
                        div #table-body {
                            div #table-head role="row" {}
                            div #table-spacer {}
                        }
                    }
                    div #detail aria-live="polite" { p.hint { "Click a question to see its trajectories." } }
                    noscript { p { "The question table needs JavaScript; the summary above does not." } }
                }
                script #report-data type="application/json" { (PreEscaped(&report.data_json)) }
                script { (PreEscaped(SCRIPT)) }
            }
        }
    };
    page.into_string()
}

/// `A`, `B`, … `Z`, then `F27`, … for the files in order.
fn letter(idx: usize) -> String {
    match u8::try_from(idx).ok().filter(|&idx| idx < 26) {
        Some(idx) => char::from(b'A' + idx).to_string(),
        None => format!("F{}", idx + 1),
    }
}

/// A figure with its exact value in `data-value` (what the browser test reads).
fn figure(field: &str, value: f64, text: String) -> Markup {
    html! { span.figure data-field=(field) data-value=(value) { (text) } }
}

fn count(field: &str, value: usize) -> Markup {
    figure(field, value as f64, value.to_string())
}

fn difference(field: &str, diff: &Difference) -> Markup {
    html! {
        (figure(&format!("{field}.value"), diff.value, format!("{:+.4}", diff.value)))
        " (95% CI "
        (figure(&format!("{field}.ci_low"), diff.ci_low, format!("{:+.4}", diff.ci_low)))
        " to "
        (figure(&format!("{field}.ci_high"), diff.ci_high, format!("{:+.4}", diff.ci_high)))
        ")"
    }
}

fn comparison_table(comparison: &Comparison, a_name: &str, b_name: &str, b_idx: usize) -> Markup {
    let em = match comparison.task {
        Task::Fever => "accuracy",
        Task::HotpotQa => "EM",
    };
    let b_letter = letter(b_idx);
    html! {
        div.comparison data-b=(b_idx) {
            h3 { span.letter { "A" } " " (a_name) " vs " span.letter { (b_letter) } " " (b_name) }
            p {
                (count("n", comparison.n)) " questions in both files ("
                (count("only_in_a", comparison.only_in_a)) " only in A, "
                (count("only_in_b", comparison.only_in_b)) " only in " (b_letter) ")."
            }
            div.counts {
                div.cell.both-right { b { (count("both_right", comparison.both_right)) } " both right" }
                div.cell.a-only { b { (count("a_only", comparison.a_only)) } " only A right" }
                div.cell.b-only { b { (count("b_only", comparison.b_only)) } " only " (b_letter) " right" }
                div.cell.both-wrong { b { (count("both_wrong", comparison.both_wrong)) } " both wrong" }
            }
            table.figures {
                tr { th {} th { "A" } th { (b_letter) } th { (b_letter) " − A" } }
                tr {
                    th { (em) }
                    td { (figure("a.em", comparison.a.em, format!("{:.4}", comparison.a.em))) }
                    td { (figure("b.em", comparison.b.em, format!("{:.4}", comparison.b.em))) }
                    td { (difference("em_diff", &comparison.em_diff)) }
                }
                @if comparison.task == Task::HotpotQa {
                    tr {
                        th { "F1" }
                        td { (figure("a.f1", comparison.a.f1, format!("{:.4}", comparison.a.f1))) }
                        td { (figure("b.f1", comparison.b.f1, format!("{:.4}", comparison.b.f1))) }
                        td { (difference("f1_diff", &comparison.f1_diff)) }
                    }
                }
            }
            p {
                "McNemar's exact two-sided p = "
                (figure("mcnemar_p", comparison.mcnemar_p, format!("{:.4}", comparison.mcnemar_p)))
                " on " (comparison.a_only + comparison.b_only) " discordant pairs; intervals: paired bootstrap, "
                (comparison.resamples) " resamples of the questions, seed " (comparison.seed) "."
            }
        }
    }
}

/// Under a file's headline figure, what it counts that is no finished answer, when anything.
fn incomplete(file: &FileView) -> Markup {
    html! {
        @if let Some(words) = file.summary.incompleteness().describe() {
            br; span.sub.error { (words) }
        }
    }
}

fn summary_table(files: &[FileView]) -> Markup {
    let is_fever =
        crate::record::evaluation::task_of(files.iter().map(|file| file.scored.task)) == Task::Fever;
    html! {
        table.summary {
            tr { th {} @for (idx, file) in files.iter().enumerate() { th { span.letter { (letter(idx)) } " " (file.scored.name()) } } }
            tr { th { "questions" } @for file in files { td { (file.summary.scores.n) } } }
            @if is_fever {
                tr { th { "accuracy" } @for file in files { td.score { (format!("{:.4}", file.summary.scores.em)) (incomplete(file)) } } }
            } @else {
                tr { th { "EM" } @for file in files { td.score { (format!("{:.4}", file.summary.scores.em)) (incomplete(file)) } } }
                tr { th { "F1" } @for file in files { td.score { (format!("{:.4}", file.summary.scores.f1)) } } }
            }
            @for stop in STOPS {
                tr {
                    th { "stopped: " (stop.as_str()) }
                    @for file in files { td { (file.summary.by_stopped.get(stop.as_str()).map_or(0, |scores| scores.n)) } }
                }
            }
            tr {
                th { "mean steps" }
                @for file in files {
                    td {
                        @if acts(file) {
                            (format!("{:.2}", file.summary.per_question.steps))
                            @if let Some(attempts) = &file.attempts { br; span.sub { "the counted " (attempts.kind) "'s" } }
                        } @else {
                            span title=(format!("{} takes no steps", file.method)) { "—" }
                        }
                    }
                }
            }
            tr {
                th { "mean LLM calls" }
                @for file in files {
                    td {
                        (format!("{:.2}", file.summary.per_question.llm_calls))
                        @if let Some(requests) = file.summary.per_question.requests { br; span.sub { (format!("{requests:.2} requests sent")) } }
                        @if let Some(attempts) = &file.attempts { br; span.sub { (every_attempt(attempts)) } }
                    }
                }
            }
            tr {
                th { "mean tokens (prompt + completion)" }
                @for file in files {
                    td {
                        @if records_tokens(file) {
                            (format!("{:.0}", file.summary.per_question.prompt_tokens + file.summary.per_question.completion_tokens))
                            @if let Some(attempts) = &file.attempts { br; span.sub { (every_attempt(attempts)) } }
                        } @else {
                            span title="its model server did not report usage" { "not recorded" }
                        }
                    }
                }
            }
            (spend_rows(files))
            @if files.iter().any(|file| file.attempts.as_ref().is_some_and(|attempts| attempts.reflect.is_some())) {
                tr {
                    th { "between trials (" code { "--reflect" } ")" }
                    @for file in files {
                        td { (file.attempts.as_ref().and_then(|attempts| attempts.reflect.as_deref()).unwrap_or("—")) }
                    }
                }
            }
            tr { th { "model" } @for file in files { td { (file.model) } } }
            tr { th { "API" } @for file in files { td { (file.api) } } }
            tr { th { "profile" } @for file in files { td { (file.profile) } } }
            tr { th { "method" } @for file in files { td { (file.method) } } }
            tr { th { "docstore (snapshot)" } @for file in files { td { (file.docstore) } } }
        }
    }
}

/// The tokens of each file by kind, in all and a run, and with `--prices` its cost.
fn spend_rows(files: &[FileView]) -> Markup {
    const KINDS: [&str; 5] = [
        "input tokens",
        "of them cached",
        "of them written to the cache",
        "output tokens",
        "of them reasoning",
    ];
    let by_kind = |tokens: &Tokens| {
        [
            tokens.input,
            tokens.cached_input,
            tokens.cache_write,
            tokens.output,
            tokens.reasoning,
        ]
    };
    html! {
        @for (kind, name) in KINDS.iter().enumerate() {
            tr {
                th { (name) " (in all; a run)" }
                @for file in files {
                    @let totals = &file.spend.tokens;
                    td {
                        @if totals.runs_with_tokens == 0 {
                            span title="its model server did not report usage" { "not recorded" }
                        } @else {
                            @let count = by_kind(&totals.tokens)[kind];
                            (count)
                            br; span.sub { (format!("{:.0}", count as f64 / totals.runs.max(1) as f64)) " a run" }
                        }
                    }
                }
            }
        }
        @if files.iter().any(|file| file.spend.cost.is_some()) {
            tr {
                th { "cost (" code { "--prices" } ")" }
                @for file in files {
                    td {
                        @if let Some(cost) = &file.spend.cost {
                            @if cost.priced > 0 {
                                (cost.total)
                                br; span.sub { (format!("${:.6} a run, over {}", cost.per_run, crate::base::output::counted(cost.priced, "run", "runs"))) }
                            }
                            @if !cost.unpriced_models.is_empty() {
                                br; span.sub.error { "no price for " (cost.unpriced_models.join(", ")) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Whether any run of `file` took ReAct or Act steps (a method that acts).
fn acts(file: &FileView) -> bool {
    file.scored.runs.iter().any(|run| run.run().method().acts())
}

/// Whether any run of `file` recorded token counts.
fn records_tokens(file: &FileView) -> bool {
    file.scored.runs.iter().any(|run| run.tokens() > 0)
}

/// What a question's calls and tokens count in a file of several attempts a question.
fn every_attempt(attempts: &AttemptsView) -> String {
    if attempts.reflection_calls {
        format!("every {}'s, reflection calls included", attempts.kind)
    } else {
        format!("every {}'s", attempts.kind)
    }
}

fn charts(file: &FileView, has_questions: bool) -> Vec<BarChart> {
    let runs = &file.scored.runs;
    let mut charts = Vec::new();
    // Steps: the runs of a method that acts (CoT, Standard and CoT-SC take none).
    let acting: Vec<(usize, bool)> = runs
        .iter()
        .filter(|run| run.run().method().acts())
        .map(|run| (run.run().steps.len(), run.is_right()))
        .collect();
    if !acting.is_empty() {
        let (labels, right, wrong) = right_and_wrong_by(&acting, 0);
        let all = right
            .iter()
            .zip(&wrong)
            .map(|(right, wrong)| right + wrong)
            .collect();
        charts.push(BarChart {
            title: "Steps per question".to_owned(),
            x_label: "steps",
            labels: labels.clone(),
            x_axis: XAxis::Numbers,
            series: vec![Series {
                name: "questions",
                class: "bar-all",
                values: all,
            }],
            layout: Layout::Stacked,
            unit: Unit::Count,
        });
        charts.push(BarChart {
            title: "Right and wrong by steps".to_owned(),
            x_label: "steps",
            labels,
            x_axis: XAxis::Numbers,
            series: right_and_wrong(right, wrong),
            layout: Layout::Stacked,
            unit: Unit::Count,
        });
    }
    // Votes: the runs that sampled and voted (CoT-SC, alone or in a backoff).
    let voted: Vec<(&crate::record::run::Vote, bool)> = runs
        .iter()
        .filter_map(|run| run.run().vote.as_ref().map(|vote| (vote, run.is_right())))
        .collect();
    if !voted.is_empty() {
        let of = if voted.len() < runs.len() {
            format!(" ({} of {} voted)", voted.len(), runs.len())
        } else {
            String::new()
        };
        let samples: Vec<(usize, bool)> = voted.iter().map(|(vote, right)| (vote.samples, *right)).collect();
        let fewest = samples.iter().map(|(n, _)| *n).min().unwrap_or(0);
        let (labels, right, wrong) = right_and_wrong_by(&samples, fewest);
        charts.push(BarChart {
            title: format!("Samples per question{of}"),
            x_label: "samples (CoT-SC)",
            labels,
            x_axis: XAxis::Numbers,
            series: right_and_wrong(right, wrong),
            layout: Layout::Stacked,
            unit: Unit::Count,
        });
        let shares = |right: bool| -> Vec<f64> {
            voted
                .iter()
                .filter(|(_, is_right)| *is_right == right)
                .map(|(vote, _)| vote.share())
                .collect()
        };
        let (right, wrong) = (share_bins(&shares(true)), share_bins(&shares(false)));
        charts.push(BarChart {
            title: format!("Vote share of the majority{of}"),
            x_label: "votes for the answer given, of the samples",
            labels: right.ranges,
            x_axis: XAxis::Edges(right.edges),
            series: right_and_wrong(right.counts, wrong.counts),
            layout: Layout::Stacked,
            unit: Unit::Count,
        });
    }
    let tokens: Vec<u64> = runs
        .iter()
        .map(|run| run.tokens())
        .filter(|&tokens| tokens > 0)
        .collect();
    if let Some(bins) = histogram(&tokens, 12) {
        let of = if tokens.len() < runs.len() {
            format!(" ({} of {} counted)", tokens.len(), runs.len())
        } else {
            String::new()
        };
        charts.push(BarChart {
            title: format!("Tokens per question{of}"),
            x_label: "tokens a question (prompt + completion)",
            labels: bins.ranges,
            x_axis: XAxis::Edges(bins.edges),
            series: vec![Series {
                name: "questions",
                class: "bar-all",
                values: bins.counts,
            }],
            layout: Layout::Stacked,
            unit: Unit::Count,
        });
    }
    if has_questions {
        for (title, groups) in [
            ("By HotpotQA type", &file.summary.by_type),
            ("By HotpotQA level", &file.by_level),
        ] {
            if groups.is_empty() {
                continue;
            }
            charts.push(scores_chart(title, groups.iter()));
        }
    }
    charts.extend(attempt_charts(file));
    charts
}

/// `(n, right)` pairs counted by `n`, from `from` to the largest: the labels, the right and the
/// wrong counts.
fn right_and_wrong_by(pairs: &[(usize, bool)], from: usize) -> (Vec<String>, Vec<f64>, Vec<f64>) {
    let most = pairs.iter().map(|(n, _)| *n).max().unwrap_or(from).max(from);
    let mut right = vec![0.0; most - from + 1];
    let mut wrong = vec![0.0; most - from + 1];
    for &(n, is_right) in pairs {
        let bucket = if is_right { &mut right } else { &mut wrong };
        bucket[n - from] += 1.0;
    }
    let labels = (from..=most).map(|n| n.to_string()).collect();
    (labels, right, wrong)
}

fn right_and_wrong(right: Vec<f64>, wrong: Vec<f64>) -> Vec<Series> {
    vec![
        Series {
            name: "right",
            class: "bar-right",
            values: right,
        },
        Series {
            name: "wrong",
            class: "bar-wrong",
            values: wrong,
        },
    ]
}

/// A file of trials: the share of its questions right so far after each trial (Reflexion's
/// figure); of epochs: pass@k for each k.
fn attempt_charts(file: &FileView) -> Option<BarChart> {
    let scores: Vec<AttemptScore> = file
        .scored
        .attempts
        .iter()
        .map(|run| AttemptScore {
            id: run.id().to_owned(),
            attempt: run.run().attempt(),
            em: run.score.em,
            f1: run.score.f1,
            answer: run.run().answer.clone(),
        })
        .collect();
    let ids: Vec<&str> = file.scored.runs.iter().map(|run| run.id()).collect();
    let summary = AttemptsSummary::of(&scores, &ids);
    let n_questions = file.scored.runs.len().max(1) as f64;
    if !summary.trials.is_empty() {
        return Some(BarChart {
            title: "Right so far, by trial".to_owned(),
            x_label: "trial",
            labels: summary.trials.iter().map(|row| row.trial.to_string()).collect(),
            x_axis: XAxis::Numbers,
            series: vec![Series {
                name: "right so far",
                class: "bar-right",
                values: summary
                    .trials
                    .iter()
                    .map(|row| row.right_so_far as f64 / n_questions)
                    .collect(),
            }],
            layout: Layout::Stacked,
            unit: Unit::Fraction,
        });
    }
    let epochs = summary.epochs?;
    Some(BarChart {
        title: format!("pass@k over {} epochs", epochs.epochs),
        x_label: "k",
        labels: epochs.pass_at.0.iter().map(|(k, _)| k.to_string()).collect(),
        x_axis: XAxis::Numbers,
        series: vec![Series {
            name: "pass@k",
            class: "bar-right",
            values: epochs.pass_at.0.iter().map(|(_, value)| *value).collect(),
        }],
        layout: Layout::Stacked,
        unit: Unit::Fraction,
    })
}

fn scores_chart<'a>(title: &str, groups: impl Iterator<Item = (&'a String, &'a Scores)>) -> BarChart {
    let (labels, scores): (Vec<String>, Vec<Scores>) = groups
        .map(|(name, scores)| (format!("{name} ({})", scores.n), *scores))
        .unzip();
    BarChart {
        title: title.to_owned(),
        x_label: "(questions)",
        labels,
        x_axis: XAxis::Names,
        series: vec![
            Series {
                name: "EM",
                class: "bar-em",
                values: scores.iter().map(|scores| scores.em).collect(),
            },
            Series {
                name: "F1",
                class: "bar-f1",
                values: scores.iter().map(|scores| scores.f1).collect(),
            },
        ],
        layout: Layout::SideBySide,
        unit: Unit::Fraction,
    }
}
