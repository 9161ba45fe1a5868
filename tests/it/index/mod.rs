//! The offline Wikipedia: `index build` on one small fixture per published dump format, then
//! Search and Lookup through `--docstore index:DIR`, in both profiles, from the library and the CLI.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use react_docstore::base::profile::Profile;
use react_docstore::docstore::index::{
    BuildConfig, BuildReport, DumpFormat, IndexError, IndexExplorer, IndexSource, MalformedRecords,
    PageIndex, build,
};
use react_docstore::docstore::{Docstore, DocstoreConfig, DocstoreKind};

use crate::fixture;

mod neighbours;
mod packaged;
mod shared;

/// Builds an index of `sources` (fixture names under `fixtures/index/`) into `dir/name`.
fn build_index(dir: &Path, name: &str, sources: &[&str]) -> BuildReport {
    let mut config = BuildConfig::new(
        sources
            .iter()
            .map(|source| fixture(&format!("index/{source}")))
            .collect(),
        dir.join(name),
    );
    config.threads = 2;
    build(&config, &AtomicBool::new(false)).unwrap_or_else(|error| panic!("{sources:?}: {error:#}"))
}

/// An explorer over the index at `dir` under `profile`.
fn explorer(dir: &Path, profile: Profile) -> IndexExplorer {
    IndexSource::open(dir, profile)
        .expect("the index opens")
        .explorer()
}

fn search(explorer: &mut IndexExplorer, entity: &str) -> String {
    explorer.search_now(entity).expect("the search runs")
}

/// One index per format, shared by the tests of this module (built once).
fn abstracts() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        build_index(dir.path(), "abstracts", &["hotpotqa-abstracts.tar.bz2"]);
        dir
    });
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| dir.path().join("abstracts"))
}

#[test]
fn every_format_builds_and_opens_its_pages() {
    let dir = tempfile::tempdir().unwrap();
    // (fixtures, format, pages, a title and the start of its first sentence)
    let cases: &[(&[&str], DumpFormat, u64, &str, &str)] = &[
        (
            &["hotpotqa-abstracts.tar.bz2"],
            DumpFormat::Hotpotqa,
            1006,
            "Constantin Medien",
            "Constantin Medien AG (formerly",
        ),
        (
            &["hotpotqa-full.bz2"],
            DumpFormat::Hotpotqa,
            50,
            "Mix Megapol",
            "Mix Megapol",
        ),
        (
            &["kilt.jsonl"],
            DumpFormat::Kilt,
            50,
            "Rome Protocols",
            "The Rome Protocols were a series",
        ),
        (
            &["fever-wiki-pages.zip"],
            DumpFormat::Fever,
            50,
            "Subway (Homicide: Life on the Street)",
            "",
        ),
        (
            &["dpr-psgs.tsv"],
            DumpFormat::Dpr,
            50,
            "Roller disco",
            "A roller disco is a discothèque",
        ),
        (
            &["dpr-psgs.tsv.gz"],
            DumpFormat::Dpr,
            50,
            "Constantin Medien",
            "Constantin Medien AG (formerly",
        ),
        (
            &["pages.jsonl"],
            DumpFormat::Jsonl,
            60,
            "Special Air Service",
            "The Special Air Service (SAS) is",
        ),
        (
            &["pages.jsonl.zst"],
            DumpFormat::Jsonl,
            60,
            "Special Air Service",
            "The Special Air Service (SAS) is",
        ),
    ];
    for (idx, (sources, format, pages, title, first)) in cases.iter().enumerate() {
        let report = build_index(dir.path(), &format!("index-{idx}"), sources);
        assert_eq!(report.manifest.dump_formats, vec![*format], "{sources:?}");
        assert_eq!(report.manifest.pages, *pages, "{sources:?}");
        assert_eq!(report.manifest.malformed, 0, "{sources:?}");
        assert!(
            report.manifest.snapshot.starts_with(format.as_str()),
            "{}",
            report.manifest.snapshot
        );
        let mut default = explorer(&report.dir, Profile::Default);
        let observation = search(&mut default, title);
        assert!(
            !observation.starts_with("Could not find"),
            "{sources:?} {title}: {observation}"
        );
        assert!(
            observation.starts_with(first),
            "{sources:?} {title}: {observation}"
        );
    }
}

#[test]
fn the_full_edition_keeps_paragraphs_and_drops_its_links() {
    let dir = tempfile::tempdir().unwrap();
    let report = build_index(dir.path(), "full", &["hotpotqa-full.bz2"]);
    let mut default = explorer(&report.dir, Profile::Default);
    let observation = search(&mut default, "Constantin Medien");
    assert!(observation.contains("is a German media group"), "{observation}");
    assert!(!observation.contains("<a"), "{observation}");
    // The title paragraph WikiExtractor writes first is not a sentence of the page.
    assert!(
        !observation.starts_with("Constantin Medien Constantin"),
        "{observation}"
    );
}

#[test]
fn fever_pages_read_without_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let report = build_index(dir.path(), "fever", &["fever-wiki-pages.zip"]);
    let mut default = explorer(&report.dir, Profile::Default);
    let observation = search(&mut default, "Constantin Medien");
    assert!(
        observation.starts_with("Constantin Medien AG (formerly EM.Entertainment"),
        "{observation}"
    );
    assert!(
        !observation.contains("-LRB-") && !observation.contains(" ,"),
        "{observation}"
    );
    let observation = search(
        &mut default,
        "Subway_-LRB-Homicide-COLON-_Life_on_the_Street-RRB-",
    );
    assert!(
        observation.starts_with("Could not find"),
        "escaped ids are not titles: {observation}"
    );
}

