//! `report`: the page of real Reflexion trials with hostile text planted in every field the page
//! shows (question, gold, answer, thought, action, observation, error, model, docstore, the
//! question file's type and level, a file name) — checked in the HTML, then driven in headless
//! Chromium (the system's package, which `.ci/run` installs): no console error, no request, the
//! comparison's figures equal `compare --json`'s, filtering and opening a trajectory work, nothing
//! hostile runs and every planted string shows as text.

use std::path::{Path, PathBuf};
use std::process::Command;

use react_docstore::base::metrics::AnswerScore;
use serde_json::Value;

use super::compare::{
    TRIAL_1, TRIAL_1_BUDGET_3, TRIAL_3, compare_json, react_docstore, read_lines, write_lines,
};
use crate::fixture;

const HOSTILE_QUESTION: &str =
    "<img src=x onerror=\"window.__pwned='question'\"></script><script>window.__pwned='script'</script> ";
const HOSTILE_ANSWER: &str = "<b onmouseover=\"window.__pwned='answer'\">bold</b>";
const HOSTILE_OBSERVATION: &str = "<img src=x onerror=\"window.__pwned='observation'\"> ";
const HOSTILE_GOLD: &str = "<img src=x onerror=\"window.__pwned='gold'\"> ";
const HOSTILE_THOUGHT: &str = "<img src=x onerror=\"window.__pwned='thought'\"> ";
const HOSTILE_ACTION: &str = "<img src=x onerror=\"window.__pwned='action'\">";
const HOSTILE_ERROR: &str = "<img src=x onerror=\"window.__pwned='error'\">";
const HOSTILE_MODEL: &str = "<img src=x onerror=\"window.__pwned='model'\">";
const HOSTILE_SNAPSHOT: &str = "<img src=x onerror=\"window.__pwned='docstore'\">";
const HOSTILE_TYPE: &str = "<img src=x onerror=\"window.__pwned='type'\">";
const HOSTILE_LEVEL: &str = "<img src=x onerror=\"window.__pwned='level'\">";
/// A file name is shown by the template, not the script.
const HOSTILE_FILE: &str = "a<img src=x onerror=alert(1)>.jsonl";

/// Every string planted, as it must show.
const PLANTED: [&str; 11] = [
    HOSTILE_QUESTION,
    HOSTILE_ANSWER,
    HOSTILE_OBSERVATION,
    HOSTILE_GOLD,
    HOSTILE_THOUGHT,
    HOSTILE_ACTION,
    HOSTILE_ERROR,
    HOSTILE_MODEL,
    HOSTILE_SNAPSHOT,
    HOSTILE_TYPE,
    HOSTILE_LEVEL,
];

/// Two results files made from the real trials (full budget as A, budget 3 as B) with hostile
/// text in one flipped question whose observations hold its gold answer, and the question file
/// with that question's type and level hostile; returns (A, B, the question file, that id).
fn hostile_pair(dir: &Path) -> (PathBuf, PathBuf, PathBuf, String) {
    let mut runs_a = read_lines(&fixture(TRIAL_1));
    let mut runs_b = read_lines(&fixture(TRIAL_1_BUDGET_3));
    let right = |run: &Value| {
        AnswerScore::new(
            run["answer"].as_str().unwrap_or(""),
            run["gold"].as_str().unwrap(),
        )
        .em
    };
    let holds_gold = |run: &Value| {
        let gold = run["gold"].as_str().unwrap().to_lowercase();
        run["steps"].as_array().unwrap().iter().any(|step| {
            step["observation"]
                .as_str()
                .is_some_and(|text| text.to_lowercase().contains(&gold))
        })
    };
    let idx = (0..runs_a.len())
        .find(|&idx| right(&runs_a[idx]) && !right(&runs_b[idx]) && holds_gold(&runs_a[idx]))
        .expect("a flipped question whose observations hold the gold");
    assert_eq!(runs_a[idx]["id"], runs_b[idx]["id"]);
    let id = runs_a[idx]["id"].as_str().unwrap().to_owned();
    // The gold, hostile too: A's answer is that gold (still right), and the first observation holds it.
    let gold = format!("{HOSTILE_GOLD}{}", runs_a[idx]["gold"].as_str().unwrap());
    for run in [&mut runs_a[idx], &mut runs_b[idx]] {
        run["question"] = Value::from(format!("{HOSTILE_QUESTION}{}", run["question"].as_str().unwrap()));
        run["gold"] = Value::from(gold.as_str());
        let step = &mut run["steps"][0];
        step["thought"] = Value::from(format!("{HOSTILE_THOUGHT}{}", step["thought"].as_str().unwrap()));
        step["action"] = Value::from(format!("{}{HOSTILE_ACTION}", step["action"].as_str().unwrap()));
        if let Some(observation) = step["observation"].as_str() {
            step["observation"] = Value::from(format!("{HOSTILE_OBSERVATION}{gold} {observation}"));
        }
    }
    // The model and docstore, hostile on every line: each file stays one evaluation.
    for run in runs_a.iter_mut().chain(runs_b.iter_mut()) {
        run["model"] = Value::from(HOSTILE_MODEL);
        run["docstore"] = serde_json::json!({"kind": "distractor", "snapshot": HOSTILE_SNAPSHOT});
    }
    runs_a[idx]["answer"] = Value::from(gold.as_str());
    // B's answer: still wrong, now markup; and an error message.
    runs_b[idx]["answer"] = Value::from(HOSTILE_ANSWER);
    runs_b[idx]["error"] = Value::from(HOSTILE_ERROR);
    let (a, b) = (dir.join(HOSTILE_FILE), dir.join("b.jsonl"));
    write_lines(&a, &runs_a);
    write_lines(&b, &runs_b);
    let questions_path = dir.join("questions.json");
    let mut questions: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(fixture("compare/hotpot-qa-distractor-sample.types.json")).unwrap(),
    )
    .unwrap();
    let question = questions
        .iter_mut()
        .find(|question| question["id"] == id.as_str())
        .unwrap();
    question["type"] = Value::from(HOSTILE_TYPE);
    question["level"] = Value::from(HOSTILE_LEVEL);
    std::fs::write(&questions_path, serde_json::to_string(&questions).unwrap()).unwrap();
    (a, b, questions_path, id)
}

