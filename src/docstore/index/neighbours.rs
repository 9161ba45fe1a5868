//! `NeighbourTable`: the title words one edit away from a word, found through precomputed
//! deletions (SymSpell's approach) instead of a Levenshtein automaton run over the whole term
//! dictionary of titles.
//!
//! Two words are one edit apart (an insertion, a deletion, a substitution or a transposition of
//! two adjacent characters) only if the one, or one of its single-character deletions, equals the
//! other or one of its single-character deletions: `river`/`rive` share `rive`, `river`/`rover`
//! share `rver`, `river`/`irver` share `iver` and `rver` (the letter that moved, deleted from
//! both). A build lists, for every title word, the word and its deletions; a search looks its word
//! and its deletions up and checks each word it finds, so it reads a few dozen words where the
//! automaton walked the dictionary — the tail of the ranked search at 5.2 M pages.
//!
//! The file is a header then sorted 64-bit entries, each a 32-bit hash of a key (a word or one of
//! its deletions) above the term ordinal of the word in the index's title field: a key's words
//! are one run, found by binary search. A hash that two keys share only adds words that the check
//! then drops. The ordinals are those of the index's one segment; the header holds how many title
//! terms it has, so a table never serves another dictionary.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use tantivy::directory::error::OpenReadError;
use tantivy::directory::{Directory, OwnedBytes};
use tantivy::termdict::TermDictionary;
use tantivy::{Index, SegmentReader, TantivyError};

use super::IndexError;
use super::manifest::Manifest;
use super::read_only::ReadOnlyDirectory;
use super::schema::WikiSchema;
use crate::base::fsutil::AtomicFile;

/// The table's file name inside an index directory.
pub const NEIGHBOURS_FILE: &str = "react-docstore-neighbours.bin";
/// What the manifest's `neighbour_table` field says of an index that has the table: the version
/// of its layout. An index without the field (built before the table) searches its title words
/// with the automaton, as it always did.
pub const NEIGHBOUR_TABLE_FORMAT: &str = "react-docstore.neighbours.v1";

/// Starts the file: the layout's name and version.
const MAGIC: &[u8; 8] = b"RDNBRS01";
/// The magic, the number of title terms (u64) and the number of entries (u64).
const HEADER_BYTES: usize = MAGIC.len() + 8 + 8;
const ENTRY_BYTES: usize = 8;

/// The title words of an index by their single-character deletions (memory-mapped).
pub struct NeighbourTable {
    /// The sorted entries: a key's hash in the high 32 bits, a term ordinal in the low ones.
    entries: OwnedBytes,
    /// The number of title terms of the dictionary the ordinals point into.
    terms: u64,
}

impl NeighbourTable {
    /// Opens the table of the index in `directory`.
    pub(super) fn open(directory: &dyn Directory) -> io::Result<NeighbourTable> {
        let file = directory
            .open_read(Path::new(NEIGHBOURS_FILE))
            .map_err(|error| match error {
                // Its own kind kept: a table this user may not read says who can fix it.
                OpenReadError::IoError { io_error, .. } => {
                    io::Error::new(io_error.kind(), io_error.to_string())
                }
                other => io::Error::new(io::ErrorKind::NotFound, other.to_string()),
            })?;
        NeighbourTable::from_bytes(file.read_bytes()?)
    }

    fn from_bytes(bytes: OwnedBytes) -> io::Result<NeighbourTable> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
        if bytes.len() < HEADER_BYTES || &bytes.as_slice()[..MAGIC.len()] != MAGIC {
            return Err(invalid("not a table of title-word neighbours"));
        }
        let terms = read_u64(&bytes, MAGIC.len());
        let entries = read_u64(&bytes, MAGIC.len() + 8);
        let body = bytes.slice(HEADER_BYTES..bytes.len());
        if entries.checked_mul(ENTRY_BYTES as u64) != Some(body.len() as u64) {
            return Err(invalid(
                "a table of title-word neighbours of the wrong length (truncated?)",
            ));
        }
        Ok(NeighbourTable { entries: body, terms })
    }

    /// How many title terms the table was built from: the title field's, or the table is stale.
    pub fn terms(&self) -> u64 {
        self.terms
    }

    /// The term ordinals of every title word one edit from `word` (and of some others, which the
    /// caller drops with [`one_edit_apart`]; `word` itself too, when a title holds it), sorted,
    /// without repeats.
    pub fn candidates(&self, word: &str) -> Vec<u64> {
        let mut ordinals = Vec::new();
        let chars: Vec<char> = word.chars().collect();
        let mut key = String::with_capacity(word.len());
        for_each_key(&chars, &mut key, |key| self.lookup(key_hash(key), &mut ordinals));
        ordinals.sort_unstable();
        ordinals.dedup();
        ordinals
    }

    /// Adds the ordinals listed under `hash`.
    fn lookup(&self, hash: u32, ordinals: &mut Vec<u64>) {
        let n = self.entries.len() / ENTRY_BYTES;
        let entry = |idx: usize| read_u64(&self.entries, idx * ENTRY_BYTES);
        // The first entry whose hash is at least `hash`.
        let (mut low, mut high) = (0, n);
        while low < high {
            let mid = low + (high - low) / 2;
            if entry(mid) >> 32 < u64::from(hash) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        for idx in low..n {
            let value = entry(idx);
            if value >> 32 != u64::from(hash) {
                break;
            }
            ordinals.push(value & u64::from(u32::MAX));
        }
    }
}