#[test]
fn searches_open_exact_and_case_insensitive_titles() {
    for profile in [Profile::Paper, Profile::Default] {
        let mut explorer = explorer(abstracts(), profile);
        // Exact, MediaWiki-normalised (underscores, first letter), case-insensitive.
        for entity in [
            "Constantin Medien",
            "constantin_Medien",
            "  Constantin   Medien ",
            "CONSTANTIN MEDIEN",
        ] {
            let observation = search(&mut explorer, entity);
            assert!(
                observation.starts_with("Constantin Medien AG"),
                "{profile:?} {entity}: {observation}"
            );
        }
        // The exact title wins over a title that differs only in case.
        assert!(search(&mut explorer, "Viva Media").starts_with("Viva Media is a synthetic fixture page"));
        assert!(search(&mut explorer, "VIVA Media").starts_with("VIVA Media GmbH"));
    }
}

#[test]
fn misses_rank_similar_titles_typos_and_extra_words_included() {
    let mut default = explorer(abstracts(), Profile::Default);
    #[track_caller]
    fn check(explorer: &mut IndexExplorer, entity: &str, first: &str) {
        let observation = search(explorer, entity);
        let expected = format!("Could not find {entity}. Similar: ['{first}'");
        assert!(observation.starts_with(&expected), "{entity}: {observation}");
    }
    // One mistyped word.
    check(&mut default, "Constantin Medein", "Constantin Medien");
    check(
        &mut default,
        "Nashvile Terminal Subdivision",
        "Nashville Terminal Subdivision",
    );
    check(&mut default, "Pottawatomie masacre", "Pottawatomie massacre");
    // Extra words.
    check(
        &mut default,
        "Nashville Terminal Subdivision railway line",
        "Nashville Terminal Subdivision",
    );
    assert_eq!(
        search(&mut default, "qqqq zzzz"),
        "Could not find qqqq zzzz. No similar pages."
    );
    let mut paper = explorer(abstracts(), Profile::Paper);
    assert_eq!(
        search(&mut paper, "qqqq zzzz"),
        "Could not find qqqq zzzz. Similar: []."
    );
    assert_eq!(
        search(&mut paper, "Constantin Medein"),
        search(&mut default, "Constantin Medein"),
        "both profiles word a miss alike"
    );
}

#[test]
fn disambiguation_pages_behave_as_on_wikipedia() {
    let mut default = explorer(abstracts(), Profile::Default);
    assert_eq!(
        search(&mut default, "Mercury"),
        "Could not find Mercury. Similar: ['Mercury (planet)', 'Mercury (element)', 'Mercury (mythology)']."
    );
    let viva = search(&mut default, "Viva (disambiguation)");
    for entry in [
        "'Viva (UK and Ireland)'",
        "'VIVA Media'",
        "'Viva Media'",
        "'VIVA Poland'",
    ] {
        assert!(viva.contains(entry), "{viva}");
    }
    // The paper re-searches `[Mercury]`: a bracketed entity is never a title, so it is ranked.
    let mut paper = explorer(abstracts(), Profile::Paper);
    let observation = search(&mut paper, "Mercury");
    assert!(
        observation.starts_with("Could not find [Mercury]. Similar: ['Mercury', 'Mercury (planet)'"),
        "{observation}"
    );
}

#[test]
fn lookup_walks_the_open_page_and_every_search_resets_it() {
    let mut default = explorer(abstracts(), Profile::Default);
    assert!(default.lookup("Nashville").starts_with("No page is open"));
    search(&mut default, "Nashville Terminal Subdivision");
    let first = default.lookup("railroad");
    assert!(
        first.starts_with("(Result 1 / 2) The Nashville Terminal Subdivision is a railroad line"),
        "{first}"
    );
    let second = default.lookup("RAILROAD");
    assert!(second.starts_with("(Result 2 / 2) "), "{second}");
    assert_eq!(default.lookup("railroad"), "No more results.");
    // A miss keeps the page but starts the cursor again.
    search(&mut default, "qqqq zzzz");
    assert_eq!(default.lookup("railroad"), first);
    assert_eq!(default.lookup("no such word"), "No results for no such word.");

    let mut paper = explorer(abstracts(), Profile::Paper);
    search(&mut paper, "Nashville Terminal Subdivision");
    assert!(paper.lookup("railroad").starts_with("(Result 1 / 2) "));
    assert!(paper.lookup("railroad").starts_with("(Result 2 / 2) "));
    // The paper's cursor survives a miss; a successful search starts it again.
    search(&mut paper, "qqqq zzzz");
    assert_eq!(paper.lookup("railroad"), "No more results.\n");
    search(&mut paper, "Nashville Terminal Subdivision");
    assert!(paper.lookup("railroad").starts_with("(Result 1 / 2) "));
}

