//! ARCHITECTURE.md stays true: every file, folder and item name it puts in backticks exists, and
//! it stays short enough to read in one sitting.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Names ARCHITECTURE.md may use that are not this repository's: the standard library's.
const OUTSIDE_NAMES: &[&str] = &["std::fs::write", "Display", "Debug"];

/// Every file of the repository below `dir`, relative to `root`, build output and VCS left out.
fn repository_files(root: &Path, dir: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == ".git" || name == "target" || name == "__pycache__" {
            continue;
        }
        if path.is_dir() {
            found.push(path.strip_prefix(root).unwrap().to_owned());
            repository_files(root, &path, found);
        } else {
            found.push(path.strip_prefix(root).unwrap().to_owned());
        }
    }
}

/// Identifiers following `keyword ` in `text`.
fn after(text: &str, keyword: &str, names: &mut BTreeSet<String>) {
    for (at, _) in text.match_indices(keyword) {
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let name: String = text[at + keyword.len()..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if before_ok && !name.is_empty() {
            names.insert(name);
        }
    }
}

/// What the code declares: items, modules (file names), fields, enum variants, Python
/// definitions, and the string literals the tool reads and writes (`"react"`, `"distractor"`).
fn declared_names(root: &Path, files: &[PathBuf]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in files {
        let code = file.starts_with("src") || file.starts_with("python");
        if code && root.join(file).is_dir() {
            names.insert(file.file_name().unwrap().to_string_lossy().into_owned());
            continue;
        }
        let ext = file.extension().and_then(|ext| ext.to_str());
        if !code || !matches!(ext, Some("rs" | "py")) {
            continue;
        }
        names.insert(file.file_stem().unwrap().to_string_lossy().into_owned());
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for keyword in [
            "fn ", "struct ", "enum ", "trait ", "mod ", "const ", "static ", "type ", "def ", "class ",
        ] {
            after(&text, keyword, &mut names);
        }
        for line in text.lines() {
            let line = line.trim_start();
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let word: String = line
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let rest = &line[word.len()..];
            // A field (`name: Type`) or a variant (`Name,`, `Name(..)`, `Name { .. }`).
            if !word.is_empty()
                && (rest.starts_with(':') && !rest.starts_with("::")
                    || rest.is_empty()
                    || rest.starts_with([',', '(', ' ']))
            {
                names.insert(word);
            }
        }
        let mut rest = text.as_str();
        while let Some(open) = rest.find('"') {
            let tail = &rest[open + 1..];
            let Some(close) = tail.find('"') else { break };
            names.insert(tail[..close].to_owned());
            rest = &tail[close + 1..];
        }
    }
    names
}

/// The backticked spans of `text` outside code blocks that name a file or folder (`a/b.rs`,
/// `cli/`) or an item (`Run`, `record::run`, `Reader::show`, `cli::run()`), and those of them
/// nothing in the repository answers to.
fn unresolved(text: &str, files: &[PathBuf], names: &BTreeSet<String>) -> Vec<String> {
    let mut prose = String::new();
    for (idx, part) in text.split("```").enumerate() {
        if idx % 2 == 0 {
            prose.push_str(part);
        }
    }
    let paths: Vec<String> = files
        .iter()
        .map(|file| file.to_string_lossy().into_owned())
        .collect();
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut missing = Vec::new();
    for (idx, span) in prose.split('`').enumerate() {
        if idx % 2 == 0 || span.contains(char::is_whitespace) || OUTSIDE_NAMES.contains(&span) {
            continue;
        }
        // A route (`/v1/step`) is a string the code serves.
        if span.starts_with('/') {
            if !names.contains(span) {
                missing.push(span.to_owned());
            }
            continue;
        }
        let is_path = span.contains('/')
            || [".rs", ".md", ".toml", ".json", ".py"]
                .iter()
                .any(|ext| span.ends_with(ext));
        if is_path && span.chars().all(|c| is_word(c) || "./-".contains(c)) {
            let wanted = span.trim_end_matches('/');
            let found = paths.iter().any(|path| {
                [wanted.to_owned(), format!("{wanted}.rs")]
                    .iter()
                    .any(|form| path == form || path.ends_with(&format!("/{form}")))
            });
            if !found {
                missing.push(span.to_owned());
            }
            continue;
        }
        let item = span.trim_end_matches("()");
        let is_item = !item.is_empty()
            && item
                .split("::")
                .all(|segment| !segment.is_empty() && segment.chars().all(is_word));
        if is_item && !item.split("::").all(|segment| names.contains(segment)) {
            missing.push(span.to_owned());
        }
    }
    missing
}

#[test]
fn every_name_architecture_md_mentions_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    repository_files(root, root, &mut files);
    let names = declared_names(root, &files);
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let missing = unresolved(&text, &files, &names);
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what the repository no longer has (renamed or moved?): {missing:?}"
    );
    let words = text.split_whitespace().count();
    assert!(
        words < 2_500,
        "ARCHITECTURE.md has {words} words: keep it under 2,500"
    );
}

#[test]
fn the_name_check_sees_a_stale_name() {
    let files = vec![PathBuf::from("src/record/run.rs"), PathBuf::from("src/cli")];
    let names: BTreeSet<String> = ["record", "run", "Run", "how_stopped"].map(str::to_owned).into();
    let text = "`record/run.rs`, `run.rs`, `cli/`, `Run::how_stopped()`, `record::run`, a `--flag`,\n\
                `two words`, ```\n`Gone` in a block\n```\n but `Gone`, `run::Gone`, `eval/mod.rs`, `gone/`";
    assert_eq!(
        unresolved(text, &files, &names),
        ["Gone", "run::Gone", "eval/mod.rs", "gone/"]
    );
}
