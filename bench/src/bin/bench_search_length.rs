//! How a search's time grows with the entity's length: entities of title words with a letter
//! dropped (the typos that bring in the most neighbours), 1 KB to 62 KB, searched straight on the
//! index (`PageIndex::search`: the agent caps an action's argument at 4 KiB before that).
//!
//! ```sh
//! cargo run --release --bin gen_wiki -- --pages 30000 --out /tmp/wiki-30k.jsonl --queries /tmp/wiki-30k.queries.tsv
//! cargo run --release --bin bench_search_length -- /tmp/wiki-30k.jsonl /tmp/wiki-30k.index
//! ```
//!
//! Builds the index at the second path when it is not there. Prints each length's wall time.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use react_docstore::docstore::index::{BuildConfig, PageIndex, build};

fn main() -> anyhow::Result<()> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [dump, index_dir] = args.as_slice() else {
        anyhow::bail!("usage: bench_search_length DUMP.jsonl INDEX_DIR");
    };
    if !index_dir.exists() {
        build(
            &BuildConfig::new(vec![dump.clone()], index_dir.clone()),
            &AtomicBool::new(false),
        )?;
    }
    let (index, _) = PageIndex::open(index_dir)?;
    // Title words of 5 letters or more, in dump order, each with its second letter dropped.
    let mut typos: Vec<String> = Vec::new();
    for line in std::fs::read_to_string(dump)?.lines() {
        let page: serde_json::Value = serde_json::from_str(line)?;
        for word in page["title"].as_str().unwrap_or("").split(' ') {
            if word.is_ascii() && word.len() >= 5 {
                typos.push(format!("{}{}", &word[..1], &word[2..]));
            }
        }
        if typos.len() > 20_000 {
            break;
        }
    }
    println!("{} pages", index.pages());
    for kilobytes in [1, 4, 16, 62] {
        let mut entity = String::new();
        for typo in typos.iter().cycle() {
            if entity.len() >= kilobytes * 1000 {
                break;
            }
            entity.push_str(typo);
            entity.push(' ');
        }
        let started = Instant::now();
        index.search(entity.trim())?;
        println!(
            "{kilobytes:>3} KB ({} words): {:.3} s",
            entity.split(' ').count(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