#[test]
fn malformed_records_are_reported_with_file_and_line_or_stop_a_strict_build() {
    let dir = tempfile::tempdir().unwrap();
    let report = build_index(dir.path(), "lenient", &["malformed.jsonl"]);
    assert_eq!(report.manifest.pages, 7);
    assert_eq!(report.manifest.malformed, 5);
    let file = fixture("index/malformed.jsonl").display().to_string();
    let reported: Vec<String> = report.malformed.iter().map(ToString::to_string).collect();
    assert_eq!(
        reported,
        vec![
            format!("{file}, line 3: not valid JSON: EOF while parsing a string at line 1 column 53"),
            format!("{file}, line 5: no `title` field"),
            format!("{file}, line 7: field `title` is a number, expected a string"),
            format!("{file}, line 9: field `text` is a number, expected a string"),
            format!("{file}, line 11: not valid UTF-8 (byte 40 of the line)"),
        ]
    );

    let mut config = BuildConfig::new(vec![fixture("index/malformed.jsonl")], dir.path().join("strict"));
    config.malformed = MalformedRecords::Fail;
    let error = build(&config, &AtomicBool::new(false)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "malformed record (--strict): {file}, line 3: not valid JSON: EOF while parsing a string at line 1 column 53"
        )
    );
    assert!(!dir.path().join("strict").exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no staging directory is left behind"
    );
}

#[test]
fn an_interrupted_build_leaves_nothing_that_opens() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wiki");
    let config = BuildConfig::new(vec![fixture("index/hotpotqa-abstracts.tar.bz2")], out.clone());
    let error = build(&config, &AtomicBool::new(true)).unwrap_err();
    assert!(matches!(error, IndexError::Interrupted), "{error}");
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the staging directory is removed"
    );

    // A directory holding index files but no manifest (a build killed half-way) never opens.
    build_index(dir.path(), "wiki", &["pages.jsonl"]);
    std::fs::remove_file(out.join("react-docstore-index.json")).unwrap();
    let error = IndexSource::open(&out, Profile::Default).err().expect("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "`{}` is not a complete index (index files but no manifest): its build was interrupted? build it again",
            out.display()
        )
    );
    // Building again replaces it.
    let report = build_index(dir.path(), "wiki", &["kilt.jsonl"]);
    assert_eq!(report.manifest.dump_formats, vec![DumpFormat::Kilt]);
    assert!(
        search(&mut explorer(&out, Profile::Default), "Rome Protocols").starts_with("The Rome Protocols")
    );
    // A missing index says how to build one.
    let missing = dir.path().join("missing");
    let error = DocstoreConfig {
        kind: DocstoreKind::Index(missing.clone()),
        ..DocstoreConfig::new(Profile::Default)
    }
    .open()
    .err()
    .expect("refused");
    assert!(
        error
            .to_string()
            .starts_with(&format!("no index at `{}`", missing.display())),
        "{error}"
    );
}

#[test]
fn a_directory_that_never_was_an_index_is_not_called_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let not_index = |path: &Path| {
        format!(
            "`{}` is not an index (no `react-docstore-index.json` in it): give the directory `react-docstore index build SOURCE... --out DIR` wrote",
            path.display()
        )
    };
    // A directory of other files, an empty one, a file.
    let fixtures = fixture("");
    let fixtures = fixtures.to_str().unwrap().trim_end_matches('/');
    let (_, stderr, code) = cli(&["explore", "--docstore", &format!("index:{fixtures}"), "Search[x]"]);
    assert_eq!(
        (code, stderr.trim_end()),
        (2, format!("error: {}", not_index(Path::new(fixtures))).as_str())
    );
    let file = fixture("index/pages.jsonl");
    for path in [dir.path(), file.as_path()] {
        let error = IndexSource::open(path, Profile::Default).err().expect("refused");
        assert_eq!(error.to_string(), not_index(path));
    }
}

#[test]
fn a_stale_staging_directory_of_a_killed_build_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    // No process has pid 4294967: the build that left this is gone.
    let stale = dir.path().join(".wiki.building-4294967");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("junk"), "x").unwrap();
    build_index(dir.path(), "wiki", &["pages.jsonl"]);
    assert!(!stale.exists());
}

#[test]
fn the_snapshot_depends_on_the_pages_not_on_threads_or_compression() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BuildConfig::new(vec![fixture("index/dpr-psgs.tsv")], dir.path().join("one"));
    config.threads = 1;
    let one = build(&config, &AtomicBool::new(false)).unwrap();
    let two = build_index(dir.path(), "two", &["dpr-psgs.tsv.gz"]);
    assert_eq!(one.manifest.snapshot, two.manifest.snapshot);
    let other = build_index(dir.path(), "other", &["pages.jsonl"]);
    assert_ne!(one.manifest.snapshot, other.manifest.snapshot);
}

#[test]
fn an_unknown_format_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("notes.txt");
    std::fs::write(&source, "just some notes\n").unwrap();
    let config = BuildConfig::new(vec![source.clone()], dir.path().join("wiki"));
    let error = build(&config, &AtomicBool::new(false)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "cannot tell the format of `{}` from its first line (`just some notes\n`): pass --format hotpotqa, kilt, fever, dpr or jsonl",
            source.display()
        )
    );
}