/// Runs `report` on `results` into `out` (it must succeed); what it printed.
pub(crate) fn write_report(results: &[&Path], out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["report".to_owned()];
    args.extend(results.iter().map(|path| path.to_str().unwrap().to_owned()));
    args.extend(["--out".to_owned(), out.to_str().unwrap().to_owned()]);
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (status, stdout, stderr) = react_docstore(&args);
    assert_eq!(status, 0, "{stderr}");
    stdout
}

#[test]
fn report_html_escapes_everything_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, questions, _) = hostile_pair(dir.path());
    let out = dir.path().join("report.html");
    let printed = write_report(&[&a, &b], &out, &["--questions", questions.to_str().unwrap()]);
    assert!(printed.contains("100 questions"), "{printed}");
    let html = std::fs::read_to_string(&out).unwrap();
    for planted in PLANTED {
        assert!(!html.contains(planted), "`{planted}` reached the page as markup");
    }
    // What the template writes (model, docstore, the type and level's chart labels) is escaped text.
    for written in [HOSTILE_MODEL, HOSTILE_SNAPSHOT, HOSTILE_TYPE, HOSTILE_LEVEL] {
        let escaped = written
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        let escaped_quotes = escaped.replace('"', "&quot;");
        assert!(
            html.contains(&escaped) || html.contains(&escaped_quotes),
            "`{written}` is not shown as text"
        );
    }
    // The data block and the page's script are the only two script elements, and both close once.
    assert_eq!(
        html.matches("<script").count(),
        2,
        "a script element was injected"
    );
    assert_eq!(html.matches("</script>").count(), 2);
    assert!(!html.contains("<img"), "markup from the data reached the page");
    assert!(!html.contains("<b onmouseover"));
    // The file name, written by the template, is escaped text.
    assert!(
        html.contains("a&lt;img src=x onerror=alert(1)&gt;.jsonl"),
        "file name not escaped"
    );
    // The data block holds the hostile strings, each `<` as \u003c, and reads back as written.
    let data = html
        .split("type=\"application/json\">")
        .nth(1)
        .unwrap()
        .split("</script>")
        .next()
        .unwrap();
    let data: Value = serde_json::from_str(data).unwrap();
    let questions = data["questions"].as_array().unwrap();
    assert_eq!(questions.len(), 100);
    assert!(questions.iter().any(|question| {
        question["question"]
            .as_str()
            .unwrap()
            .starts_with(HOSTILE_QUESTION)
    }));
    // Self-contained: nothing is fetched from anywhere (links within the page aside).
    let html = html.replace("href=\"#", "in-page=\"#");
    for reference in ["http://", "https://", "src=\"", "href=\"", "@import", "url("] {
        assert!(
            !html.contains(reference),
            "the page refers elsewhere: `{reference}`"
        );
    }
}

#[test]
fn report_of_one_file_with_the_question_file_draws_type_and_level() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("one.html");
    let questions = fixture("compare/hotpot-qa-distractor-sample.types.json");
    write_report(
        &[&fixture(TRIAL_1)],
        &out,
        &["--questions", questions.to_str().unwrap()],
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        !html.contains("id=\"comparison\""),
        "one file has nothing to compare"
    );
    for text in [
        "By HotpotQA type",
        "By HotpotQA level",
        "bridge (85)",
        "comparison (15)",
        "hard (100)",
        "Steps per question",
    ] {
        assert!(html.contains(text), "`{text}` is missing");
    }
    // The summary equals Reflexion's trial summary: 34 of 100.
    assert!(html.contains("<td class=\"score\">0.3400</td>"));
}

/// The Chromium of the system (Debian's `chromium`), or a failure saying how to get it.
fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .expect("the report test needs Chromium: `apt-get install chromium` (.ci/run installs it)")
}

/// Catches errors from the first script on, and gives the self-test scripts
/// `window.__selfTest(measure)`: it runs `measure(out, wait)` (`wait(ms)` a promise of `ms`
/// milliseconds), then writes `out`, with the exception `measure` threw and the errors caught,
/// into `<pre id="selftest">`. Inserted at the top of `<head>`.
const CATCH_ERRORS: &str = r#"<script>
window.__errors = [];
window.addEventListener('error', function (event) { window.__errors.push(String(event.message)); });
window.addEventListener('securitypolicyviolation', function (event) { window.__errors.push('blocked ' + event.blockedURI); });
window.__selfTest = async function (measure) {
  var out = {};
  function wait(ms) { return new Promise(function (resolve) { setTimeout(resolve, ms); }); }
  try {
    await measure(out, wait);
  } catch (error) {
    out.exception = String(error && error.stack || error);
  }
  out.errors = window.__errors;
  var pre = document.createElement('pre');
  pre.id = 'selftest';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
};
</script>"#;

