//! The code under `src/` never panics on what comes from outside (server bodies and headers, files,
//! pages, model text): every `.unwrap()`, `.expect(`, `panic!(`, `unreachable!(`, `todo!(` and
//! `unimplemented!(` outside test code says, in an `// invariant: …` comment on its line or the
//! line above, why it cannot fail whatever the input (a literal regex, a value set just above).

use std::path::{Path, PathBuf};

const PANICKING: [&str; 6] = [
    ".unwrap()",
    ".expect(",
    "panic!(",
    "unreachable!(",
    "todo!(",
    "unimplemented!(",
];

/// `src/**/*.rs`, without the `tests.rs` files that hold unit tests.
pub(super) fn source_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(source_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs")
            && path.file_name().is_some_and(|name| name != "tests.rs")
        {
            files.push(path);
        }
    }
    files
}

/// The lines of `text` outside `#[cfg(test)]` items, with their 1-based numbers.
fn non_test_lines(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut in_test = false;
    let mut depth: i64 = 0;
    let mut entering = false;
    for (idx, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if !in_test && trimmed == "#[cfg(test)]" {
            in_test = true;
            entering = true;
            depth = 0;
            continue;
        }
        if in_test {
            // The item after the attribute: a `mod tests;` line, or a block up to its closing brace.
            if entering && trimmed.ends_with(';') && !trimmed.contains('{') {
                in_test = false;
                entering = false;
                continue;
            }
            depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            if depth > 0 {
                entering = false;
            }
            if !entering && depth <= 0 {
                in_test = false;
            }
            continue;
        }
        lines.push((idx + 1, line));
    }
    lines
}

/// The code of a line, without a trailing `//` comment and ignoring comment lines.
fn code(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") {
        return "";
    }
    match line.find("// ") {
        Some(idx) => &line[..idx],
        None => line,
    }
}

fn has_invariant(line: &str) -> bool {
    line.split_once("// invariant:")
        .is_some_and(|(_, reason)| !reason.trim().is_empty())
}

/// Every panicking site in `text` without its invariant comment, as `line: code`.
fn unjustified(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (number, line) in non_test_lines(text) {
        if !PANICKING.iter().any(|pattern| code(line).contains(pattern)) {
            continue;
        }
        let previous = number
            .checked_sub(2)
            .and_then(|idx| lines.get(idx))
            .copied()
            .unwrap_or("");
        if !has_invariant(line) && !has_invariant(previous) {
            found.push(format!("{number}: {}", line.trim()));
        }
    }
    found
}

#[test]
fn every_panicking_call_in_src_states_its_invariant() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    for file in source_files(&root.join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for site in unjustified(&text) {
            let relative = file.strip_prefix(root).unwrap().display().to_string();
            report.push(format!("{relative}:{site}"));
        }
    }
    assert!(
        report.is_empty(),
        "panicking calls without an `// invariant: …` comment saying why outside data cannot reach them:\n{}",
        report.join("\n")
    );
}

/// The audit itself: what it flags, what it lets through.
#[test]
fn the_audit_skips_tests_and_comments_and_honours_invariants() {
    let text = r#"
fn read(text: &str) -> u32 {
    text.parse().unwrap()
}
// A comment may say `.unwrap()`.
fn literal() -> Regex {
    // invariant: a literal pattern that compiles (a unit test builds it)
    Regex::new("a+").expect("valid")
}
fn same_line(v: &[u8]) -> u8 {
    *v.first().expect("x") // invariant: `v` was checked to be non-empty by the caller
}
fn unjustified_invariant() {
    // invariant:
    panic!("no reason given");
}
#[cfg(test)]
mod tests;
fn after_the_test_module_line() {
    todo!()
}
#[cfg(test)]
mod tests {
    fn f() {
        if true {
            None::<u8>.unwrap();
        }
    }
}
fn after_the_test_module() {
    unreachable!("x")
}
"#;
    assert_eq!(
        unjustified(text),
        [
            "3: text.parse().unwrap()",
            "15: panic!(\"no reason given\");",
            "20: todo!()",
            "31: unreachable!(\"x\")",
        ]
    );
}

/// The printing macros panic when stdout or stderr is a closed pipe (`react-docstore ... | head`);
/// the commands write through `output::stdout()` / `output::stderr()` instead, which end the
/// process as SIGPIPE would.
const PRINTING: [&str; 4] = ["println!(", "eprintln!(", "print!(", "eprint!("];

/// Every printing macro in `text` outside tests and comments, as `line: code`.
fn printing(text: &str) -> Vec<String> {
    non_test_lines(text)
        .into_iter()
        .filter(|(_, line)| PRINTING.iter().any(|pattern| code(line).contains(pattern)))
        .map(|(number, line)| format!("{number}: {}", line.trim()))
        .collect()
}

#[test]
fn src_prints_only_through_the_output_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    for file in source_files(&root.join("src")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for site in printing(&text) {
            let relative = file.strip_prefix(root).unwrap().display().to_string();
            report.push(format!("{relative}:{site}"));
        }
    }
    assert!(
        report.is_empty(),
        "printing macros panic on a closed pipe: write through `output::stdout()`/`output::stderr()`:\n{}",
        report.join("\n")
    );
    // The scan sees a macro in code and not in a comment or a test.
    let sample = "fn a() {\n    eprintln!(\"x\");\n}\n// println!(\"y\")\n#[cfg(test)]\nmod tests {\n    fn b() { println!(\"z\"); }\n}\n";
    assert_eq!(printing(sample), vec!["2: eprintln!(\"x\");"]);
}

/// Replacing a file by hand (`fs::write`, or a rename into place) skips the syncs that make it
/// survive a power cut; every file the tool keeps goes through `fsutil` instead. Only the index
/// build moves whole directories, which it does itself.
const REPLACING: [&str; 3] = ["fs::rename(", "fs::write(", "fs::File::create("];
const MAY_REPLACE: [&str; 2] = ["src/base/fsutil.rs", "src/docstore/index/build.rs"];

/// Every hand-made file replacement in `text` outside tests and comments, as `line: code`.
fn replacing(text: &str) -> Vec<String> {
    non_test_lines(text)
        .into_iter()
        .filter(|(_, line)| REPLACING.iter().any(|pattern| code(line).contains(pattern)))
        .map(|(number, line)| format!("{number}: {}", line.trim()))
        .collect()
}

#[test]
fn src_replaces_files_only_through_fsutil() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    for file in source_files(&root.join("src")) {
        let relative = file.strip_prefix(root).unwrap().display().to_string();
        if MAY_REPLACE.contains(&relative.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for site in replacing(&text) {
            report.push(format!("{relative}:{site}"));
        }
    }
    assert!(
        report.is_empty(),
        "files replaced by hand: use `fsutil::atomic_write` or `fsutil::AtomicFile`:\n{}",
        report.join("\n")
    );
    let sample = "fn a() {\n    std::fs::write(&tmp, text)?;\n    tokio::fs::rename(&tmp, &path).await\n}\n// fs::rename(a, b)\n";
    assert_eq!(
        replacing(sample),
        vec![
            "2: std::fs::write(&tmp, text)?;",
            "3: tokio::fs::rename(&tmp, &path).await"
        ]
    );
}