#[test]
fn a_question_file_is_pointed_at_the_docstore_that_reads_it_not_at_a_format() {
    let dir = tempfile::tempdir().unwrap();
    let questions = fixture("docstore/hotpotqa-distractor-3.json");
    let config = BuildConfig::new(vec![questions.clone()], dir.path().join("wiki"));
    let error = build(&config, &AtomicBool::new(false)).unwrap_err().to_string();
    let spec = format!("corpus:{}", questions.display());
    assert_eq!(
        error,
        format!(
            "`{}` is a question file, not a dump of pages, and no `--format` reads it: a HotpotQA file's context paragraphs are searched without an index, with `--docstore {spec}` (or `--docstore distractor` in `eval`, each question its own)",
            questions.display()
        )
    );
    // What it suggests works.
    let (stdout, stderr, code) = cli(&["explore", "--docstore", &spec, "Search[VIVA Media]"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("Observation: VIVA Media GmbH (until 2004"),
        "{stdout}"
    );

    let claims = fixture("fever/paper_dev.jsonl");
    let config = BuildConfig::new(vec![claims.clone()], dir.path().join("fever"));
    let error = build(&config, &AtomicBool::new(false)).unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "`{}` is a FEVER claims file, not a dump of pages: index FEVER's `wiki-pages/*.jsonl` (`--format fever`) and give the claims to `eval`",
            claims.display()
        )
    );
}

/// Runs the binary; returns stdout, stderr and the exit code.
fn cli(args: &[&str]) -> (String, String, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_react-docstore"))
        .args(args)
        .env_remove("REACT_PROFILE")
        .env_remove("REACT_MODEL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the binary runs");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

#[test]
fn cli_builds_describes_and_explores_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wiki");
    let out_arg = out.to_str().unwrap();
    let source = fixture("index/hotpotqa-abstracts.tar.bz2");
    let (stdout, stderr, code) = cli(&["index", "build", source.to_str().unwrap(), "--out", out_arg]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("indexed 1,006 pages from 1 source in "),
        "{stdout}"
    );

    let (info, stderr, code) = cli(&["index", "info", out_arg]);
    assert_eq!(code, 0, "{stderr}");
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&crate::regex_escape(out_arg), "[DIR]");
    settings.add_filter(&crate::regex_escape(source.to_str().unwrap()), "[SOURCE]");
    settings.add_filter(
        r"built     .* in \d+\.\d s by react-docstore \S+",
        "built     [DATE] in [SECONDS] s by react-docstore [VERSION]",
    );
    settings.add_filter(r"size      .*", "size      [SIZE]");
    settings.bind(|| assert_snapshot!("cli_index_info", info));

    let (json, _, code) = cli(&["index", "info", "--json", out_arg]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["pages"], 1006);
    assert_eq!(json["format"], "react-docstore.index.v3");
    assert_eq!(json["dump_formats"], serde_json::json!(["hotpotqa"]));
    assert!(json["index_bytes"].as_u64().unwrap() > 0);

    let docstore = format!("index:{out_arg}");
    let (stdout, stderr, code) = cli(&[
        "explore",
        "--docstore",
        &docstore,
        "--json",
        "Search[Nashvile Terminal Subdivision]",
        "Search[Nashville Terminal Subdivision]",
        "Lookup[railroad]",
    ]);
    assert_eq!((code, stderr.as_str()), (0, ""));
    assert_snapshot!("cli_index_explore", stdout);

    let (_, stderr, code) = cli(&["index", "info", dir.path().join("none").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no index at"), "{stderr}");
}

#[test]
fn replay_observes_unrecorded_steps_through_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("wiki");
    build_index(dir.path(), "wiki", &["hotpotqa-abstracts.tar.bz2"]);
    let run = serde_json::json!({
        "format": "react-docstore.run.v1",
        "question": "Where is Constantin Medien based?",
        "gold": "Ismaning",
        "steps": [
            {"completions": [" I need to search Constantin Medein.\nAction 1: Search[Constantin Medein]"]},
            {"completions": [" Let me search the exact title.\nAction 2: Search[Constantin Medien]"]},
            {"completions": [" It is based in Ismaning.\nAction 3: Finish[Ismaning]"]}
        ]
    });
    let path = dir.path().join("run.json");
    std::fs::write(&path, run.to_string()).unwrap();
    let docstore = format!("index:{}", out.display());
    let replayed = replay_first_run(&docstore, &path);
    assert_eq!(
        replayed["steps"][0]["observation"],
        "Could not find Constantin Medein. Similar: ['Constantin Medien']."
    );
    assert!(
        replayed["steps"][1]["observation"]
            .as_str()
            .unwrap()
            .starts_with("Constantin Medien AG (formerly EM.Entertainment")
    );
    assert_eq!(replayed["answer"], "Ismaning");
    assert_eq!(replayed["em"], 1);
}