/// Drives the page as a reader would, then writes what it saw into `<pre id="selftest">`.
const SELF_TEST: &str = r#"<script>
window.__selfTest(async function (out, wait) {
  function rows() { return Array.prototype.slice.call(document.querySelectorAll('#table-spacer .row')); }
  function set(id, value, kind) { var control = document.getElementById(id); control.value = value; control.dispatchEvent(new Event(kind)); }
  out.figures = {};
  document.querySelectorAll('#comparison [data-field]').forEach(function (node) { out.figures[node.dataset.field] = Number(node.dataset.value); });
  out.count = document.getElementById('count').textContent;
  out.rows = rows().length;
  set('status', 'flipped', 'change');
  out.flipped_ids = rows().map(function (row) { return row.children[0].textContent; });
  set('status', 'all', 'change');
  set('stop', 'max_steps', 'change');
  set('file', '1', 'change');
  out.b_max_steps = rows().map(function (row) { return row.children[row.children.length - 1].textContent; });
  set('stop', '', 'change');
  set('file', '0', 'change');
  document.querySelector('#table-head button[data-key="steps0"]').click();
  document.querySelector('#table-head button[data-key="steps0"]').click();
  out.sorted_steps = rows().map(function (row) { return Number(row.children[6].textContent); });
  var body = document.getElementById('table-body');
  body.scrollTop = body.scrollHeight;
  window.dispatchEvent(new Event('resize'));
  out.last_rows = rows().map(function (row) { return Number(row.style.top.replace('px', '')); });
  out.row_height = rows()[0].getBoundingClientRect().height;
  set('search', HOSTILE_ID, 'input');
  await wait(400);
  var found = rows();
  out.search_rows = found.length;
  out.question_cell = found[0].children[1].textContent;
  found[0].click();
  out.runs_shown = document.querySelectorAll('#detail .run').length;
  out.detail = document.getElementById('detail').textContent;
  out.gold_marks = Array.prototype.map.call(document.querySelectorAll('#detail .observation mark'), function (mark) { return mark.textContent; });
  out.selected = document.querySelectorAll('#table-spacer .row.selected').length;
  set('search', '', 'input');
  await wait(400);
  out.count_after = document.getElementById('count').textContent;
  out.images = document.querySelectorAll('img').length;
  out.bold = document.querySelectorAll('[onmouseover], [onerror]').length;
  out.text = document.body.textContent;
  out.pwned = window.__pwned || null;
  out.resources = performance.getEntriesByType('resource').map(function (entry) { return entry.name; });
});
</script>"#;

/// What a self-test script wrote into `<pre id="selftest">` of the DOM Chromium dumped.
fn self_test_output(dom: &str) -> Value {
    let seen = dom
        .split("<pre id=\"selftest\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "the self-test did not finish: {}",
                &dom[dom.len().saturating_sub(2000)..]
            )
        });
    let seen = seen
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&seen).unwrap()
}

/// Loads `page` in headless Chromium for a few (virtual) seconds; (the DOM, Chromium's stderr).
fn run_in_chromium(page: &Path, profile: &Path) -> (String, String) {
    run_in_chromium_window(page, profile, "1400,1000")
}

