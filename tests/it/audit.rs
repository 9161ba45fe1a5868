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
            // The item after the attribute: a `mod tests;` line, a field (`work: Counter,`), or a
            // block up to its closing brace.
            if entering && (trimmed.ends_with(';') || trimmed.ends_with(',')) && !trimmed.contains('{') {
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
struct Counted {
    #[cfg(test)]
    work: u64,
}
fn after_a_test_field() {
    todo!()
}
"#;
    assert_eq!(
        unjustified(text),
        [
            "3: text.parse().unwrap()",
            "15: panic!(\"no reason given\");",
            "20: todo!()",
            "31: unreachable!(\"x\")",
            "38: todo!()",
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

/// The longest a function outside tests may be, in lines from its `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 150;

/// Functions over [`MAX_FUNCTION_LINES`] tolerated for now, as `path name`: none. An entry that
/// is no longer long fails the check, so an allowance cannot outlive its function.
const LONG_FUNCTIONS_ALLOWED: [&str; 0] = [];

/// The lines of `text` outside `#[cfg(test)]` items with string and character literals and
/// comments blanked, so that only the code's own braces, brackets and `fn`s are left.
fn skeletons(text: &str) -> Vec<(usize, String)> {
    #[derive(Clone, Copy, PartialEq)]
    enum In {
        Code,
        Str,
        RawStr(usize),
        Comment(usize),
    }
    let mut state = In::Code;
    let mut skeletons = Vec::new();
    for (number, line) in non_test_lines(text) {
        let chars: Vec<char> = line.chars().collect();
        let mut skeleton = String::new();
        let mut idx = 0;
        while idx < chars.len() {
            let ch = chars[idx];
            let next = chars.get(idx + 1).copied();
            match state {
                In::Str => match ch {
                    '\\' => idx += 1,
                    '"' => state = In::Code,
                    _ => {}
                },
                In::RawStr(hashes) => {
                    if ch == '"' && chars[idx + 1..].iter().take_while(|c| **c == '#').count() >= hashes {
                        state = In::Code;
                        idx += hashes;
                    }
                }
                In::Comment(depth) => {
                    if ch == '*' && next == Some('/') {
                        state = if depth == 1 {
                            In::Code
                        } else {
                            In::Comment(depth - 1)
                        };
                        idx += 1;
                    } else if ch == '/' && next == Some('*') {
                        state = In::Comment(depth + 1);
                        idx += 1;
                    }
                }
                In::Code => {
                    let after_word = idx == 0 || !(chars[idx - 1].is_alphanumeric() || chars[idx - 1] == '_');
                    let raw_hashes = chars[idx + 1..].iter().take_while(|c| **c == '#').count();
                    if ch == '/' && next == Some('/') {
                        break;
                    } else if ch == '/' && next == Some('*') {
                        state = In::Comment(1);
                        idx += 1;
                    } else if ch == '"' {
                        state = In::Str;
                    } else if ch == 'r' && after_word && chars.get(idx + 1 + raw_hashes) == Some(&'"') {
                        state = In::RawStr(raw_hashes);
                        idx += raw_hashes + 1;
                    } else if ch == '\'' && next == Some('\\') {
                        // An escaped character literal: up to its closing quote.
                        idx += 2 + chars[idx + 2..].iter().position(|c| *c == '\'').unwrap_or(0);
                    } else if ch == '\'' && chars.get(idx + 2) == Some(&'\'') {
                        idx += 2;
                    } else {
                        skeleton.push(ch);
                    }
                }
            }
            idx += 1;
        }
        skeletons.push((number, skeleton));
    }
    skeletons
}

/// The name of the function a line of code starts, if it starts one.
fn function_name(code: &str) -> Option<&str> {
    let mut rest = code.trim_start();
    loop {
        let word_end = rest.find([' ', '(']).unwrap_or(rest.len());
        let word = &rest[..word_end];
        if word == "fn" {
            let name = rest[word_end..].trim_start();
            let name_end = name
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(name.len());
            return (name_end > 0 && rest[word_end..].starts_with(' ')).then(|| &name[..name_end]);
        }
        rest = if word == "pub" && rest[word_end..].starts_with('(') {
            rest[word_end..].split_once(')')?.1.trim_start()
        } else if ["pub", "const", "async", "unsafe", "extern", "default"].contains(&word) {
            rest[word_end..].trim_start()
        } else if word.starts_with('"') && word.ends_with('"') && word.len() > 1 {
            // An ABI, `extern "C" fn`; blanked as a string, so it shows as `""`.
            rest[word_end..].trim_start()
        } else {
            return None;
        };
    }
}

/// Every function in `text` outside tests longer than `limit` lines, as `line: name is N lines`.
fn long_functions(text: &str, limit: usize) -> Vec<String> {
    struct Open<'a> {
        name: &'a str,
        line: usize,
        depth: usize,
    }
    let lines = skeletons(text);
    let mut found = Vec::new();
    let mut depth = 0usize;
    // A signature read up to its body's brace, and how deep in brackets it is.
    let mut signature: Option<(&str, usize, usize)> = None;
    let mut open: Vec<Open> = Vec::new();
    for (number, code) in &lines {
        if let Some(name) = function_name(code) {
            signature = Some((name, *number, 0));
        }
        for ch in code.chars() {
            match (ch, signature.as_mut()) {
                ('(' | '[', Some((_, _, brackets))) => *brackets += 1,
                (')' | ']', Some((_, _, brackets))) => *brackets = brackets.saturating_sub(1),
                // A declaration without a body (a trait's method).
                (';', Some((_, _, 0))) => signature = None,
                ('{', _) => {
                    if let Some((name, line, _)) = signature.take() {
                        open.push(Open { name, line, depth });
                    }
                    depth += 1;
                }
                ('}', _) => {
                    depth = depth.saturating_sub(1);
                    if open.last().is_some_and(|function| function.depth == depth) {
                        let function = open.pop().unwrap();
                        let length = number - function.line + 1;
                        if length > limit {
                            found.push(format!("{}: {} is {length} lines", function.line, function.name));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    found
}

#[test]
fn no_function_in_src_is_over_150_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    let mut allowed_but_short: Vec<&str> = LONG_FUNCTIONS_ALLOWED.to_vec();
    for file in source_files(&root.join("src")) {
        let relative = file.strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for site in long_functions(&text, MAX_FUNCTION_LINES) {
            let name = site.split(' ').nth(1).unwrap();
            let entry = format!("{relative} {name}");
            if LONG_FUNCTIONS_ALLOWED.contains(&entry.as_str()) {
                allowed_but_short.retain(|allowed| *allowed != entry);
            } else {
                report.push(format!("{relative}:{site}"));
            }
        }
    }
    assert!(
        report.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines: split them into named steps:\n{}",
        report.join("\n")
    );
    assert!(
        allowed_but_short.is_empty(),
        "no longer over {MAX_FUNCTION_LINES} lines: take them out of `LONG_FUNCTIONS_ALLOWED`: {allowed_but_short:?}"
    );
}

/// The length check itself: what counts as a function and where its body ends.
#[test]
fn the_length_check_counts_bodies_not_braces_in_text() {
    let text = r###"
pub(crate) async fn long(x: [u8; 2]) -> String {
    let open = "{ {";
    let raw = r#"{"#;
    let brace = '{';
    /* { */
    // {
    format!("{open}{raw}{brace}")
}
trait Step {
    fn declared(&self) -> [u8; 3];
    fn provided(&self) {
        fn inner() {
        }
    }
}
fn short<'a>(
    text: &'a str,
) -> &'a str {
    text
}
#[cfg(test)]
mod tests {
    fn long_test() {
        1;
        2;
        3;
    }
}
fn after() {}
"###;
    assert_eq!(
        long_functions(text, 4),
        ["2: long is 8 lines", "17: short is 5 lines"]
    );
    assert_eq!(
        long_functions(text, 3),
        [
            "2: long is 8 lines",
            "12: provided is 4 lines",
            "17: short is 5 lines"
        ]
    );
    assert!(long_functions(text, 8).is_empty());
}

/// Flags several commands take, each declared by one clap field that those commands flatten, so
/// that their name, help and default cannot drift apart: (field, flag).
const SHARED_FLAGS: [(&str, &str); 4] = [
    ("show_reasoning", "--show-reasoning"),
    ("cache_dir", "--cache-dir"),
    ("today", "--today"),
    ("prices", "--prices"),
];

/// The lines of `text` outside tests that declare a clap argument field named `field` (an
/// `#[arg(` attribute, then the field, doc comments aside), as `line: code`.
fn argument_fields(text: &str, field: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut after_arg = false;
    for (number, line) in non_test_lines(text) {
        let trimmed = line.trim();
        if trimmed.starts_with("#[arg(") {
            after_arg = true;
            continue;
        }
        if trimmed.starts_with("///") || (after_arg && !trimmed.contains(':')) {
            continue;
        }
        let declared = trimmed.strip_prefix("pub ").unwrap_or(trimmed);
        if after_arg && declared.starts_with(&format!("{field}:")) {
            found.push(format!("{number}: {trimmed}"));
        }
        after_arg = false;
    }
    found
}

#[test]
fn flags_shared_by_commands_are_declared_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut report = Vec::new();
    for (field, flag) in SHARED_FLAGS {
        let mut declarations = Vec::new();
        for file in source_files(&root.join("src")) {
            let relative = file.strip_prefix(root).unwrap().display().to_string();
            let text = std::fs::read_to_string(&file).unwrap();
            for site in argument_fields(&text, field) {
                declarations.push(format!("{relative}:{site}"));
            }
        }
        if declarations.len() != 1 {
            report.push(format!(
                "`{flag}` declared {} times (one `clap::Args` struct, flattened where needed):\n  {}",
                declarations.len(),
                declarations.join("\n  ")
            ));
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
    let sample = "struct A {\n    /// Help.\n    #[arg(\n        long,\n    )]\n    pub today: Option<String>,\n    today_utc: bool,\n}\n";
    assert_eq!(
        argument_fields(sample, "today"),
        ["6: pub today: Option<String>,"]
    );
}