#[test]
fn eval_records_the_snapshot_and_refuses_to_resume_another() {
    let dir = tempfile::tempdir().unwrap();
    build_index(dir.path(), "wiki", &["hotpotqa-abstracts.tar.bz2"]);
    let index = format!("index:{}", dir.path().join("wiki").display());
    let questions = dir.path().join("dev.jsonl");
    std::fs::write(
        &questions,
        "{\"_id\": \"q1\", \"question\": \"Where is Constantin Medien based?\", \"answer\": \"Ismaning\"}\n",
    )
    .unwrap();
    let results = dir.path().join("dev.results.jsonl");
    let stored = serde_json::json!({
        "format": "react-docstore.run.v1",
        "id": "q1",
        "question": "Where is Constantin Medien based?",
        "gold": "Ismaning",
        "steps": [],
        "answer": "Ismaning",
        "stopped": "finish",
        "docstore": {"kind": "index", "snapshot": "hotpotqa-0000000000000000"}
    });
    std::fs::write(&results, format!("{stored}\n")).unwrap();
    let (_, stderr, code) = cli(&[
        "eval",
        questions.to_str().unwrap(),
        "--docstore",
        &index,
        "--out",
        results.to_str().unwrap(),
        "--model",
        "never-called",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("not one evaluation: they differ in docstore — ")
            && stderr.contains("line 1 has index (snapshot hotpotqa-0000000000000000), this command has index (snapshot hotpotqa-"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&results).unwrap(),
        format!("{stored}\n"),
        "the results file is untouched"
    );
}

/// `n` JSON Lines pages of about 200 bytes each.
fn jsonl_pages(n: usize) -> String {
    (0..n)
        .map(|idx| {
            format!(
                "{{\"title\": \"Generated page {idx}\", \"text\": \"Generated page {idx} is one of many pages written for this test. It has a second sentence about item {idx}.\"}}\n"
            )
        })
        .collect()
}

#[test]
fn the_snapshot_does_not_depend_on_packaging() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    // More than one work item's worth (1 MiB), so the plain file is cut into several items.
    let text = jsonl_pages(12_000);
    assert!(text.len() > 1 << 20);
    let plain = dir.path().join("pages.jsonl");
    std::fs::write(&plain, &text).unwrap();
    // The same lines as a bzip2 member of a tar archive (handed whole to one parsing thread).
    let mut member = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    member.write_all(text.as_bytes()).unwrap();
    let member = member.finish().unwrap();
    let archive = dir.path().join("pages.tar");
    let mut tar = tar::Builder::new(std::fs::File::create(&archive).unwrap());
    let mut header = tar::Header::new_gnu();
    header.set_size(member.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "dump/AA/pages.bz2", &member[..])
        .unwrap();
    tar.finish().unwrap();
    drop(tar);
    let build_from = |source: &Path, name: &str| {
        let config = BuildConfig::new(vec![source.to_owned()], dir.path().join(name));
        build(&config, &AtomicBool::new(false)).unwrap()
    };
    let from_plain = build_from(&plain, "plain");
    let from_tar = build_from(&archive, "tar");
    assert_eq!(from_plain.manifest.pages, 12_000);
    assert_eq!(from_tar.manifest.pages, 12_000);
    assert_eq!(from_plain.manifest.snapshot, from_tar.manifest.snapshot);
    // Pages past the first work item keep their place: the last one opens by its title.
    let mut default = explorer(&from_plain.dir, Profile::Default);
    assert!(search(&mut default, "Generated page 11999").starts_with("Generated page 11999 is one of many"));
}

#[test]
fn malformed_and_blank_first_lines_are_skipped_and_line_numbers_hold_across_work_items() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("pages.jsonl");
    let mut text = String::from("\u{feff}\n{\"title\": \"Broken\n\n");
    text.push_str(&jsonl_pages(12_000));
    text.push_str("{\"title\": 7, \"text\": \"x\"}\n");
    std::fs::write(&source, &text).unwrap();
    let config = BuildConfig::new(vec![source.clone()], dir.path().join("wiki"));
    let report = build(&config, &AtomicBool::new(false)).unwrap();
    assert_eq!(report.manifest.pages, 12_000);
    let reported: Vec<String> = report.malformed.iter().map(ToString::to_string).collect();
    assert_eq!(reported.len(), 2, "{reported:?}");
    assert!(
        reported[0].starts_with(&format!("{}, line 2: not valid JSON", source.display())),
        "{reported:?}"
    );
    assert_eq!(
        reported[1],
        format!(
            "{}, line 12004: field `title` is a number, expected a string",
            source.display()
        )
    );
}

#[test]
fn a_directory_source_and_a_forced_format() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    std::fs::create_dir_all(dump.join("AA")).unwrap();
    std::fs::copy(fixture("index/pages.jsonl"), dump.join("AA/wiki_00")).unwrap();
    std::fs::copy(fixture("index/kilt.jsonl"), dump.join("AA/wiki_01")).unwrap();
    std::fs::write(dump.join(".hidden"), "not read").unwrap();
    // Forced: the KILT lines are not JSON Lines pages (no `title`), so each is reported.
    let mut config = BuildConfig::new(vec![dump.clone()], dir.path().join("wiki"));
    config.format = Some(DumpFormat::Jsonl);
    let report = build(&config, &AtomicBool::new(false)).unwrap();
    assert_eq!((report.manifest.pages, report.manifest.malformed), (60, 50));
    assert!(
        report.malformed[0].origin.ends_with("(AA/wiki_01)"),
        "{:?}",
        report.malformed[0]
    );
}

#[test]
fn only_an_index_is_replaced_and_a_refusal_comes_before_any_reading() {
    let dir = tempfile::tempdir().unwrap();
    let precious = dir.path().join("notes");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("meta.json"), "{}").unwrap();
    let mut config = BuildConfig::new(vec![dir.path().join("missing-source.jsonl")], precious.clone());
    let error = build(&config, &AtomicBool::new(false)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "`{}` exists and is not an index: refusing to replace it",
            precious.display()
        )
    );
    assert!(precious.join("meta.json").exists());
    // An index is replaced, again and again, leaving nothing else behind.
    config.out = dir.path().join("wiki");
    for source in ["pages.jsonl", "kilt.jsonl", "pages.jsonl"] {
        config.sources = vec![fixture(&format!("index/{source}"))];
        build(&config, &AtomicBool::new(false)).unwrap();
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["notes", "wiki"]);
    assert!(
        search(
            &mut explorer(&config.out, Profile::Default),
            "Special Air Service"
        )
        .starts_with("The Special Air Service")
    );
}