/// [`run_in_chromium`] in a window of `size` (`WIDTH,HEIGHT`).
fn run_in_chromium_window(page: &Path, profile: &Path, size: &str) -> (String, String) {
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn report_works_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, questions, hostile_id) = hostile_pair(dir.path());
    let out = dir.path().join("report.html");
    write_report(&[&a, &b], &out, &["--questions", questions.to_str().unwrap()]);
    let html = std::fs::read_to_string(&out).unwrap();
    let under_test = html
        .replacen("<head>", &format!("<head>{CATCH_ERRORS}"), 1)
        .replacen(
            "</body>",
            &format!(
                "{}</body>",
                SELF_TEST.replace("HOSTILE_ID", &format!("{hostile_id:?}"))
            ),
            1,
        );
    let page = dir.path().join("under-test.html");
    std::fs::write(&page, under_test).unwrap();
    let (dom, stderr) = run_in_chromium(&page, &dir.path().join("profile"));

    let console: Vec<&str> = stderr.lines().filter(|line| line.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let seen = self_test_output(&dom);
    assert_eq!(seen.get("exception"), None, "{seen}");
    assert_eq!(seen["errors"], serde_json::json!([]));
    assert_eq!(seen["resources"], serde_json::json!([]), "the page made requests");
    assert_eq!(seen["pwned"], Value::Null, "hostile text ran as script");
    assert_eq!(seen["images"], 0);
    assert_eq!(seen["bold"], 0);

    // The figures at the top are `compare --json`'s, exactly.
    let json = compare_json(&a, &b, &[]);
    let figures = seen["figures"].as_object().unwrap();
    assert_eq!(figures.len(), 18, "{figures:?}");
    for (field, value) in figures {
        let expected = field.split('.').fold(&json, |value, key| &value[key]);
        assert_eq!(value.as_f64(), expected.as_f64(), "`{field}`");
    }

    // Virtualised: fewer rows in the document than questions, all counted.
    assert_eq!(seen["count"], "100 of 100 questions");
    let n_rows = seen["rows"].as_u64().unwrap();
    assert!(n_rows > 10 && n_rows < 100, "{n_rows} rows drawn");
    // Filters: flipped, then B's runs stopped by the step budget.
    let mut flipped_ids: Vec<&str> = seen["flipped_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    let mut expected_ids: Vec<&str> = json["flipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|flip| flip["id"].as_str().unwrap())
        .collect();
    flipped_ids.sort_unstable();
    expected_ids.sort_unstable();
    assert_eq!(flipped_ids, expected_ids);
    let stops = seen["b_max_steps"].as_array().unwrap();
    let budget_3 = read_lines(&b)
        .iter()
        .filter(|run| run["stopped"] == "max_steps")
        .count();
    assert_eq!(stops.len(), budget_3.min(n_rows as usize));
    assert!(stops.iter().all(|stop| stop == "max_steps"));
    // Sorted by A's steps, descending (two clicks); scrolled to the end, the last rows are drawn.
    let sorted: Vec<u64> = seen["sorted_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert!(
        !sorted.is_empty() && sorted.windows(2).all(|pair| pair[0] >= pair[1]),
        "{sorted:?}"
    );
    let most_steps = read_lines(&a)
        .iter()
        .map(|run| run["steps"].as_array().unwrap().len() as u64)
        .max();
    assert_eq!(sorted.first().copied(), most_steps);
    let tops: Vec<f64> = seen["last_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|top| top.as_f64().unwrap())
        .collect();
    let row_height = seen["row_height"].as_f64().unwrap();
    assert!(
        tops.contains(&(99.0 * row_height)),
        "last row not drawn: {tops:?}"
    );
    assert!((tops.len() as u64) < 100, "{} rows drawn", tops.len());
    // Search, then a click: both trajectories, hostile text shown as text, the gold marked.
    assert_eq!(seen["search_rows"], 1);
    assert!(
        seen["question_cell"]
            .as_str()
            .unwrap()
            .starts_with(HOSTILE_QUESTION),
        "{}",
        seen["question_cell"]
    );
    assert_eq!(seen["runs_shown"], 2);
    assert_eq!(seen["selected"], 1);
    let detail = seen["detail"].as_str().unwrap();
    for text in [
        HOSTILE_QUESTION.trim_end(),
        HOSTILE_ANSWER,
        HOSTILE_OBSERVATION.trim_end(),
        HOSTILE_GOLD.trim_end(),
        HOSTILE_THOUGHT.trim_end(),
        HOSTILE_ACTION,
        HOSTILE_ERROR,
        HOSTILE_TYPE,
        HOSTILE_LEVEL,
        "Thought 1: ",
        "Action 1: Search[",
        "Observation 1: ",
    ] {
        assert!(detail.contains(text), "`{text}` is not shown in: {detail}");
    }
    // The files hold no token counts: none is shown as 0.
    assert!(
        detail.contains("tokens not recorded") && !detail.contains(" 0 tokens"),
        "{detail}"
    );
    // The summary table shows the model and the docstore as text.
    let text = seen["text"].as_str().unwrap();
    for planted in [HOSTILE_MODEL, HOSTILE_SNAPSHOT] {
        assert!(text.contains(planted), "`{planted}` is not shown as text");
    }
    let run_a = read_lines(&a)
        .into_iter()
        .find(|run| run["id"] == hostile_id.as_str())
        .unwrap();
    let gold = run_a["gold"].as_str().unwrap().to_lowercase();
    let marks = seen["gold_marks"].as_array().unwrap();
    assert!(
        !marks.is_empty()
            && marks
                .iter()
                .all(|mark| mark.as_str().unwrap().to_lowercase() == gold),
        "{marks:?}"
    );
    assert_eq!(seen["count_after"], "100 of 100 questions");
}

/// What `eval` ends by naming, run by a shell as a user would paste it, writes the report, even
/// when the path holds spaces and quotes.
#[test]
fn the_command_eval_names_writes_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("it's a dir");
    std::fs::create_dir(&sub).unwrap();
    let results = sub.join("dev.results.jsonl");
    std::fs::copy(fixture(TRIAL_1), &results).unwrap();
    let command = react_docstore::analysis::report::report_command(&results);
    assert!(command.starts_with("react-docstore report "), "{command}");
    let binary_dir = Path::new(env!("CARGO_BIN_EXE_react-docstore")).parent().unwrap();
    let path = std::env::join_paths(
        std::iter::once(binary_dir.to_owned()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let output = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(sub.join("dev.results.html")).unwrap();
    assert!(html.contains("dev.results.jsonl"));
}

/// Measures what a reader of a 1280-pixel-wide screen finds: where the way to the table is, what
/// says what yellow means, and whether a cut cell can be read whole.
const LAYOUT_TEST: &str = r##"<script>
(function () {
  var out = {};
  try {
    var link = document.querySelector('#toc a[href="#questions"]');
    out.toc_link_top = link ? link.getBoundingClientRect().top : null;
    out.table_top = document.getElementById('table').getBoundingClientRect().top + window.scrollY;
    var flipRow = document.querySelector('#table-spacer .row.flip');
    out.flip_color = flipRow ? getComputedStyle(flipRow).backgroundColor : null;
    var legend = document.getElementById('legend');
    out.legend = legend ? legend.textContent : null;
    var swatch = legend && legend.querySelector('.swatch');
    out.swatch_color = swatch ? getComputedStyle(swatch).backgroundColor : null;
    out.cut = [];
    document.querySelectorAll('#table-spacer .row > span').forEach(function (cell) {
      if (cell.scrollWidth > cell.clientWidth) out.cut.push([cell.textContent, cell.title]);
    });
  } catch (error) {
    out.exception = String(error && error.stack || error);
  }
  var pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"##;

#[test]
fn on_a_1280_pixel_screen_the_table_is_within_reach_and_its_colours_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    write_report(&[&fixture(TRIAL_1), &fixture(TRIAL_1_BUDGET_3)], &out, &[]);
    let html = std::fs::read_to_string(&out).unwrap();
    let page = dir.path().join("layout.html");
    std::fs::write(
        &page,
        html.replacen("</body>", &format!("{LAYOUT_TEST}</body>"), 1),
    )
    .unwrap();
    let (dom, _) = run_in_chromium_window(&page, &dir.path().join("profile"), "1280,800");
    let seen = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .expect("the layout script ran")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let seen: Value = serde_json::from_str(&seen).unwrap();
    assert_eq!(seen.get("exception"), None, "{seen}");
    // The table starts far down the page; a link to it is on the first screen.
    assert!(seen["table_top"].as_f64().unwrap() > 800.0, "{seen}");
    let link_top = seen["toc_link_top"].as_f64().unwrap_or(f64::INFINITY);
    assert!(
        link_top < 800.0,
        "no link to the table on the first screen: {seen}"
    );
    // The legend says what the flipped rows' yellow is, in that yellow.
    let legend = seen["legend"].as_str().unwrap_or("");
    assert!(
        legend.contains("flipped: right in one file, wrong in the other"),
        "{seen}"
    );
    assert!(!seen["flip_color"].is_null());
    assert_eq!(seen["swatch_color"], seen["flip_color"], "{seen}");
    // Cut cells (the question column at least) carry their whole text.
    let cut = seen["cut"].as_array().unwrap();
    assert!(cut.len() > 10, "{seen}");
    for pair in cut {
        assert_eq!(pair[0], pair[1], "a cut cell without its whole text: {pair}");
    }
}

/// Clicks the question `QUESTION_ID` and writes the question panel's text into `<pre id="selftest">`.
const SHOW_QUESTION: &str = r#"<script>
window.__selfTest(async function (out, wait) {
  var control = document.getElementById('search');
  control.value = QUESTION_ID;
  control.dispatchEvent(new Event('input'));
  await wait(400);
  document.querySelector('#table-spacer .row').click();
  out.detail = document.getElementById('detail').textContent;
});
</script>"#;

/// Opens question `id` of the report `html` in headless Chromium (files in `dir`): what the page
/// showed, checked free of script errors.
fn show_question_in_chromium(html: &str, id: &str, dir: &Path) -> Value {
    let script = SHOW_QUESTION.replace("QUESTION_ID", &format!("{id:?}"));
    measure_in_chromium(html, &script, "1400,1000", dir)
}

#[test]
fn a_backed_off_question_shows_both_phases_and_the_vote_in_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("methods.html");
    let a = crate::fixture("runs/methods/react.results.jsonl");
    let b = crate::fixture("runs/methods/cot-sc-then-react.results.jsonl");
    write_report(&[&a, &b], &out, &[]);
    let html = std::fs::read_to_string(&out).unwrap();
    let seen = show_question_in_chromium(&html, "5adfdef9554299025d62a36b", dir.path());
    let detail = seen["detail"].as_str().unwrap();
    // B's panel: the backoff said, the seven samples and their vote, then ReAct's steps.
    let backoff = detail
        .find("Backed off from cot-sc to react (weak_majority)")
        .expect(detail);
    let vote = detail
        .find("Majority: Bath, Maine — 2 of 7 samples")
        .expect(detail);
    let sample = detail.find("Sample 7: ").expect(detail);
    let react = detail.rfind("Action 4: Finish[Bath, Maine]").expect(detail);
    assert!(backoff < sample && sample < vote && vote < react, "{detail}");
}

#[test]
fn a_trials_file_draws_right_so_far_and_shows_the_attempts_side_by_side_with_their_reflections() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trials.html");
    let trials = crate::fixture("runs/trials/reflexion.results.jsonl");
    write_report(&[&trials], &out, &[]);
    let html = std::fs::read_to_string(&out).unwrap();
    // Reflexion's figure: right so far after each trial, 1, 2, 2 of the 3 questions.
    assert!(html.contains("Right so far, by trial"), "no trial curve");
    for (trial, share) in [(1, "33.3%"), (2, "66.7%"), (3, "66.7%")] {
        assert!(
            html.contains(&format!("<title>{trial} · right so far: {share}</title>")),
            "trial {trial}"
        );
    }
    assert!(html.contains("each question by the final state of its trials"));
    let seen = show_question_in_chromium(&html, "5a78bc6b554299148911f979", dir.path());
    let detail = seen["detail"].as_str().unwrap();
    // Three trials in order, the reflections each one's prompt showed before its steps.
    let at = |needle: &str, from: usize| from + detail[from..].find(needle).expect(needle);
    let trial1 = at("trial 1", 0);
    let weekly = at("Finish[weekly]", trial1);
    let trial2 = at("trial 2", weekly);
    let reflection = at("Reflection 1: I answered from the wrong page.", trial2);
    let monthly = at("Finish[monthly]", reflection);
    let trial3 = at("trial 3", monthly);
    let second = at("Reflection 2: ", trial3);
    at("Finish[monthly]", second);
}

/// Runs `script` (which writes its findings into `<pre id="selftest">`) on the report `html` in
/// a headless Chromium window of `size`: what it wrote, checked free of script errors.
fn measure_in_chromium(html: &str, script: &str, size: &str, dir: &Path) -> Value {
    let under_test = html
        .replacen("<head>", &format!("<head>{CATCH_ERRORS}"), 1)
        .replacen("</body>", &format!("{script}</body>"), 1);
    let page = dir.join("under-test.html");
    std::fs::write(&page, under_test).unwrap();
    let (dom, _) = run_in_chromium_window(&page, &dir.join("profile"), size);
    let seen = self_test_output(&dom);
    assert_eq!(seen.get("exception"), None, "{seen}");
    assert_eq!(seen["errors"], serde_json::json!([]));
    seen
}

/// Every chart as the browser laid it out: its title, the boxes (`getBBox`, in the chart's own
/// units) of the labels under its axis in order, its bars and its axis label.
const MEASURE_CHARTS: &str = r#"<script>
window.__selfTest(function (out) {
  out.charts = [];
  document.querySelectorAll('figure.chart svg').forEach(function (svg) {
    var view = svg.viewBox.baseVal;
    // The labels under the axis (those of the y axis are anchored at their end).
    var ticks = Array.prototype.map.call(svg.querySelectorAll('text.tick[text-anchor="middle"]'), function (text) {
      var box = text.getBBox();
      return { text: text.textContent, x: box.x, width: box.width };
    });
    ticks.sort(function (a, b) { return a.x - b.x; });
    var bars = Array.prototype.filter.call(svg.querySelectorAll('rect'), function (rect) { return rect.querySelector('title'); })
      .map(function (rect) { return { x: rect.x.baseVal.value, height: rect.height.baseVal.value, title: rect.querySelector('title').textContent }; });
    bars.sort(function (a, b) { return a.x - b.x; });
    out.charts.push({
      title: svg.getAttribute('aria-label'),
      width: view.width,
      ticks: ticks,
      bars: bars,
      axis_label: svg.querySelector('text.axis-label').textContent,
      title_box: (function (box) { return [box.x, box.x + box.width]; })(svg.querySelector('text.chart-title').getBBox())
    });
  });
});
</script>"#;

/// Trial 1 with token counts spread from 10,912 to 16,000 a question, as a real model server
/// reports them.
fn trial_with_tokens(dir: &Path) -> PathBuf {
    let mut runs = read_lines(&fixture(TRIAL_1));
    let n = runs.len() as u64;
    for (idx, run) in runs.iter_mut().enumerate() {
        let tokens = 10_912 + (16_000 - 10_912) * idx as u64 / (n - 1);
        run["usage"]["prompt_tokens"] = Value::from(tokens - 100);
        run["usage"]["completion_tokens"] = Value::from(100);
    }
    let path = dir.join("tokens.results.jsonl");
    write_lines(&path, &runs);
    path
}

fn chart<'a>(seen: &'a Value, title: &str) -> &'a Value {
    seen["charts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|chart| chart["title"].as_str().unwrap().starts_with(title))
        .unwrap_or_else(|| panic!("no chart `{title}`: {seen}"))
}

