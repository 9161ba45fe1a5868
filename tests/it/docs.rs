//! The guide cannot drift from the CLI. Every `react-docstore ...` command in a fenced code block of
//! README.md or `docs/*.md` must name a subcommand the built binary has and only flags its `--help`
//! lists (those `--help` texts are snapshots); every command of a `console` block is run offline,
//! from a scratch directory holding `fixtures/`, against a local Wikipedia (the recorded pages) and
//! a local model server (scripted completions), and must print the lines shown under it; those that
//! call no model are run again as on a fresh clone, where any request to the network fails. The run
//! file's JSON Schema (`docs/run.v1.schema.json`) must accept every recorded run of `fixtures/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::llm::{Sequence, model_server};

const BIN: &str = env!("CARGO_BIN_EXE_react-docstore");

/// In a shown output line, text that changes from run to run (times, dates, sizes).
const ELISION: &str = "[...]";

// ---------------------------------------------------------------------------------------------
// Fenced code blocks and the commands in them

/// A fenced code block of a document.
#[derive(Debug)]
struct Block {
    /// The info string: `sh`, `console`, `text`, ...
    lang: String,
    /// The 1-based line of its first content line.
    line: usize,
    lines: Vec<String>,
}

/// The fenced code blocks of a Markdown text, indented ones (inside list items) included.
fn code_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, Block)> = None;
    for (idx, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let block = Block {
                        lang: info.trim().to_owned(),
                        line: idx + 2,
                        lines: Vec::new(),
                    };
                    open = Some((indent, block));
                }
            }
            Some((fence_indent, mut block)) => {
                if trimmed == "```" {
                    blocks.push(block);
                } else {
                    let cut = indent.min(fence_indent);
                    block.lines.push(line[cut..].to_owned());
                    open = Some((fence_indent, block));
                }
            }
        }
    }
    blocks
}

/// A piece of a shell line.
#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// `|`, `;`, `&&`, `||`, `&`: the end of a simple command.
    Separator,
    /// `<`, `>`, `2>`, `2>&1`, ...: its target (if any) is the next word, not an argument.
    Redirect {
        takes_target: bool,
    },
}

/// Shell words of one line: quotes and backslashes as `sh` reads them, `#` comments dropped.
fn shell_tokens(line: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let end_word = |tokens: &mut Vec<Token>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => end_word(&mut tokens, &mut word, &mut in_word),
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&next @ ('"' | '\\' | '$' | '`')) => {
                                word.push(next);
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            '|' | ';' | '&' => {
                end_word(&mut tokens, &mut word, &mut in_word);
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                tokens.push(Token::Separator);
            }
            '<' | '>' => {
                // `2>`: the digits before the operator are a file descriptor, not a word.
                if in_word && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                end_word(&mut tokens, &mut word, &mut in_word);
                if chars.peek() == Some(&'>') {
                    chars.next();
                }
                let takes_target = if chars.peek() == Some(&'&') {
                    chars.next();
                    while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                        chars.next();
                    }
                    false
                } else {
                    true
                };
                tokens.push(Token::Redirect { takes_target });
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut tokens, &mut word, &mut in_word);
    tokens
}

/// The arguments of every `react-docstore` invocation in a shell line (after any `VAR=value`).
fn invocations(line: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut current: Option<Vec<String>> = None;
    let mut at_command_start = true;
    let mut skip_target = false;
    for token in shell_tokens(line) {
        match token {
            Token::Separator => {
                found.extend(current.take());
                at_command_start = true;
            }
            Token::Redirect { takes_target } => skip_target = takes_target,
            Token::Word(word) => {
                if std::mem::take(&mut skip_target) {
                    continue;
                }
                if let Some(args) = current.as_mut() {
                    args.push(word);
                } else if at_command_start {
                    if word == "react-docstore" {
                        current = Some(Vec::new());
                    } else if !is_assignment(&word) {
                        at_command_start = false;
                    }
                }
            }
        }
    }
    found.extend(current);
    found
}

/// `NAME=value` before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// The shell lines of a block: `$ ` prompts dropped, `\` continuations joined. In a `console`
/// block only the prompted lines are commands (the rest is their output).
fn shell_lines(block: &Block) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (offset, raw) in block.lines.iter().enumerate() {
        let text = match (&pending, block.lang.as_str()) {
            (Some(_), _) => raw.as_str(),
            (None, "console") => match raw.strip_prefix("$ ") {
                Some(command) => command,
                None => continue,
            },
            (None, _) => raw.strip_prefix("$ ").unwrap_or(raw),
        };
        let (start, mut joined) = pending.take().unwrap_or((block.line + offset, String::new()));
        match text.strip_suffix('\\') {
            Some(head) => {
                joined.push_str(head);
                pending = Some((start, joined));
            }
            None => {
                joined.push_str(text);
                lines.push((start, joined));
            }
        }
    }
    lines.extend(pending);
    lines
}

// ---------------------------------------------------------------------------------------------
// The CLI as its `--help` describes it

/// One (sub)command: its flags and its subcommands.
#[derive(Debug, Default)]
struct CommandHelp {
    flags: BTreeSet<String>,
    subcommands: BTreeMap<String, CommandHelp>,
}