/// Builds `lines` (JSON Lines pages) into `dir/name` with `threads` threads.
fn build_jsonl(dir: &Path, name: &str, lines: &str, threads: usize) -> BuildReport {
    let source = dir.join(format!("{name}.jsonl"));
    std::fs::write(&source, lines).unwrap();
    let mut config = BuildConfig::new(vec![source], dir.join(name));
    config.threads = threads;
    build(&config, &AtomicBool::new(false)).unwrap()
}

#[test]
fn an_index_is_one_segment_in_dump_order_whatever_the_threads() {
    let dir = tempfile::tempdir().unwrap();
    // Several work items (1 MiB each) for several threads; titles whose scores tie.
    let lines = jsonl_pages(12_000);
    let mut observations = Vec::new();
    for threads in [1, 2, 4] {
        let report = build_jsonl(dir.path(), &format!("threads-{threads}"), &lines, threads);
        let index = tantivy::Index::open_in_dir(&report.dir).unwrap();
        let searcher = index.reader().unwrap().searcher();
        assert_eq!(searcher.segment_readers().len(), 1, "{threads} threads");
        let ordinals = searcher.segment_reader(0).fast_fields().u64("ordinal").unwrap();
        let ordinals: Vec<u64> = (0..12_000).map(|doc| ordinals.first(doc).unwrap()).collect();
        assert!(
            ordinals.windows(2).all(|pair| pair[0] < pair[1]),
            "{threads} threads: document ids follow the dump"
        );
        observations.push(search(
            &mut explorer(&report.dir, Profile::Default),
            "Generated pages",
        ));
    }
    // Equal scores and equal similarity: the pages earlier in the dump come first.
    assert_eq!(
        observations[0],
        "Could not find Generated pages. Similar: ['Generated page 0', 'Generated page 1', \
         'Generated page 2', 'Generated page 3', 'Generated page 4']."
    );
    assert!(
        observations
            .iter()
            .all(|observation| *observation == observations[0])
    );
}

#[test]
fn a_typo_finds_its_title_among_many_that_share_its_other_word() {
    let dir = tempfile::tempdir().unwrap();
    // Forty titles holding `Miruussa` before the intended one, all scoring alike; `Nea` is
    // itself a title word, and too short for the old fuzzy matching.
    let mut lines = String::new();
    for idx in 0..40 {
        lines.push_str(&format!(
            "{{\"title\": \"Place{idx} Miruussa\", \"text\": \"It is a river.\"}}\n"
        ));
    }
    lines.push_str("{\"title\": \"Nea Polis\", \"text\": \"It is a town.\"}\n");
    lines.push_str("{\"title\": \"Nesa Miruussa\", \"text\": \"It is a river.\"}\n");
    let report = build_jsonl(dir.path(), "typos", &lines, 2);
    let mut default = explorer(&report.dir, Profile::Default);
    let observation = search(&mut default, "Nea Miruussa");
    assert!(
        observation.starts_with("Could not find Nea Miruussa. Similar: ['Nesa Miruussa', "),
        "{observation}"
    );
    let observation = search(&mut default, "Nesa Miruusa");
    assert!(
        observation.starts_with("Could not find Nesa Miruusa. Similar: ['Nesa Miruussa', "),
        "{observation}"
    );
}

#[test]
fn a_title_of_frequent_words_alone_is_no_candidate_when_a_rarer_word_leads() {
    let dir = tempfile::tempdir().unwrap();
    // `Old` is held by nearly every title (more than a thousand, and more than one in two hundred:
    // long postings), `Zorvik` by two; `Old Zorvk` has a typo in the rare word. Only the pages a rare clause finds are
    // candidates; `Old` adds to their score but brings no page of its own (it used to bring
    // `Old Bay` and the `Old Town` pages, whose titles share nothing else with the search).
    let mut lines = String::new();
    for idx in 0..1_200 {
        lines.push_str(&format!(
            "{{\"title\": \"Old Town {idx}\", \"text\": \"A town.\"}}\n"
        ));
    }
    lines.push_str("{\"title\": \"Old Bay\", \"text\": \"A bay.\"}\n");
    lines.push_str("{\"title\": \"Zorvik Bay\", \"text\": \"A bay.\"}\n");
    lines.push_str("{\"title\": \"Old Zorvik\", \"text\": \"A village.\"}\n");
    let report = build_jsonl(dir.path(), "frequent", &lines, 2);
    let mut default = explorer(&report.dir, Profile::Default);
    assert_eq!(
        search(&mut default, "Old Zorvk"),
        "Could not find Old Zorvk. Similar: ['Old Zorvik', 'Zorvik Bay']."
    );
    // With no word whose title clauses are all short, every page any clause finds is a
    // candidate, as before.
    assert!(search(&mut default, "Old Twn").starts_with("Could not find Old Twn. Similar: ['Old Town 0', "),);
}