/// Every chart's title and the labels under its axis lie inside the picture, and no two labels
/// touch (as [`MEASURE_CHARTS`] saw them).
#[track_caller]
fn assert_charts_fit(seen: &Value) {
    for chart in seen["charts"].as_array().unwrap() {
        let ticks = chart["ticks"].as_array().unwrap();
        let title = &chart["title"];
        assert!(!ticks.is_empty(), "`{title}` has no labels");
        let width = chart["width"].as_f64().unwrap();
        assert!(
            chart["title_box"][1].as_f64().unwrap() <= width,
            "`{title}` is cut: {chart}"
        );
        for tick in ticks {
            let (x, w) = (tick["x"].as_f64().unwrap(), tick["width"].as_f64().unwrap());
            assert!(x >= 0.0 && x + w <= width, "`{title}`: {tick} leaves the picture");
        }
        for pair in ticks.windows(2) {
            let left_end = pair[0]["x"].as_f64().unwrap() + pair[0]["width"].as_f64().unwrap();
            assert!(
                left_end + 2.0 <= pair[1]["x"].as_f64().unwrap(),
                "`{title}`: {} and {} touch",
                pair[0],
                pair[1]
            );
        }
    }
}

#[test]
fn labels_under_every_chart_never_overlap_in_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, questions, _) = hostile_pair(dir.path());
    let tokens = trial_with_tokens(dir.path());
    let out = dir.path().join("report.html");
    let steps = dir.path().join("many-steps.jsonl");
    // Steps up to 40: forty-one numbers under one axis.
    let mut runs = read_lines(&fixture(TRIAL_1));
    for (idx, run) in runs.iter_mut().enumerate().take(41) {
        let step = run["steps"][0].clone();
        run["steps"] = Value::from(vec![step; idx.max(1)]);
    }
    write_lines(&steps, &runs);
    write_report(
        &[&tokens, &steps],
        &out,
        &["--questions", questions.to_str().unwrap()],
    );
    let html = std::fs::read_to_string(&out).unwrap();
    let seen = measure_in_chromium(&html, MEASURE_CHARTS, "1400,1000", dir.path());
    assert!(seen["charts"].as_array().unwrap().len() >= 8, "{seen}");
    assert_charts_fit(&seen);
    // The steps axis shows 0 and enough numbers between to read it by.
    let steps_ticks = chart(&seen, "Steps per question")["ticks"]
        .as_array()
        .unwrap()
        .len();
    assert!(steps_ticks >= 5, "{seen}");
}