/// The flags (`-h`, `--help`, `--profile`, ...) and subcommand names a `--help` text lists: the
/// flags under `Options:` and under every other heading (`Model:`, `Selection:`, ...), with their
/// visible aliases (`[alias: --fewshot-seed]`).
fn parse_help(help: &str) -> (BTreeSet<String>, Vec<String>) {
    let mut flags = BTreeSet::new();
    let mut subcommands = Vec::new();
    let mut section = "";
    for line in help.lines() {
        if !line.starts_with(' ') {
            section = line.trim_end_matches(':');
            continue;
        }
        let entry = line.trim_start();
        match section {
            "Commands" | "Arguments" | "Usage" => {}
            _ if entry.starts_with('-') => {
                let names = entry.split("  ").next().unwrap_or_default();
                for name in names.split(", ") {
                    let name = name.split([' ', '=', '[', '<']).next().unwrap_or_default();
                    flags.insert(name.to_owned());
                }
                if let Some((_, aliases)) = entry
                    .rsplit_once("[alias: ")
                    .or_else(|| entry.rsplit_once("[aliases: "))
                {
                    for alias in aliases.trim_end_matches(']').split(", ") {
                        flags.insert(alias.to_owned());
                    }
                }
            }
            _ => {}
        }
        if section == "Commands" {
            let name = entry.split_whitespace().next().unwrap_or_default();
            if name != "help" {
                subcommands.push(name.to_owned());
            }
        }
    }
    (flags, subcommands)
}