#[test]
fn candidates_titles_are_read_from_the_title_column() {
    let dir = tempfile::tempdir().unwrap();
    let report = build_jsonl(dir.path(), "column", &jsonl_pages(10), 1);
    let index = tantivy::Index::open_in_dir(&report.dir).unwrap();
    let searcher = index.reader().unwrap().searcher();
    let titles = searcher.segment_reader(0).fast_fields().str("title").unwrap();
    let titles = titles.expect("a title column");
    let mut title = String::new();
    titles
        .ord_to_str(titles.ords().first(3).unwrap(), &mut title)
        .unwrap();
    assert_eq!(title, "Generated page 3");
}

#[test]
fn an_index_of_an_older_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let report = build_jsonl(dir.path(), "old", &jsonl_pages(10), 1);
    let manifest = report.dir.join("react-docstore-index.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("\"react-docstore.index.v3\""), "{text}");
    // An index of the first format: segments in any order, ties read from a fast field.
    std::fs::write(
        &manifest,
        text.replace("react-docstore.index.v3", "react-docstore.index.v1"),
    )
    .unwrap();
    let error = IndexSource::open(&report.dir, Profile::Default)
        .err()
        .expect("refused");
    assert_eq!(
        error.to_string(),
        format!(
            "index `{}` has format `react-docstore.index.v1`, this version reads `react-docstore.index.v3` and `react-docstore.index.v2`: build it again",
            report.dir.display()
        )
    );
}

/// An index of format v2 (title terms, no title table), built by the release before format v3
/// from `fixtures/index/v2/hotpotqa-titles.jsonl`, still opens, and answers every search and
/// lookup as the v3 index of the same pages does.
#[test]
fn an_index_of_format_v2_searches_as_format_v3() {
    let v2 = fixture("index/v2/index");
    let dir = tempfile::tempdir().unwrap();
    let v3 = build_index(dir.path(), "v3", &["v2/hotpotqa-titles.jsonl"]);
    let (_, old_manifest) = PageIndex::open(&v2).unwrap();
    assert_eq!(
        (old_manifest.format.as_str(), v3.manifest.format.as_str()),
        ("react-docstore.index.v2", "react-docstore.index.v3")
    );
    assert_eq!(old_manifest.snapshot, v3.manifest.snapshot);
    let entities = [
        "Viva Media",
        "VIVA Media",
        "viva media",
        "Viva_Media",
        "  viva   MEDIA ",
        "Viva (disambiguation)",
        "Mercury",
        "mercury (PLANET)",
        "Nashville Terminal Subdivision",
        "nashville terminal subdivision",
        "Nashvile Terminal",
        "Mercury (moon)",
    ];
    for profile in [Profile::Default, Profile::Paper] {
        let mut old = explorer(&v2, profile);
        let mut new = explorer(&v3.dir, profile);
        for entity in entities {
            assert_eq!(
                search(&mut old, entity),
                search(&mut new, entity),
                "{profile:?}: {entity}"
            );
            assert_eq!(old.lookup("the"), new.lookup("the"), "{profile:?}: {entity}");
        }
    }
}

/// A v3 index whose title table is gone opens nowhere, and says which file is missing.
#[test]
fn an_index_without_its_title_table_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let report = build_jsonl(dir.path(), "no-table", &jsonl_pages(10), 1);
    let table = report.dir.join("react-docstore-titles.sstable");
    std::fs::remove_file(&table).unwrap();
    let error = IndexSource::open(&report.dir, Profile::Default)
        .err()
        .expect("refused");
    assert_eq!(error.to_string(), format!("cannot read `{}`", table.display()));
}

// ------------------------------------------------------- replay against an index; replacing an index