/// Writes the table of the title words in `dictionary` (the title field's of an index's one
/// segment) into `dir`.
pub(super) fn write_table(dictionary: &TermDictionary, dir: &Path) -> io::Result<()> {
    let mut entries: Vec<u64> = Vec::new();
    let mut stream = dictionary.stream()?;
    let mut ordinal: u64 = 0;
    let mut chars: Vec<char> = Vec::new();
    let mut key = String::new();
    while stream.advance() {
        // Title words are tokens of text: UTF-8. Another key could not be a query word's neighbour.
        if let Ok(word) = std::str::from_utf8(stream.key()) {
            chars.clear();
            chars.extend(word.chars());
            if ordinal > u64::from(u32::MAX) {
                return Err(io::Error::other(
                    "more title words than a table of neighbours can hold (4,294,967,296)",
                ));
            }
            for_each_key(&chars, &mut key, |key| {
                entries.push(u64::from(key_hash(key)) << 32 | ordinal);
            });
        }
        ordinal += 1;
    }
    entries.sort_unstable();
    entries.dedup();
    let file = AtomicFile::create(&dir.join(NEIGHBOURS_FILE))?;
    let mut writer = BufWriter::new(file);
    writer.write_all(MAGIC)?;
    writer.write_all(&(dictionary.num_terms() as u64).to_le_bytes())?;
    writer.write_all(&(entries.len() as u64).to_le_bytes())?;
    for entry in &entries {
        writer.write_all(&entry.to_le_bytes())?;
    }
    let file = writer.into_inner().map_err(|error| error.into_error())?;
    file.commit().map(drop)
}

/// Writes the table of the index at `dir`, built before the table, beside it and names it in the
/// manifest: the table a build of the same pages writes, so that the index searches as one built
/// with it (`bench_index --add-neighbour-table`, to measure an index without building it
/// again).
pub fn add_table(dir: &Path) -> Result<(), IndexError> {
    let mut manifest = Manifest::read(dir)?;
    let tantivy_error = |source| IndexError::Tantivy {
        dir: dir.to_owned(),
        source,
    };
    let directory = ReadOnlyDirectory::open(dir).map_err(|error| tantivy_error(error.into()))?;
    let index = Index::open(directory).map_err(tantivy_error)?;
    let schema = WikiSchema::of(&index).map_err(tantivy_error)?;
    let segments = index.searchable_segments().map_err(tantivy_error)?;
    let [segment] = &segments[..] else {
        return Err(tantivy_error(TantivyError::InternalError(format!(
            "a table of neighbours belongs to an index of one segment, this one has {}",
            segments.len()
        ))));
    };
    let titles = SegmentReader::open(segment)
        .and_then(|reader| reader.inverted_index(schema.title))
        .map_err(tantivy_error)?;
    write_table(titles.terms(), dir).map_err(|source| IndexError::Write {
        path: dir.join(NEIGHBOURS_FILE),
        source,
    })?;
    manifest.neighbour_table = Some(NEIGHBOUR_TABLE_FORMAT.to_owned());
    manifest.write(dir)
}

/// Calls `visit` with `chars` as a string, then with each of its single-character deletions
/// (a deletion that repeats another, as both of `aab`'s `ab`, comes twice).
fn for_each_key(chars: &[char], key: &mut String, mut visit: impl FnMut(&str)) {
    key.clear();
    key.extend(chars);
    visit(key);
    for skipped in 0..chars.len() {
        key.clear();
        key.extend(&chars[..skipped]);
        key.extend(&chars[skipped + 1..]);
        visit(key);
    }
}