#[test]
fn the_token_histogram_starts_at_the_data_and_says_what_it_counts() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = trial_with_tokens(dir.path());
    let out = dir.path().join("report.html");
    write_report(&[&tokens], &out, &[]);
    let html = std::fs::read_to_string(&out).unwrap();
    let seen = measure_in_chromium(&html, MEASURE_CHARTS, "1400,1000", dir.path());
    let histogram = chart(&seen, "Tokens per question");
    let bars = histogram["bars"].as_array().unwrap();
    // Its first and last bars hold questions: the axis spans the data, not 0 to the largest.
    for bar in [bars.first().unwrap(), bars.last().unwrap()] {
        assert!(
            bar["height"].as_f64().unwrap() > 0.0,
            "an empty bar at an end: {histogram}"
        );
    }
    assert!(bars.len() >= 6, "{histogram}");
    let first = histogram["ticks"][0]["text"].as_str().unwrap();
    assert!(first.ends_with('k') && first != "0", "{histogram}");
    assert_eq!(histogram["axis_label"], "tokens a question (prompt + completion)");
    // A bar's tooltip gives its range and count.
    let tooltip = bars[0]["title"].as_str().unwrap();
    assert!(tooltip.starts_with("10.5k–11k · questions: "), "{tooltip}");
}

