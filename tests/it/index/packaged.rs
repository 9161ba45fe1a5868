//! HotpotQA's dump as distributed (`enwiki-…-withlinks-abstracts.tar.bz2`: a bzip2'd tar whose
//! members are themselves bzip2'd JSON Lines files, `AA/wiki_00.bz2`, …) and the same lines as
//! one plain file give one index: the same snapshot id and the same observations.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use react_docstore::base::profile::Profile;
use react_docstore::docstore::index::{BuildConfig, BuildReport, build};

use super::{explorer, search};

/// `n` pages in HotpotQA's abstracts format, one JSON object a line.
fn hotpotqa_lines(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|idx| {
            format!(
                "{{\"id\": \"{idx}\", \"title\": \"Packaged page {idx}\", \"text\": [\"Packaged page {idx} is one of the pages of this test.\", \" It names item {idx}.\"], \"charoffset\": [], \"text_with_links\": [], \"charoffset_with_links\": []}}\n"
            )
        })
        .collect()
}

/// `members` (name, lines) packaged as HotpotQA packages its dump: each member bzip2'd, in a tar
/// archive that is bzip2'd as a whole.
fn write_packaged(path: &Path, members: &[(String, String)]) {
    let mut tar = tar::Builder::new(bzip2::write::BzEncoder::new(
        std::fs::File::create(path).unwrap(),
        bzip2::Compression::fast(),
    ));
    for (name, lines) in members {
        let mut member = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        member.write_all(lines.as_bytes()).unwrap();
        let member = member.finish().unwrap();
        let mut header = tar::Header::new_gnu();
        header.set_size(member.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, &member[..]).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
}

fn build_from(source: &Path, out: &Path) -> BuildReport {
    let mut config = BuildConfig::new(vec![source.to_owned()], out.to_owned());
    config.threads = 2;
    build(&config, &AtomicBool::new(false)).unwrap_or_else(|error| panic!("{}: {error:#}", source.display()))
}

#[test]
fn hotpotqa_archive_and_plain_file_give_one_snapshot_and_the_same_observations() {
    let dir = tempfile::tempdir().unwrap();
    // Members of different sizes, in two directories, as HotpotQA's `AA/wiki_00.bz2` …
    let sizes = [300, 1, 700, 250, 49];
    let mut members = Vec::new();
    let mut first = 0;
    for (idx, size) in sizes.into_iter().enumerate() {
        let name = format!(
            "enwiki-20171001/{}/wiki_{:02}.bz2",
            ["AA", "AB"][idx / 3],
            idx % 3
        );
        members.push((name, hotpotqa_lines(first, size)));
        first += size;
    }
    let pages = first as u64;
    let archive = dir.path().join("enwiki-withlinks-abstracts.tar.bz2");
    write_packaged(&archive, &members);
    let plain = dir.path().join("enwiki-withlinks-abstracts.jsonl");
    let text: String = members.iter().map(|(_, lines)| lines.as_str()).collect();
    std::fs::write(&plain, text).unwrap();

    let from_archive = build_from(&archive, &dir.path().join("archive"));
    let from_plain = build_from(&plain, &dir.path().join("plain"));
    assert_eq!(from_archive.manifest.pages, pages);
    assert_eq!(from_plain.manifest.pages, pages);
    assert!(
        from_plain.manifest.snapshot.starts_with("hotpotqa-"),
        "{}",
        from_plain.manifest.snapshot
    );
    assert_eq!(from_archive.manifest.snapshot, from_plain.manifest.snapshot);
    // The id earlier versions gave the plain file (one page a line): indexes built from it before
    // and after stay interchangeable.
    assert_eq!(from_plain.manifest.snapshot, "hotpotqa-a1f74276d08bf37e");

    // Exact titles, a case-folded one, pages at member boundaries, a typo and a miss.
    let entities = [
        "Packaged page 0",
        "Packaged page 299",
        "Packaged page 300",
        "packaged PAGE 301",
        "Packaged page 1250",
        "Packaged page 1299",
        "Packaged paeg 1000",
        "item 1001",
        "Nothing like this",
    ];
    for profile in [Profile::Default, Profile::Paper] {
        let mut archive = explorer(&from_archive.dir, profile);
        let mut plain = explorer(&from_plain.dir, profile);
        for entity in entities {
            assert_eq!(
                search(&mut archive, entity),
                search(&mut plain, entity),
                "{entity}"
            );
        }
    }
    // And the pages are the ones written: the last of the last member opens.
    let mut default = explorer(&from_archive.dir, Profile::Default);
    assert!(search(&mut default, "Packaged page 1299").starts_with("Packaged page 1299 is one of the pages"));
}

/// `lines` bzip2'd as `pbzip2` and Wikipedia's multistream dumps write them: several streams one
/// after another, a stream every `per_stream` lines.
fn bzip2_streams(lines: &str, per_stream: usize) -> Vec<u8> {
    let lines: Vec<&str> = lines.split_inclusive('\n').collect();
    let mut streams = Vec::new();
    for part in lines.chunks(per_stream) {
        let mut stream = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        stream.write_all(part.concat().as_bytes()).unwrap();
        streams.extend(stream.finish().unwrap());
    }
    streams
}

#[test]
fn a_bzip2_file_of_several_streams_gives_every_page_and_the_plain_files_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let lines = hotpotqa_lines(0, 1000);
    // A dump of several streams, and the same streams as a member of a packaged archive.
    let multistream = dir.path().join("enwiki-multistream.jsonl.bz2");
    std::fs::write(&multistream, bzip2_streams(&lines, 150)).unwrap();
    let plain = dir.path().join("enwiki.jsonl");
    std::fs::write(&plain, &lines).unwrap();
    let from_plain = build_from(&plain, &dir.path().join("plain"));
    let from_streams = build_from(&multistream, &dir.path().join("streams"));
    assert_eq!(from_streams.manifest.pages, 1000);
    assert_eq!(from_streams.manifest.snapshot, from_plain.manifest.snapshot);
    let mut streams = explorer(&from_streams.dir, Profile::Default);
    assert!(search(&mut streams, "Packaged page 999").starts_with("Packaged page 999 is one of the pages"));
}

#[test]
fn a_damaged_bzip2_member_stops_the_build_with_an_error_naming_the_member() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("enwiki-withlinks-abstracts.tar.bz2");
    // The tar is written by hand: its second member's compressed bytes with one byte changed
    // inside its first block (past the stream and block headers).
    let mut tar = tar::Builder::new(bzip2::write::BzEncoder::new(
        std::fs::File::create(&archive).unwrap(),
        bzip2::Compression::fast(),
    ));
    for (idx, first) in [0, 200, 400].into_iter().enumerate() {
        let mut member = bzip2_streams(&hotpotqa_lines(first, 200), 200);
        if idx == 1 {
            let middle = member.len() / 2;
            member[middle] ^= 0x55;
        }
        let mut header = tar::Header::new_gnu();
        header.set_size(member.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, format!("enwiki/AA/wiki_{idx:02}.bz2"), &member[..])
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
    let mut config = BuildConfig::new(vec![archive.clone()], dir.path().join("index"));
    config.threads = 2;
    let error = build(&config, &AtomicBool::new(false)).expect_err("a damaged member is an error");
    let message = format!("{error:#}");
    assert!(
        message.contains(&format!("{} (enwiki/AA/wiki_01.bz2)", archive.display())),
        "{message}"
    );
    assert!(!dir.path().join("index").exists(), "no index is left: {message}");
}
