//! The table of title-word neighbours (`react-docstore-neighbours.bin`): an index built with it
//! answers every search as one built before it, which still opens and searches with the
//! Levenshtein automaton; a table that does not belong to its index is refused, naming the file.

use react_docstore::base::profile::Profile;
use react_docstore::docstore::Docstore;
use react_docstore::docstore::index::{IndexSource, PageIndex};

use super::{build_index, explorer, search};
use crate::fixture;

/// Exact and case-folded titles, and titles with a typo of every kind in one of their words.
const ENTITIES: &[&str] = &[
    "Constantin Medien",
    "constantin MEDIEN",
    "Viva Media",
    "viva media",
    "Mercury (planet)",
    "Nashville Terminal Subdivision",
    // An insertion, a deletion, a substitution and a transposition.
    "Constantinn Medien",
    "Constantn Medien",
    "Konstantin Medien",
    "Constantin Mdeien",
    "Nashvile Terminal",
    "Nashvillle Terminal Subdivison",
    "Nahsville Termianl",
    "Vvia Media",
    "Mercruy",
    "Mecury (planet)",
    "Mercury (plnaet)",
    "Qontiss",
    "Qonts",
    "Kontis",
    "Qonits",
];

/// An index of format v3 built before the table (`fixtures/index/v3/index`, by the release before
/// it) still opens, and answers every search and lookup byte for byte as the index of the same
/// pages built with the table does: the table only finds the automaton's neighbours faster.
#[test]
fn an_index_without_the_neighbour_table_searches_as_one_with_it() {
    let old = fixture("index/v3/index");
    let dir = tempfile::tempdir().unwrap();
    let new = build_index(dir.path(), "new", &["v2/hotpotqa-titles.jsonl"]);
    let (_, old_manifest) = PageIndex::open(&old).unwrap();
    assert_eq!(old_manifest.format, new.manifest.format);
    assert_eq!(old_manifest.snapshot, new.manifest.snapshot);
    assert_eq!(
        (
            old_manifest.neighbour_table,
            new.manifest.neighbour_table.as_deref()
        ),
        (None, Some("react-docstore.neighbours.v1"))
    );
    assert!(!old.join("react-docstore-neighbours.bin").exists());
    for profile in [Profile::Default, Profile::Paper] {
        let mut old = explorer(&old, profile);
        let mut new = explorer(&new.dir, profile);
        for entity in ENTITIES {
            assert_eq!(
                search(&mut old, entity),
                search(&mut new, entity),
                "{profile:?}: {entity}"
            );
            assert_eq!(old.lookup("the"), new.lookup("the"), "{profile:?}: {entity}");
        }
    }
}

/// A typo of each kind in a one-word title finds its title among the Similar ones through the
/// table: no other word of the query leads to it.
#[test]
fn a_typo_of_each_kind_finds_its_title_through_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let report = build_index(dir.path(), "new", &["v2/hotpotqa-titles.jsonl"]);
    let mut explorer = explorer(&report.dir, Profile::Default);
    for typo in ["Qontiss", "Qonts", "Kontis", "Qonits"] {
        let observation = search(&mut explorer, typo);
        assert!(observation.contains("'Qontis'"), "{typo}: {observation}");
    }
}

/// A table built for other title words (here, the table of another index) is
/// refused when the index opens, naming the file, instead of finding wrong neighbours.
#[test]
fn a_table_of_another_index_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let small = build_index(dir.path(), "small", &["pages.jsonl"]);
    let large = build_index(dir.path(), "large", &["v2/hotpotqa-titles.jsonl"]);
    let table = "react-docstore-neighbours.bin";
    std::fs::copy(small.dir.join(table), large.dir.join(table)).unwrap();
    let error = IndexSource::open(&large.dir, Profile::Default)
        .err()
        .expect("refused");
    assert_eq!(
        error.to_string(),
        format!("cannot read `{}`", large.dir.join(table).display())
    );
}