/// `react-docstore ARGS --help`, in a clean environment (no `[env: NAME=value]` of the caller's).
fn help_text(path: &[&str]) -> String {
    let output = Command::new(BIN)
        .args(path)
        .arg("--help")
        .env_clear()
        .output()
        .unwrap();
    assert!(output.status.success(), "{path:?} --help: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// Every (sub)command's `--help` text, by its path (`""`, `"ask"`, `"index build"`).
fn help_texts() -> BTreeMap<String, String> {
    fn walk(path: &mut Vec<String>, texts: &mut BTreeMap<String, String>) {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help_text(&args);
        let (_, subcommands) = parse_help(&text);
        texts.insert(path.join(" "), text);
        for name in subcommands {
            path.push(name);
            walk(path, texts);
            path.pop();
        }
    }
    let mut texts = BTreeMap::new();
    walk(&mut Vec::new(), &mut texts);
    texts
}

/// The command tree the help texts describe.
fn command_tree(texts: &BTreeMap<String, String>) -> CommandHelp {
    fn node(path: &str, texts: &BTreeMap<String, String>) -> CommandHelp {
        let (flags, names) = parse_help(&texts[path]);
        let subcommands = names
            .into_iter()
            .map(|name| {
                let child = if path.is_empty() {
                    name.clone()
                } else {
                    format!("{path} {name}")
                };
                let help = node(&child, texts);
                (name, help)
            })
            .collect();
        CommandHelp { flags, subcommands }
    }
    node("", texts)
}

/// Whether `args` (what follows `react-docstore`) names existing subcommands and only their flags.
fn check_invocation(tree: &CommandHelp, args: &[String]) -> Result<(), String> {
    let mut node = tree;
    let mut path = String::from("react-docstore");
    let mut rest = args;
    while !node.subcommands.is_empty() {
        let Some((first, tail)) = rest.split_first() else {
            return Err(format!("`{path}` without a subcommand"));
        };
        if first.starts_with('-') {
            break;
        }
        node = node
            .subcommands
            .get(first)
            .ok_or_else(|| format!("`{path}` has no subcommand `{first}`"))?;
        path = format!("{path} {first}");
        rest = tail;
    }
    for arg in rest {
        if arg == "--" {
            break;
        }
        let is_flag = arg.starts_with("--")
            || (arg.starts_with('-') && arg.chars().nth(1).is_some_and(|c| c.is_ascii_alphabetic()));
        if !is_flag {
            continue;
        }
        let name = arg.split('=').next().unwrap_or_default();
        if !node.flags.contains(name) {
            return Err(format!("`{path}` has no flag `{name}`"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The documents

/// README.md and every `docs/*.md`, in name order.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs
}

fn relative(path: &Path) -> String {
    path.strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_help_text_is_a_reviewed_snapshot() {
    for (path, text) in help_texts() {
        let name = if path.is_empty() {
            "help".to_owned()
        } else {
            format!("help_{}", path.replace(' ', "_"))
        };
        // A snapshot names no live service: defaults that reach the network are said in words.
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "`{name}` names a URL: {text}"
        );
        crate::assert_snapshot!(name, text);
    }
}

/// The headed blocks of a `--help` text (`Arguments`, `Options`, `Model`, ...), each entry as its
/// names (`--seed <S>`, `<QUESTION>`) and its description (empty when it has none).
fn help_sections(help: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut sections: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for line in help.lines() {
        if let Some(heading) = line.strip_suffix(':').filter(|_| !line.starts_with(' ')) {
            sections.push((heading.to_owned(), Vec::new()));
        } else if let Some((_, entries)) = sections.last_mut()
            && line.starts_with("  ")
        {
            let entry = line.trim_start();
            let (names, description) = entry.split_once("  ").unwrap_or((entry, ""));
            entries.push((names.to_owned(), description.trim().to_owned()));
        }
    }
    sections
}

#[test]
fn eval_help_groups_its_flags_under_headings_and_every_entry_says_what_it_is() {
    let texts = help_texts();
    let sections = help_sections(&texts["eval"]);
    let flags_under = |heading: &str| -> Vec<String> {
        sections
            .iter()
            .find(|(name, _)| name == heading)
            .unwrap_or_else(|| panic!("`eval --help` has no `{heading}:` heading"))
            .1
            .iter()
            .map(|(names, _)| names.split([' ', ',']).next().unwrap().to_owned())
            .collect()
    };
    for (heading, some_flags) in [
        ("Model", &["--model", "--base-url", "--api", "--temperature"][..]),
        ("Agent", &["--profile", "--max-steps"]),
        (
            "Method",
            &[
                "--method",
                "--samples",
                "--fewshot",
                "--fewshot-from",
                "--shots",
                "--seed",
            ],
        ),
        ("Docstore", &["--docstore", "--offline", "--cache-dir"]),
        ("Tools", &["--tools", "--tool"]),
        ("Attempts", &["--trials", "--reflect", "--epochs"]),
        ("Selection", &["--subset", "--ids", "--limit", "--shard"]),
        ("Output", &["--out", "--retry-errors", "--json", "--concurrency"]),
    ] {
        let under = flags_under(heading);
        for flag in some_flags {
            assert!(
                under.iter().any(|name| name == flag),
                "`{flag}` is not under `{heading}:` but {under:?}"
            );
        }
    }
    assert_eq!(
        flags_under("Options"),
        ["-h"],
        "eval's flags are all under a heading"
    );

    // Every argument and flag of every command says what it is.
    for (path, text) in &texts {
        for (heading, entries) in help_sections(text) {
            for (names, description) in entries {
                assert!(
                    !description.is_empty(),
                    "`{path} --help`: `{names}` ({heading}) has no description"
                );
            }
        }
    }

    // Each `--seed` says what it seeds and has an alias that says it too.
    let entry = |path: &str, flag: &str| -> String {
        let line = texts[path]
            .lines()
            .find(|line| line.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("`{path} --help` lists no `{flag}`"));
        line.to_owned()
    };
    for path in ["ask", "eval"] {
        let seed = entry(path, "--seed ");
        assert!(
            seed.contains("`--fewshot-from`'s draw") && seed.ends_with("[alias: --fewshot-seed]"),
            "{seed}"
        );
    }
    for path in ["compare", "report"] {
        let seed = entry(path, "--seed ");
        assert!(
            seed.contains("bootstrap") && seed.ends_with("[alias: --bootstrap-seed]"),
            "{seed}"
        );
    }

    // `explore` calls no model and refuses `distractor`: its help says neither.
    let docstore = entry("explore", "--docstore ");
    assert!(!docstore.contains("distractor"), "{docstore}");
    let offline = entry("explore", "--offline ");
    assert!(
        !offline.contains("model is still called") && offline.contains("no model is called"),
        "{offline}"
    );
}

#[test]
fn a_seed_alias_seeds_what_the_seed_flag_seeds() {
    let compare = |seed_flag: &str, seed: &str| {
        let output = Command::new(BIN)
            .args(["compare", "fixtures/compare/trial-1.results.jsonl"])
            .args([
                "fixtures/compare/trial-1.max-steps-3.results.jsonl",
                "--json",
                seed_flag,
                seed,
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        output.stdout
    };
    // The bootstrap's intervals move with the seed, and the alias sets that seed.
    assert_ne!(compare("--seed", "7"), compare("--seed", "8"));
    assert_eq!(compare("--seed", "7"), compare("--bootstrap-seed", "7"));
}

#[test]
fn every_command_in_the_docs_names_a_real_subcommand_and_real_flags() {
    let tree = command_tree(&help_texts());
    let mut failures = Vec::new();
    let mut n_commands = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for block in code_blocks(&text) {
            for (line, shell_line) in shell_lines(&block) {
                for args in invocations(&shell_line) {
                    n_commands += 1;
                    if let Err(error) = check_invocation(&tree, &args) {
                        failures.push(format!("{}:{line}: {error}\n    {shell_line}", relative(&doc)));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(n_commands > 0, "no command found in the docs");
}

#[test]
fn every_subcommand_is_shown_in_the_docs() {
    let tree = command_tree(&help_texts());
    let mut shown = BTreeSet::new();
    for doc in documents() {
        for block in code_blocks(&std::fs::read_to_string(&doc).unwrap()) {
            for (_, shell_line) in shell_lines(&block) {
                for args in invocations(&shell_line) {
                    let words: Vec<&str> = args
                        .iter()
                        .map(String::as_str)
                        .take_while(|arg| !arg.starts_with('-'))
                        .collect();
                    if let Some(first) = words.first() {
                        shown.insert(first.to_string());
                        if let Some(second) = words.get(1) {
                            shown.insert(format!("{first} {second}"));
                        }
                    }
                }
            }
        }
    }
    let mut missing = Vec::new();
    for (name, node) in &tree.subcommands {
        if !shown.contains(name) {
            missing.push(name.clone());
        }
        for child in node.subcommands.keys() {
            if !shown.contains(&format!("{name} {child}")) {
                missing.push(format!("{name} {child}"));
            }
        }
    }
    assert!(missing.is_empty(), "subcommands no doc shows: {missing:?}");
}

/// The targets of a Markdown text's inline links (`[text](target)`), with their line numbers.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push((idx + 1, after[..end].to_owned()));
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`.
fn heading_anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut found = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.insert(heading_anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_link_between_the_pages_reaches_a_file_and_a_heading() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut failures = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (line, target) in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            let path = normalize(&path);
            let name = relative(&path);
            if !path.exists() {
                failures.push(format!("{}:{line}: `{target}`: no file `{name}`", relative(&doc)));
                continue;
            }
            if !anchor.is_empty() && path.extension().is_some_and(|ext| ext == "md") {
                let headings = anchors(&std::fs::read_to_string(&path).unwrap());
                if !headings.contains(anchor) {
                    failures.push(format!(
                        "{}:{line}: `{target}`: no heading `#{anchor}` in `{name}`",
                        relative(&doc)
                    ));
                }
            }
        }
    }
    assert!(root.join("docs").is_dir());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `a/docs/../README.md` → `a/README.md`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut parts: Vec<std::path::Component> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            part => parts.push(part),
        }
    }
    parts.iter().collect()
}

#[test]
fn anchors_are_the_ones_github_makes() {
    assert_eq!(heading_anchor(" HTML → observation"), "html--observation");
    assert_eq!(
        heading_anchor(" The run file: `react-docstore.run.v1`"),
        "the-run-file-react-docstorerunv1"
    );
    assert_eq!(
        link_targets("see [a](x.md#b) and [c](https://e.org/) then [d](../y.md)"),
        [
            (1, "x.md#b".to_owned()),
            (1, "https://e.org/".to_owned()),
            (1, "../y.md".to_owned())
        ]
    );
    assert!(
        anchors("# Top\n```sh\n# not a heading\n```\n## Sub part\n")
            .iter()
            .eq(["sub-part", "top"])
    );
}

// ---------------------------------------------------------------------------------------------
// Running the console examples

/// What the scripted model answers, by the subcommand that calls it (one model server per command).
fn model_script(subcommand: &str) -> Option<&'static [&'static str]> {
    match subcommand {
        // The run of tests/it/end_to_end.rs: a Search that hits, a Lookup, a Search that misses, Finish.
        "ask" => Some(&[
            " I need to search Colorado orogeny, find the area that the eastern sector of the Colorado orogeny extends into.\nAction 1: Search[Colorado orogeny]",
            " It does not say where the eastern sector is. Let me look up High Plains.\nAction 2: Lookup[High Plains]",
            " The eastern sector extends into the High Plains. I need to search Colorado orogenyy.\nAction 3: Search[Colorado orogenyy]\nObservation 3: invented",
            " High Plains rise in elevation from around 1,800 to 7,000 ft, so the answer is 1,800 to 7,000 ft.\nAction 4: Finish[1,800 to 7,000 ft]",
        ]),
        // The conversation of tests/it/ask.rs: an answer, the follow-up rewritten, its answer.
        "chat" => Some(&[
            "Thought 1: The current president of Poland is Andrzej Duda.\nAction 1: Finish[Andrzej Duda]",
            " Who is the wife of Andrzej Duda, the current president of Poland?",
            "Thought 1: Andrzej Duda's wife is Agata Kornhauser-Duda.\nAction 1: Finish[Agata Kornhauser-Duda]",
        ]),
        // The first question of fixtures/docstore/hotpotqa-distractor-3.json, over its paragraphs.
        "eval" => Some(&[
            " I need to search VIVA Media AG and find its new name.\nAction 1: Search[VIVA Media]",
            " VIVA Media AG became VIVA Media GmbH in 2004. GmbH stands for Gesellschaft mit beschränkter Haftung.\nAction 2: Finish[Gesellschaft mit beschränkter Haftung]",
        ]),
        _ => None,
    }
}

/// A `console` example: the command after `$ ` and the lines shown under it.
struct Example {
    line: usize,
    command: String,
    expected: Vec<String>,
}

fn examples(block: &Block) -> Vec<Example> {
    let mut found: Vec<Example> = Vec::new();
    for (offset, line) in block.lines.iter().enumerate() {
        match line.strip_prefix("$ ") {
            Some(command) => found.push(Example {
                line: block.line + offset,
                command: command.to_owned(),
                expected: Vec::new(),
            }),
            None => {
                if let Some(example) = found.last_mut() {
                    example.expected.push(line.clone());
                }
            }
        }
    }
    found
}

/// Lines without trailing blanks, and without the blank lines at the end.
fn normalized(lines: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut lines: Vec<String> = lines.into_iter().map(|line| line.trim_end().to_owned()).collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// Whether `actual` is the `shown` line, where each `[...]` stands for any text.
fn line_matches(shown: &str, actual: &str) -> bool {
    let parts: Vec<&str> = shown.split(ELISION).collect();
    if parts.len() == 1 {
        return shown == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

fn output_matches(shown: &[String], actual: &[String]) -> bool {
    shown.len() == actual.len() && shown.iter().zip(actual).all(|(s, a)| line_matches(s, a))
}

/// Runs `command` with `sh` from `dir`, stdout and stderr together, the binary first on PATH.
fn run_example(command: &str, dir: &Path, env: &[(String, String)]) -> Vec<String> {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!("{{ {command}\n}} 2>&1"))
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .envs(env.iter().map(|(name, value)| (name.as_str(), value.as_str())))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    normalized(String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_console_example_prints_what_the_docs_show() {
    let wiki = crate::mock_wikipedia().await;
    let mut failures = Vec::new();
    let (mut n_examples, mut n_blocks) = (0, 0);
    for doc in documents() {
        // One scratch directory per document: its examples may build on each other.
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(crate::fixture(""), dir.path().join("fixtures")).unwrap();
        let text = std::fs::read_to_string(&doc).unwrap();
        let blocks: Vec<_> = code_blocks(&text)
            .into_iter()
            .filter(|block| block.lang == "console")
            .collect();
        // Every console fence of the page is a block run here, each with an example at least.
        let fences = text.lines().filter(|line| line.trim() == "```console").count();
        assert_eq!(blocks.len(), fences, "{}", relative(&doc));
        n_blocks += fences;
        for block in blocks {
            let block_examples = examples(&block);
            assert!(!block_examples.is_empty(), "{}:{}", relative(&doc), block.line);
            for example in block_examples {
                n_examples += 1;
                let mut env = vec![(
                    "REACT_CACHE_DIR".to_owned(),
                    dir.path().join("cache").display().to_string(),
                )];
                // An `--offline` example reads a bundled cache, keyed by live Wikipedia's URLs.
                if !example.command.contains("--offline") {
                    env.push(("REACT_WIKI_URL".to_owned(), wiki.uri()));
                }
                let subcommands: Vec<String> = invocations(&example.command)
                    .into_iter()
                    .filter_map(|args| args.into_iter().next())
                    .collect();
                let mut model = None;
                if let Some(script) = subcommands.iter().find_map(|name| model_script(name)) {
                    let server = model_server("chat/completions", Sequence::chat(script)).await;
                    env.push(("OPENAI_BASE_URL".to_owned(), format!("{}/v1", server.uri())));
                    env.push(("REACT_MODEL".to_owned(), "gpt-4o-mini".to_owned()));
                    model = Some(server);
                }
                let command = example.command.clone();
                let cwd = dir.path().to_owned();
                let actual = tokio::task::spawn_blocking(move || run_example(&command, &cwd, &env))
                    .await
                    .unwrap();
                drop(model);
                let shown = normalized(example.expected);
                if !output_matches(&shown, &actual) {
                    failures.push(format!(
                        "{}:{}: $ {}\n--- shown\n{}\n--- printed\n{}",
                        relative(&doc),
                        example.line,
                        example.command,
                        shown.join("\n"),
                        actual.join("\n")
                    ));
                }
            }
        }
        // The runs the examples wrote are runs of the schema too.
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.to_string_lossy().ends_with(".results.jsonl") {
                for line in std::fs::read_to_string(&path).unwrap().lines() {
                    let run: Value = serde_json::from_str(line).unwrap();
                    let errors = validate_run(&run);
                    assert!(errors.is_empty(), "{}: {errors:?}", path.display());
                }
            }
        }
    }
    // README.md and the guide show console examples (22 blocks when this was written).
    assert!(n_blocks >= 20, "only {n_blocks} console blocks found");
    assert!(
        failures.is_empty(),
        "{}\n\n{} of {n_examples} examples differ",
        failures.join("\n\n"),
        failures.len()
    );
}

// ---------------------------------------------------------------------------------------------
// The run file's JSON Schema

/// `docs/run.v1.schema.json`.
fn run_schema() -> Value {
    schema_file("docs/run.v1.schema.json")
}

fn schema_file(path: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What `run` breaks of the schema of its format (`run.v1` or `run.v2`).
pub(crate) fn validate_run(run: &Value) -> Vec<String> {
    match run["format"].as_str() {
        Some("react-docstore.run.v2") => validate(&schema_file("docs/run.v2.schema.json"), run),
        _ => validate(&run_schema(), run),
    }
}

/// The JSON Schema keywords `validate` knows; any other in the schema is an error, so the schema
/// cannot say more than this validator checks.
const KEYWORDS: [&str; 15] = [
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "title",
    "description",
    "type",
    "const",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minimum",
    "maximum",
];

/// What `value` breaks of `schema` (draft 2020-12, the keywords of [`KEYWORDS`]), as JSON pointers.
fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check_value(schema, schema, value, "", &mut errors);
    errors
}

fn check_value(root: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(keywords) = schema.as_object() else {
        errors.push(format!("{at}: the schema is not an object"));
        return;
    };
    for (keyword, expected) in keywords {
        match keyword.as_str() {
            "$schema" | "$id" | "$defs" | "title" | "description" => {}
            "$ref" => {
                let target = expected
                    .as_str()
                    .and_then(|pointer| pointer.strip_prefix('#'))
                    .and_then(|pointer| root.pointer(pointer));
                match target {
                    Some(target) => check_value(root, target, value, at, errors),
                    None => errors.push(format!("{at}: unresolved $ref {expected}")),
                }
            }
            "type" => {
                let types: Vec<&str> = match expected {
                    Value::String(name) => vec![name.as_str()],
                    Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                if !types.iter().any(|name| has_type(value, name)) {
                    errors.push(format!("{at}: {value} is not of type {expected}"));
                }
            }
            "const" if value != expected => errors.push(format!("{at}: {value} is not {expected}")),
            "enum" if !expected.as_array().is_some_and(|values| values.contains(value)) => {
                errors.push(format!("{at}: {value} is not one of {expected}"));
            }
            "minimum"
                if value
                    .as_f64()
                    .zip(expected.as_f64())
                    .is_some_and(|(v, min)| v < min) =>
            {
                errors.push(format!("{at}: {value} is below {expected}"));
            }
            "maximum"
                if value
                    .as_f64()
                    .zip(expected.as_f64())
                    .is_some_and(|(v, max)| v > max) =>
            {
                errors.push(format!("{at}: {value} is above {expected}"));
            }
            "required" => {
                for name in expected
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if value.as_object().is_some_and(|object| !object.contains_key(name)) {
                        errors.push(format!("{at}: `{name}` is missing"));
                    }
                }
            }
            "properties" => {
                if let (Some(object), Some(properties)) = (value.as_object(), expected.as_object()) {
                    for (name, field) in object {
                        if let Some(field_schema) = properties.get(name) {
                            check_value(root, field_schema, field, &format!("{at}/{name}"), errors);
                        }
                    }
                }
            }
            "additionalProperties" => {
                let known = keywords.get("properties").and_then(Value::as_object);
                if expected == &Value::Bool(false) {
                    for name in value.as_object().into_iter().flat_map(|object| object.keys()) {
                        if !known.is_some_and(|known| known.contains_key(name)) {
                            errors.push(format!("{at}: unexpected property `{name}`"));
                        }
                    }
                } else if expected != &Value::Bool(true) {
                    errors.push(format!("{at}: additionalProperties must be true or false here"));
                }
            }
            "items" => {
                for (idx, item) in value.as_array().into_iter().flatten().enumerate() {
                    check_value(root, expected, item, &format!("{at}/{idx}"), errors);
                }
            }
            "const" | "enum" | "minimum" | "maximum" => {}
            unknown => errors.push(format!(
                "{at}: the schema uses `{unknown}`, which this validator does not check"
            )),
        }
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_u64() || value.is_i64(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => false,
    }
}

/// Every `*.json` file under `dir`, recursively.
fn json_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            json_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "json") {
            files.push(path);
        }
    }
}

#[test]
fn every_recorded_run_validates_against_the_run_schema() {
    let schema = run_schema();
    assert!(KEYWORDS.contains(&"$ref"));
    let mut files = Vec::new();
    json_files(&crate::fixture("runs"), &mut files);
    let mut n_runs = 0;
    for file in &files {
        let run: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        // Every file under fixtures/runs/ is a run file.
        assert_eq!(run["format"], "react-docstore.run.v1", "{}", file.display());
        let errors = validate(&schema, &run);
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
        n_runs += 1;
    }
    assert_eq!(n_runs, files.len());
    assert!(files.len() > 500, "the 512 Reflexion runs alone: {}", files.len());
    // The methods' recorded evaluations: a results line per run, of every method and format.
    let mut methods = BTreeSet::new();
    for entry in std::fs::read_dir(crate::fixture("runs/methods")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let run: Value = serde_json::from_str(line).unwrap();
                let errors = validate_run(&run);
                assert!(errors.is_empty(), "{}: {errors:?}", path.display());
                methods.insert(run["method"].as_str().unwrap().to_owned());
            }
        }
    }
    assert_eq!(methods.len(), 7, "{methods:?}");
    // The recorded trials: v2 runs carrying their trial and what their prompt showed.
    let trials = std::fs::read_to_string(crate::fixture("runs/trials/reflexion.results.jsonl")).unwrap();
    let mut n_reflections = 0;
    for line in trials.lines() {
        let run: Value = serde_json::from_str(line).unwrap();
        assert_eq!(run["format"], "react-docstore.run.v2");
        let errors = validate_run(&run);
        assert!(errors.is_empty(), "trials: {errors:?}");
        n_reflections += run["reflections"].as_array().map_or(0, Vec::len);
    }
    assert!(n_reflections > 0);
}

// ---------------------------------------------------------------------------------------------
// The checkers themselves

/// A CLI of two commands, described as clap prints it.
fn toy_tree() -> CommandHelp {
    let root = "Usage: tool <COMMAND>\n\nCommands:\n  ask    Ask\n  index  Index\n  help   Print help\n\nOptions:\n  -h, --help     Print help\n  -V, --version  Print version\n";
    let ask = "Usage: tool ask [OPTIONS] <QUESTION>\n\nArguments:\n  <QUESTION>  \n\nOptions:\n      --json              Print JSON\n      --model <MODEL>     The model [env: REACT_MODEL=]\n  -h, --help              Print help\n";
    let index = "Usage: tool index <COMMAND>\n\nCommands:\n  build  Build\n  help   Print help\n\nOptions:\n  -h, --help  Print help\n";
    let build = "Usage: tool index build [OPTIONS] --out <DIR> <SOURCE>...\n\nOptions:\n      --out <DIR>  Where\n  -h, --help  Print help\n";
    let texts: BTreeMap<String, String> =
        [("", root), ("ask", ask), ("index", index), ("index build", build)]
            .into_iter()
            .map(|(path, text)| (path.to_owned(), text.to_owned()))
            .collect();
    command_tree(&texts)
}

fn args_of(line: &str) -> Vec<String> {
    let mut found = invocations(line);
    assert_eq!(found.len(), 1, "{line}: {found:?}");
    found.remove(0)
}

#[test]
fn the_checker_refuses_a_flag_or_a_subcommand_that_does_not_exist() {
    let tree = toy_tree();
    let check = |line: &str| check_invocation(&tree, &args_of(line));
    assert_eq!(check("react-docstore ask --json --model=gpt-4 'Q?'"), Ok(()));
    assert_eq!(check("react-docstore index build dump.bz2 --out wiki"), Ok(()));
    assert_eq!(check("react-docstore --version"), Ok(()));
    assert_eq!(
        check("react-docstore ask --jsn Q"),
        Err("`react-docstore ask` has no flag `--jsn`".to_owned())
    );
    assert_eq!(
        check("react-docstore ask -x Q"),
        Err("`react-docstore ask` has no flag `-x`".to_owned())
    );
    assert_eq!(
        check("react-docstore index build dump.bz2 --json"),
        Err("`react-docstore index build` has no flag `--json`".to_owned())
    );
    assert_eq!(
        check("react-docstore asks Q"),
        Err("`react-docstore` has no subcommand `asks`".to_owned())
    );
    assert_eq!(
        check("react-docstore index rebuild x"),
        Err("`react-docstore index` has no subcommand `rebuild`".to_owned())
    );
    assert_eq!(
        check("react-docstore index"),
        Err("`react-docstore index` without a subcommand".to_owned())
    );
}

#[test]
fn the_checker_asks_the_real_binary() {
    let tree = command_tree(&help_texts());
    let check = |line: &str| check_invocation(&tree, &args_of(line));
    assert_eq!(
        check("react-docstore eval dev.json --limit 100 --retry-errors"),
        Ok(())
    );
    assert!(check("react-docstore eval dev.json --no-such-flag").is_err());
    assert!(check("react-docstore score pred.json gold.json --limit 3").is_err());
    assert!(check("react-docstore talk --docstore wikipedia").is_err());
    assert!(check("react-docstore index info wiki --out x").is_err());
}

#[test]
fn commands_are_found_in_shell_lines_as_sh_reads_them() {
    assert_eq!(
        invocations(r#"react-docstore ask "Is it \"so\"?" --json   # a comment --bogus"#),
        [["ask", "Is it \"so\"?", "--json"]]
    );
    assert_eq!(
        invocations(
            "printf 'a\\nb\\n' | NO_COLOR=1 react-docstore chat --today 2023-11-22 2>/dev/null | head -n 1"
        ),
        [["chat", "--today", "2023-11-22"]]
    );
    assert_eq!(
        invocations("react-docstore replay runs/ 2>&1 | tail -n 1; react-docstore score a b > out.txt"),
        [vec!["replay", "runs/"], vec!["score", "a", "b"]]
    );
    assert_eq!(
        invocations("react-docstore chat --json < questions.txt"),
        [["chat", "--json"]]
    );
    // Not a command: an argument, or a word in another command's arguments.
    assert!(invocations("echo react-docstore --bogus").is_empty());
    assert!(invocations("cargo run --release -- react-docstore").is_empty());

    let markdown = "text\n\n```sh\nreact-docstore eval dev.json \\\n    --limit 3\n```\n\n- item\n\n  ```console\n  $ react-docstore explore 'Search[x]'\n  Action: Search[x]\n  ```\n";
    let blocks = code_blocks(markdown);
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        shell_lines(&blocks[0]),
        [(4, "react-docstore eval dev.json     --limit 3".to_owned())]
    );
    assert_eq!(
        shell_lines(&blocks[1]),
        [(11, "react-docstore explore 'Search[x]'".to_owned())]
    );
    let shown = examples(&blocks[1]);
    assert_eq!(shown[0].expected, ["Action: Search[x]"]);
}

#[test]
fn elided_text_matches_anything_on_its_line_only() {
    assert!(line_matches(
        "built     [...] by react-docstore [...]",
        "built     Tue in 2.7 s by react-docstore 0.1.0"
    ));
    assert!(line_matches("in [...] into wiki", "in 0.3 s into wiki"));
    assert!(!line_matches("in [...] into wiki", "in 0.3 s into wiki-2"));
    assert!(!line_matches("exact", "exact "));
    let shown = ["a [...]".to_owned()];
    assert!(!output_matches(&shown, &["a 1".to_owned(), "b".to_owned()]));
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let schema = run_schema();
    let run = serde_json::json!({
        "format": "react-docstore.run.v1",
        "question": "q",
        "steps": [{"n": 1, "completions": ["x"]}],
        "answer": null,
        "stopped": "finish",
        "usage": {"llm_calls": 1}
    });
    assert_eq!(validate(&schema, &run), Vec::<String>::new());
    let broken = [
        ("/format", serde_json::json!("react-docstore.run.v2")),
        ("/stopped", serde_json::json!("gave_up")),
        ("/em", serde_json::json!(2)),
        ("/steps", serde_json::json!([{"n": 0, "completions": ["x"]}])),
        ("/steps", serde_json::json!([{"completions": "x"}])),
        ("/usage", serde_json::json!({"llm_calls": -1})),
        ("/extra", serde_json::json!(true)),
    ];
    for (pointer, bad) in broken {
        let mut run = run.clone();
        run.as_object_mut().unwrap().insert(pointer[1..].to_owned(), bad);
        assert!(!validate(&schema, &run).is_empty(), "{pointer} accepted: {run}");
    }
    let mut without_question = run.clone();
    without_question.as_object_mut().unwrap().remove("question");
    assert_eq!(
        validate(&schema, &without_question),
        ["`question` is missing"].map(|e| format!(": {e}"))
    );
    let unknown_keyword = serde_json::json!({"type": "object", "patternProperties": {}});
    assert_eq!(validate(&unknown_keyword, &run).len(), 1);
}

// ---------------------------------------------------------------------------------------------
// README on a fresh clone: no network, no model

/// The results file the docs' `score` examples read, shipped so that `score` runs without a model.
const SHIPPED_RESULTS: &str = "docstore/hotpotqa-distractor-3.results.jsonl";

/// A run line without what changes from one evaluation to the next.
fn without_volatile_fields(line: &str) -> Value {
    let mut run: Value = serde_json::from_str(line).unwrap();
    for field in ["elapsed_ms", "started_at", "finished_at"] {
        run.as_object_mut().unwrap().remove(field);
    }
    run
}

#[tokio::test(flavor = "multi_thread")]
async fn the_shipped_results_file_is_what_the_readme_eval_writes() {
    let dir = tempfile::tempdir().unwrap();
    let server = model_server("chat/completions", Sequence::chat(model_script("eval").unwrap())).await;
    let out = dir.path().join("written.results.jsonl");
    let output = Command::new(BIN)
        .args([
            "eval",
            "fixtures/docstore/hotpotqa-distractor-3.json",
            "--docstore",
            "distractor",
        ])
        .args(["--limit", "1", "--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
        .env("REACT_MODEL", "gpt-4o-mini")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let written = std::fs::read_to_string(&out).unwrap();
    let shipped_path = crate::fixture(SHIPPED_RESULTS);
    // UPDATE_FIXTURES=1 writes it anew (then review `git diff fixtures`).
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::write(&shipped_path, &written).unwrap();
    }
    let shipped = std::fs::read_to_string(&shipped_path).unwrap();
    assert_eq!(
        written.lines().map(without_volatile_fields).collect::<Vec<_>>(),
        shipped.lines().map(without_volatile_fields).collect::<Vec<_>>(),
        "fixtures/{SHIPPED_RESULTS} is not what README's eval writes: UPDATE_FIXTURES=1 cargo test -- docs::the_shipped"
    );
}

/// A local port that stands for the network: it counts the connections made to it, then closes
/// them. Pointing the proxy variables at it catches any request a command makes.
struct Tripwire {
    port: u16,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Tripwire {
    fn start() -> Tripwire {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(stream);
            }
        });
        Tripwire { port, connections }
    }

    /// The environment that sends every HTTP(S) request to the tripwire.
    fn proxy_env(&self) -> Vec<(String, String)> {
        let url = format!("http://127.0.0.1:{}", self.port);
        [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ]
        .into_iter()
        .map(|name| (name.to_owned(), url.clone()))
        .collect()
    }

    fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[test]
fn every_example_of_every_page_that_calls_no_model_runs_on_a_fresh_clone_without_network() {
    // A fresh clone: `fixtures/` and nothing any other example wrote; no Wikipedia but the real
    // one's address, behind a proxy that is the tripwire; no model.
    let tripwire = Tripwire::start();
    let mut failures = Vec::new();
    let mut n_run = 0;
    let mut pages_run = BTreeSet::new();
    for doc in documents() {
        // One scratch directory per page: its examples may build on each other.
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(crate::fixture(""), dir.path().join("fixtures")).unwrap();
        let mut env = tripwire.proxy_env();
        env.push((
            "REACT_CACHE_DIR".to_owned(),
            dir.path().join("cache").display().to_string(),
        ));
        let text = std::fs::read_to_string(&doc).unwrap();
        for block in code_blocks(&text)
            .into_iter()
            .filter(|block| block.lang == "console")
        {
            for example in examples(&block) {
                let calls_a_model = invocations(&example.command)
                    .iter()
                    .any(|args| args.first().is_some_and(|name| model_script(name).is_some()));
                if calls_a_model {
                    continue;
                }
                n_run += 1;
                pages_run.insert(relative(&doc));
                let before = tripwire.connections();
                let actual = run_example(&example.command, dir.path(), &env);
                let shown = normalized(example.expected);
                let reached_network = tripwire.connections() > before;
                if reached_network || !output_matches(&shown, &actual) {
                    failures.push(format!(
                        "{}:{}: $ {}\n(reached the network: {reached_network})\n--- shown\n{}\n--- printed\n{}",
                        relative(&doc),
                        example.line,
                        example.command,
                        shown.join("\n"),
                        actual.join("\n")
                    ));
                }
            }
        }
    }
    // README and 8 pages of docs/ showed such examples (33 of them) when this was written.
    assert!(n_run >= 30, "only {n_run} examples call no model");
    assert!(
        pages_run.len() >= 9,
        "only {pages_run:?} show examples that call no model"
    );
    assert!(
        failures.is_empty(),
        "{}\n\n{} of {n_run} examples differ or reach the network",
        failures.join("\n\n"),
        failures.len()
    );
}

#[test]
fn the_bundled_page_cache_holds_the_recorded_pages() {
    let dir = crate::fixture("wikipedia/cache/http");
    let mut n_entries = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let newline = bytes.iter().position(|&byte| byte == b'\n').unwrap();
        let header = std::str::from_utf8(&bytes[..newline]).unwrap();
        let url = header.splitn(3, ' ').nth(2).unwrap();
        let search = url
            .strip_prefix("https://en.wikipedia.org/w/index.php?search=")
            .unwrap()
            .replace('+', " ");
        let (_, page) = crate::WIKIPEDIA_PAGES
            .iter()
            .find(|(name, _)| *name == search)
            .unwrap_or_else(|| panic!("no recorded page for `{search}`"));
        assert_eq!(&bytes[newline + 1..], crate::wikipedia_page(page), "{url}");
        n_entries += 1;
    }
    assert!(n_entries > 0);
}