#[test]
fn sampling_methods_draw_samples_and_vote_share_and_standard_and_cot_no_steps() {
    let dir = tempfile::tempdir().unwrap();
    let html_of = |name: &str| {
        let out = dir.path().join(format!("{name}.html"));
        let results = fixture(&format!("runs/methods/{name}.results.jsonl"));
        write_report(&[&results], &out, &[]);
        std::fs::read_to_string(&out).unwrap()
    };
    for name in ["standard", "cot", "cot-sc"] {
        let html = html_of(name);
        for absent in ["Steps per question", "Right and wrong by steps"] {
            assert!(!html.contains(absent), "{name} draws `{absent}`");
        }
        assert!(!html.contains("<td>0.00"), "{name}: a mean of 0 steps");
    }
    for name in ["standard", "cot"] {
        let html = html_of(name);
        assert!(html.contains(&format!(
            "{name} answers in one completion: no steps or votes to draw."
        )));
        assert!(!html.contains("Samples per question"), "{name}");
    }
    // CoT-SC: its three questions by samples (7 each) and by the majority's share, right or wrong.
    let html = html_of("cot-sc");
    let runs = read_lines(&fixture("runs/methods/cot-sc.results.jsonl"));
    let mut bins: std::collections::BTreeMap<(u64, &str), usize> = Default::default();
    for run in &runs {
        let vote = &run["vote"];
        let share = vote["votes"].as_f64().unwrap() / vote["samples"].as_f64().unwrap();
        let low = (share * 10.0).floor() as u64 * 10;
        let right = AnswerScore::new(run["answer"].as_str().unwrap(), run["gold"].as_str().unwrap()).em;
        *bins
            .entry((low, if right { "right" } else { "wrong" }))
            .or_default() += 1;
    }
    assert!(bins.len() > 1, "{bins:?}");
    for ((low, series), n) in bins {
        let tooltip = format!("<title>{low}%–{}% · {series}: {n}</title>", low + 10);
        assert!(html.contains(&tooltip), "no `{tooltip}`");
    }
    assert!(html.contains("Vote share of the majority"));
    let right = runs
        .iter()
        .filter(|run| AnswerScore::new(run["answer"].as_str().unwrap(), run["gold"].as_str().unwrap()).em)
        .count();
    assert!(
        html.contains(&format!("<title>7 · right: {right}</title>")),
        "samples per question"
    );
    // A backoff that sampled for some questions says how many voted; ReAct still draws its steps.
    let html = html_of("react-then-cot-sc");
    assert!(html.contains("Samples per question (1 of 3 voted)"));
    assert!(html.contains("Steps per question"));
    let seen = measure_in_chromium(&html, MEASURE_CHARTS, "1400,1000", dir.path());
    assert_charts_fit(&seen);
}