#[test]
fn replay_refuses_a_run_recorded_against_another_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let report = build_index(dir.path(), "wiki", &["hotpotqa-abstracts.tar.bz2"]);
    let snapshot = report.manifest.snapshot.clone();
    let index = format!("index:{}", report.dir.display());
    let run = |docstore: serde_json::Value| {
        serde_json::json!({
            "format": "react-docstore.run.v1",
            "question": "Where is Constantin Medien based?",
            "gold": "Ismaning",
            "steps": [
                {"completions": [" I need to search Constantin Medien.\nAction 1: Search[Constantin Medien]"]},
                {"completions": [" It is based in Ismaning.\nAction 2: Finish[Ismaning]"]}
            ],
            "answer": "Ismaning",
            "stopped": "finish",
            "docstore": docstore
        })
    };
    let same = run(serde_json::json!({"kind": "index", "snapshot": snapshot}));
    let other = run(serde_json::json!({"kind": "index", "snapshot": "hotpotqa-0000000000000000"}));
    let results = dir.path().join("results.jsonl");
    std::fs::write(&results, format!("{same}\n{other}\n")).unwrap();
    let (stdout, stderr, code) = cli(&[
        "replay",
        "--json",
        "--docstore",
        &index,
        results.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: the run at {}, line 2 was recorded against the docstore index (snapshot hotpotqa-0000000000000000), and this replay would observe its unrecorded steps with index (snapshot {snapshot}): a replay never mixes snapshots — pass the docstore that run used, or no --docstore",
            results.display()
        )
    );
    assert_eq!(stdout, "", "refused before any run is replayed");

    // The run of this very snapshot replays from it.
    std::fs::write(&results, format!("{same}\n")).unwrap();
    let replayed = replay_first_run(&index, &results);
    assert!(
        replayed["steps"][0]["observation"]
            .as_str()
            .unwrap()
            .starts_with("Constantin Medien AG (formerly EM.Entertainment")
    );

    // The file is read once, both checked and replayed from those bytes: behind a named pipe, a
    // second read would wait for a writer that never comes.
    let piped = dir.path().join("piped.jsonl");
    let writer = crate::pipe_read_once(&piped, format!("{same}\n"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_react-docstore"));
    command
        .args(["replay", "--json", "--docstore", &index])
        .arg(&piped);
    let (stdout, stderr, code) = crate::output_within_30s(&mut command, "a second read of the run file");
    writer.join().unwrap();
    assert_eq!(code, 0, "{stderr}");
    let replayed: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!(replayed["answer"], "Ismaning");
}

/// `replay --json --docstore DOCSTORE PATH`, which must succeed: its first run.
fn replay_first_run(docstore: &str, path: &Path) -> serde_json::Value {
    let (stdout, stderr, code) = cli(&["replay", "--json", "--docstore", docstore, path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(stdout.lines().next().unwrap()).unwrap()
}

/// A build that fails at once (its source is missing), after it has looked at `out` and its leftovers.
fn failed_build(out: &Path) {
    let config = BuildConfig::new(vec![out.with_file_name("no-such-dump.jsonl")], out.to_owned());
    let error = build(&config, &AtomicBool::new(false)).expect_err("the source is missing");
    assert!(matches!(error, IndexError::Read { .. }), "{error:#}");
}

/// The snapshot of the index that opens at `out`.
fn snapshot_at(out: &Path) -> String {
    use react_docstore::docstore::DocstoreSource;
    IndexSource::open(out, Profile::Default)
        .unwrap_or_else(|error| panic!("{}: {error:#}", out.display()))
        .info()
        .snapshot
        .expect("an index has a snapshot")
}

/// What `build` leaves beside `out` (staging directories, aside copies).
fn leftovers(out: &Path) -> Vec<String> {
    let prefix = format!(".{}.building-", out.file_name().unwrap().to_string_lossy());
    let mut names: Vec<String> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(&prefix))
        .collect();
    names.sort();
    names
}

#[test]
fn replacing_an_index_leaves_the_new_one_and_nothing_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let old = build_index(dir.path(), "wiki", &["hotpotqa-abstracts.tar.bz2"]);
    let new = build_index(dir.path(), "wiki", &["fever-wiki-pages.zip"]);
    assert_ne!(old.manifest.snapshot, new.manifest.snapshot);
    assert_eq!(snapshot_at(&new.dir), new.manifest.snapshot);
    assert_eq!(leftovers(&new.dir), Vec::<String>::new());
}

/// Each point where a build replacing an index can be killed, as the leftovers it leaves on disk:
/// the next build, even one that fails, leaves `--out` opening as an index, never deletes the old
/// one while `--out` is missing, and clears what is stale.
#[test]
fn a_build_killed_while_replacing_an_index_never_loses_it() {
    // No process has this id (above Linux's largest pid_max): the build that left these is gone.
    const DEAD: u32 = 4_294_000_000;
    let dir = tempfile::tempdir().unwrap();
    let old = build_index(dir.path(), "wiki", &["hotpotqa-abstracts.tar.bz2"]);
    let other = build_index(dir.path(), "other", &["fever-wiki-pages.zip"]);
    let out = old.dir.clone();
    let staging = dir.path().join(format!(".wiki.building-{DEAD}"));
    let aside = dir.path().join(format!(".wiki.building-{DEAD}.old"));
    let snapshot = old.manifest.snapshot.clone();

    // Killed between the fallback's two renames: `--out` missing, the old index aside, the new
    // one in staging. The next build puts the old one back.
    std::fs::create_dir(&staging).unwrap();
    std::fs::write(staging.join("meta.json"), "{").unwrap();
    std::fs::rename(&out, &aside).unwrap();
    failed_build(&out);
    assert_eq!(snapshot_at(&out), snapshot);
    assert_eq!(leftovers(&out), Vec::<String>::new());

    // The same, and the next build succeeds: it replaces the restored index.
    std::fs::rename(&out, &aside).unwrap();
    let rebuilt = build_index(dir.path(), "wiki", &["hotpotqa-abstracts.tar.bz2"]);
    assert_eq!(snapshot_at(&out), rebuilt.manifest.snapshot);
    assert_eq!(leftovers(&out), Vec::<String>::new());

    // Killed after the exchange (the old index now in staging) or after the fallback's second
    // rename (the old index aside): `--out` holds the new index; the stale copies go.
    std::fs::rename(&other.dir, &staging).unwrap();
    failed_build(&out);
    assert_eq!(snapshot_at(&out), snapshot);
    assert_eq!(leftovers(&out), Vec::<String>::new());
    let copy = build_index(dir.path(), "copy", &["fever-wiki-pages.zip"]);
    std::fs::rename(&copy.dir, &aside).unwrap();
    failed_build(&out);
    assert_eq!(snapshot_at(&out), snapshot);
    assert_eq!(leftovers(&out), Vec::<String>::new());

    // Killed before any rename: the old index in place, a partial one in staging.
    std::fs::create_dir(&staging).unwrap();
    failed_build(&out);
    assert_eq!(snapshot_at(&out), snapshot);
    assert_eq!(leftovers(&out), Vec::<String>::new());
}