/// The 32-bit FNV-1a hash of a key: the same on every machine, as the file is.
fn key_hash(key: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for &byte in key.as_bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Whether `a` and `b` are one edit apart, counting characters: one inserted, deleted or
/// substituted, or two adjacent ones transposed (what tantivy's Levenshtein automaton of distance
/// 1 with transpositions accepts, the word itself excepted).
pub fn one_edit_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() { (&a, &b) } else { (&b, &a) };
    let first = short
        .iter()
        .zip(long.iter())
        .position(|(x, y)| x != y)
        .unwrap_or(short.len());
    match long.len() - short.len() {
        0 if first == short.len() => false,
        0 => {
            short[first + 1..] == long[first + 1..]
                || (first + 1 < short.len()
                    && short[first] == long[first + 1]
                    && short[first + 1] == long[first]
                    && short[first + 2..] == long[first + 2..])
        }
        1 => short[first..] == long[first + 1..],
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_edit_is_an_insertion_deletion_substitution_or_transposition() {
        #[track_caller]
        fn check(a: &str, b: &str, expected: bool) {
            assert_eq!(one_edit_apart(a, b), expected, "{a:?} {b:?}");
            assert_eq!(one_edit_apart(b, a), expected, "{b:?} {a:?}");
        }
        check("river", "rivers", true);
        check("river", "iver", true);
        check("river", "rover", true);
        check("river", "irver", true);
        check("river", "rivre", true);
        check("river", "river", false);
        check("river", "rvier", true);
        check("river", "rvire", false);
        check("river", "ivr", false);
        check("river", "rivet", true);
        check("rivers", "rive", false);
        check("é", "", true);
        check("éa", "aé", true);
        check("naïve", "naive", true);
        check("", "", false);
    }

    /// The table's words and their title-term ordinals, for `words` sorted as a dictionary is.
    fn table(words: &[&str]) -> (NeighbourTable, Vec<String>) {
        let mut words: Vec<String> = words.iter().map(|word| word.to_string()).collect();
        words.sort();
        words.dedup();
        let mut builder = tantivy::termdict::TermDictionaryBuilder::create(Vec::new()).unwrap();
        for word in &words {
            builder
                .insert(word, &tantivy::postings::TermInfo::default())
                .unwrap();
        }
        let bytes = builder.finish().unwrap();
        let dictionary = TermDictionary::open(tantivy::directory::FileSlice::from(bytes)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_table(&dictionary, dir.path()).unwrap();
        let bytes = std::fs::read(dir.path().join(NEIGHBOURS_FILE)).unwrap();
        let table = NeighbourTable::from_bytes(OwnedBytes::new(bytes)).unwrap();
        assert_eq!(table.terms(), words.len() as u64);
        (table, words)
    }

    /// Every word of `words` one edit from `word`, through the table and the check.
    fn neighbours(table: &NeighbourTable, words: &[String], word: &str) -> Vec<String> {
        table
            .candidates(word)
            .into_iter()
            .map(|ordinal| words[ordinal as usize].clone())
            .filter(|found| one_edit_apart(found, word))
            .collect()
    }

    #[test]
    fn every_word_one_edit_away_is_a_candidate() {
        let vocabulary = [
            "river", "rivers", "iver", "rover", "irver", "rivre", "rivet", "driver", "liver", "rive", "ri",
            "r", "the", "he", "she", "teh", "th", "naïve", "naive", "über", "uber", "ubers",
        ];
        let (table, words) = table(&vocabulary);
        // Each query against a plain scan of the vocabulary: what the automaton finds.
        for word in [
            "river", "rivr", "riverr", "rvier", "ivre", "the", "he", "eh", "t", "", "naive", "nave", "ueber",
            "ber", "xyz",
        ] {
            let expected: Vec<String> = words
                .iter()
                .filter(|known| one_edit_apart(known, word))
                .cloned()
                .collect();
            assert_eq!(neighbours(&table, &words, word), expected, "{word:?}");
        }
        assert_eq!(
            neighbours(&table, &words, "river"),
            [
                "driver", "irver", "iver", "liver", "rive", "rivers", "rivet", "rivre", "rover"
            ]
        );
    }

    #[test]
    fn a_file_that_is_no_table_or_is_cut_short_is_refused() {
        assert!(NeighbourTable::from_bytes(OwnedBytes::new(b"RDNBRS0".to_vec())).is_err());
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&3u64.to_le_bytes());
        bytes.extend_from_slice(&2u64.to_le_bytes());
        bytes.extend_from_slice(&7u64.to_le_bytes());
        let error = NeighbourTable::from_bytes(OwnedBytes::new(bytes)).err().unwrap();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }
}