#[test]
fn readme_stays_a_front_door() {
    let bytes = std::fs::metadata(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .unwrap()
        .len();
    assert!(
        bytes <= 13_000,
        "README.md is {bytes} bytes: keep it at most 13,000 and move detail to docs/"
    );
}

/// The `tEXt` chunks of a PNG file: (keyword, text).
fn png_text_chunks(bytes: &[u8]) -> Vec<(String, String)> {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let mut chunks = Vec::new();
    let mut at = 8;
    while at + 12 <= bytes.len() {
        let length = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = &bytes[at + 4..at + 8];
        let data = &bytes[at + 8..at + 8 + length];
        if kind == b"tEXt" {
            let nul = data.iter().position(|&byte| byte == 0).unwrap();
            let text: String = data[nul + 1..].iter().map(|&byte| char::from(byte)).collect();
            chunks.push((String::from_utf8_lossy(&data[..nul]).into_owned(), text));
        }
        at += 12 + length;
    }
    chunks
}

#[test]
fn the_readme_report_picture_is_made_by_the_command_readme_shows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let command = readme
        .lines()
        .find(|line| line.starts_with("react-docstore report "))
        .expect("README shows a report command");
    assert!(readme.contains("](docs/images/report-top.png)"));
    let picture = std::fs::read(root.join("docs/images/report-top.png")).unwrap();
    let made_by: Vec<String> = png_text_chunks(&picture)
        .into_iter()
        .filter(|(keyword, _)| keyword == "Command")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(
        made_by,
        [command],
        "docs/images/report-top.png was not made by README's command: run docs/images/make.sh"
    );
}