#[test]
fn a_file_without_token_counts_shows_no_mean_of_zero_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let tokens = trial_with_tokens(dir.path());
    write_report(&[&fixture(TRIAL_1), &tokens], &out, &[]);
    let html = std::fs::read_to_string(&out).unwrap();
    let row = html
        .split("<th>mean tokens (prompt + completion)</th>")
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("a tokens row");
    let cells: Vec<&str> = row.split("<td>").skip(1).collect();
    assert_eq!(cells.len(), 2, "{row}");
    assert!(
        cells[0].contains("not recorded") && !cells[0].starts_with('0'),
        "{row}"
    );
    let mean = read_lines(&tokens)
        .iter()
        .map(|run| run["usage"]["prompt_tokens"].as_f64().unwrap() + 100.0)
        .sum::<f64>()
        / 100.0;
    assert!(cells[1].starts_with(&format!("{mean:.0}<")), "{row}");
    assert!(html.contains("No token counts recorded in this file"));
}

#[test]
fn a_trials_report_names_the_reflect_strategy_and_says_calls_include_reflections() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trials.html");
    let none = fixture("runs/trials/none.results.jsonl");
    let reflexion = fixture("runs/trials/reflexion.results.jsonl");
    write_report(&[&none, &reflexion], &out, &[]);
    let html = std::fs::read_to_string(&out).unwrap();
    let row = |header: &str| -> Vec<String> {
        let row = html
            .split(header)
            .nth(1)
            .and_then(|rest| rest.split("</tr>").next())
            .unwrap_or_else(|| panic!("no row `{header}`"));
        row.split("<td>").skip(1).map(str::to_owned).collect()
    };
    let reflect = row("<th>between trials (<code>--reflect</code>)</th>");
    assert_eq!(reflect, ["none</td>", "reflexion</td>"]);
    let calls = row("<th>mean LLM calls</th>");
    assert!(
        calls[0].contains("every trial&#39;s") || calls[0].contains("every trial's"),
        "{calls:?}"
    );
    assert!(!calls[0].contains("reflection"), "{calls:?}");
    assert!(calls[1].contains("reflection calls included"), "{calls:?}");
    let steps = row("<th>mean steps</th>");
    assert!(steps[1].contains("the counted trial"), "{steps:?}");
}

/// Measures the question table of a report at 1280 pixels: whether the page itself overflows,
/// the answer cells' widths, and, scrolled to its right end, where the last column's head and
/// cell are against the table's box.
const MEASURE_TABLE: &str = r#"<script>
window.__selfTest(async function (out, wait) {
  out.page_overflow = document.documentElement.scrollWidth - window.innerWidth;
  var row = document.querySelector('#table-spacer .row');
  var heads = document.querySelectorAll('#table-head button');
  out.answer_widths = [];
  heads.forEach(function (button, idx) {
    if (button.dataset.key.indexOf('answer') === 0) out.answer_widths.push(row.children[idx].getBoundingClientRect().width);
  });
  var body = document.getElementById('table-body');
  out.sideways = body.scrollWidth - body.clientWidth;
  body.scrollLeft = body.scrollWidth;
  body.dispatchEvent(new Event('scroll'));
  await wait(100);
  var box = body.getBoundingClientRect();
  var lastHead = heads[heads.length - 1].getBoundingClientRect();
  var lastCell = row.children[row.children.length - 1].getBoundingClientRect();
  out.box_right = box.right;
  out.last_head = [lastHead.left, lastHead.right];
  out.last_cell = [lastCell.left, lastCell.right];
});
</script>"#;

#[test]
fn with_three_files_at_1280_pixels_the_table_scrolls_in_its_box_and_answers_keep_their_width() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    write_report(
        &[&fixture(TRIAL_1), &fixture(TRIAL_1_BUDGET_3), &fixture(TRIAL_3)],
        &out,
        &[],
    );
    let html = std::fs::read_to_string(&out).unwrap();
    let seen = measure_in_chromium(&html, MEASURE_TABLE, "1280,800", dir.path());
    assert!(
        seen["page_overflow"].as_f64().unwrap() <= 0.0,
        "the page is wider than the window: {seen}"
    );
    let widths = seen["answer_widths"].as_array().unwrap();
    assert_eq!(widths.len(), 3, "{seen}");
    // Some 16 characters of every answer show before a cut.
    assert!(
        widths.iter().all(|width| width.as_f64().unwrap() >= 130.0),
        "{seen}"
    );
    assert!(seen["sideways"].as_f64().unwrap() > 0.0, "{seen}");
    // Scrolled to its right end, the last column is inside the box, its head above its cells.
    let box_right = seen["box_right"].as_f64().unwrap();
    let (head, cell) = (&seen["last_head"], &seen["last_cell"]);
    assert!(head[1].as_f64().unwrap() <= box_right + 0.5, "{seen}");
    assert!(cell[1].as_f64().unwrap() <= box_right + 0.5, "{seen}");
    assert!(
        (head[0].as_f64().unwrap() - cell[0].as_f64().unwrap()).abs() < 1.0,
        "{seen}"
    );

    // Two files still fit a 1280-pixel window without scrolling sideways.
    write_report(&[&fixture(TRIAL_1), &fixture(TRIAL_1_BUDGET_3)], &out, &[]);
    let html = std::fs::read_to_string(&out).unwrap();
    let seen = measure_in_chromium(&html, MEASURE_TABLE, "1280,800", dir.path());
    assert_eq!(seen["sideways"], 0, "{seen}");
}
