//! `TitleTable`: every page's case-folded title beside its document, sorted — how a dump's index
//! (format v3) finds the page an entity names (Wikipedia's "Go") and the pages titled
//! `{base} (...)` that a disambiguation page offers.
//!
//! Format v2 indexed two terms a page for this (`title_exact`, `title_folded`). Both are unique to
//! their page, so each segment built two term dictionaries as large as its pages, and the stack
//! into one segment built them again: a third of the build's time. The table is written once,
//! from the title column of the ranges' segments, on the core the last merge leaves idle.
//!
//! It is a sorted string table (tantivy's sstable, the format of its column dictionaries): each key
//! is the folded title, a zero byte, then the document id in big-endian, so one title's pages
//! follow each other in dump order and a range of titles is a range of keys.

use std::io::{self, BufWriter};
use std::path::Path;

use tantivy::columnar::Dictionary;
use tantivy::directory::error::OpenReadError;
use tantivy::directory::{Directory, FileSlice};
use tantivy::{DocId, SegmentReader};

use super::title::folded_title;
use crate::base::fsutil::AtomicFile;

/// The table's file name inside an index directory.
pub const TITLES_FILE: &str = "react-docstore-titles.sstable";

/// Ends a key's title, before its document id. A dump's titles are sanitized (controls become
/// spaces), so none holds it: one title's keys sort together, by document.
const TITLE_END: u8 = 0;

/// The folded titles of an index of one segment, each with its document.
pub struct TitleTable {
    dictionary: Dictionary,
}

impl TitleTable {
    /// Opens the table of the index in `directory` (memory-mapped: a lookup reads one block).
    pub(super) fn open(directory: &dyn Directory) -> io::Result<TitleTable> {
        let file = directory
            .open_read(Path::new(TITLES_FILE))
            .map_err(|error| match error {
                // Its own kind kept: a table this user may not read says who can fix it.
                OpenReadError::IoError { io_error, .. } => {
                    io::Error::new(io_error.kind(), io_error.to_string())
                }
                other => io::Error::new(io::ErrorKind::NotFound, other.to_string()),
            })?;
        TitleTable::from_file(file)
    }

    fn from_file(file: FileSlice) -> io::Result<TitleTable> {
        Ok(TitleTable {
            dictionary: Dictionary::open(file)?,
        })
    }

    /// The documents whose folded title ([`folded_title`]) is `folded`, in dump order.
    pub fn titled(&self, folded: &str) -> io::Result<Vec<DocId>> {
        let mut from = folded.as_bytes().to_vec();
        from.push(TITLE_END);
        let mut to = folded.as_bytes().to_vec();
        to.push(TITLE_END + 1);
        self.documents(&from, &to)
    }

    /// The documents whose folded title is at least `from` and below `to`, in dump order.
    pub fn in_range(&self, from: &str, to: &str) -> io::Result<Vec<DocId>> {
        let mut docs = self.documents(from.as_bytes(), to.as_bytes())?;
        docs.sort_unstable();
        Ok(docs)
    }

    /// The documents of the keys from `from` (included) to `to` (excluded), in key order.
    fn documents(&self, from: &[u8], to: &[u8]) -> io::Result<Vec<DocId>> {
        let mut stream = self.dictionary.range().ge(from).lt(to).into_stream()?;
        let mut docs = Vec::new();
        while stream.advance() {
            let key = stream.key();
            if let Some(tail) = key.len().checked_sub(size_of::<DocId>()).map(|at| &key[at..]) {
                let mut id = [0; size_of::<DocId>()];
                id.copy_from_slice(tail);
                docs.push(DocId::from_be_bytes(id));
            }
        }
        Ok(docs)
    }
}

/// The folded titles of the segments that are stacked into an index's one segment, gathered in
/// their order: the documents of each follow those of the one before.
#[derive(Default)]
pub(super) struct TitleTableBuilder {
    /// Every distinct folded title of each segment, one after the other.
    arena: String,
    /// Each page: where its folded title is in `arena`, its length, and its document id.
    entries: Vec<(usize, u32, DocId)>,
    /// The documents gathered so far: the first id of the next segment.
    docs: DocId,
}

impl TitleTableBuilder {
    /// Adds the pages of the next segment, read from its title column.
    pub(super) fn add_segment(&mut self, segment: &SegmentReader) -> tantivy::Result<()> {
        let max_doc = segment.max_doc();
        if let Some(titles) = segment.fast_fields().str("title")? {
            // Each distinct title of the segment folded once, by its ordinal in the column.
            let mut folded = Vec::with_capacity(titles.num_terms());
            let mut stream = titles.dictionary().stream()?;
            while stream.advance() {
                let mut title = folded_title(&String::from_utf8_lossy(stream.key()));
                if title.contains(TITLE_END as char) {
                    // Not from a dump (its titles are sanitized): such a title opens no page.
                    title.clear();
                }
                folded.push((self.arena.len(), title.len() as u32));
                self.arena.push_str(&title);
            }
            let ords = titles.ords();
            for doc in 0..max_doc {
                if let Some(&(start, len)) = ords.first(doc).and_then(|ord| folded.get(ord as usize))
                    && len > 0
                {
                    self.entries.push((start, len, self.docs + doc));
                }
            }
        }
        self.docs += max_doc;
        Ok(())
    }

    /// Writes the table, sorted, into `dir`.
    pub(super) fn write(mut self, dir: &Path) -> io::Result<()> {
        let arena = self.arena.as_bytes();
        let title = |&(start, len, _): &(usize, u32, DocId)| &arena[start..start + len as usize];
        self.entries
            .sort_unstable_by(|a, b| title(a).cmp(title(b)).then(a.2.cmp(&b.2)));
        let file = AtomicFile::create(&dir.join(TITLES_FILE))?;
        let mut writer = <Dictionary>::builder(BufWriter::new(file))?;
        let mut key = Vec::new();
        for entry in &self.entries {
            key.clear();
            key.extend_from_slice(title(entry));
            key.push(TITLE_END);
            key.extend_from_slice(&entry.2.to_be_bytes());
            writer.insert(&key, &())?;
        }
        let file = writer
            .finish()?
            .into_inner()
            .map_err(|error| error.into_error())?;
        file.commit().map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(entries: &[(&str, DocId)]) -> TitleTable {
        let mut builder = TitleTableBuilder::default();
        for &(title, doc) in entries {
            let folded = folded_title(title);
            builder
                .entries
                .push((builder.arena.len(), folded.len() as u32, doc));
            builder.arena.push_str(&folded);
        }
        let dir = tempfile::tempdir().unwrap();
        builder.write(dir.path()).unwrap();
        let bytes = std::fs::read(dir.path().join(TITLES_FILE)).unwrap();
        TitleTable::from_file(FileSlice::from(bytes)).unwrap()
    }

    #[test]
    fn a_folded_title_finds_its_pages_in_dump_order() {
        let table = table(&[
            ("Viva", 7),
            ("VIVA", 2),
            ("Viva (band)", 3),
            ("Viva!", 1),
            ("viva", 5),
            ("Vivaldi", 0),
        ]);
        assert_eq!(table.titled("viva").unwrap(), vec![2, 5, 7]);
        assert_eq!(table.titled("viva!").unwrap(), vec![1]);
        assert_eq!(table.titled("viv").unwrap(), Vec::<DocId>::new());
        assert_eq!(table.titled("").unwrap(), Vec::<DocId>::new());
    }

    #[test]
    fn a_range_of_titles_gives_its_pages_in_dump_order() {
        let table = table(&[
            ("Viva (song)", 9),
            ("Viva (band)", 4),
            ("Viva", 1),
            ("Viva (UK and Ireland)", 2),
            ("Viva)", 3),
            ("Vivaldi", 0),
        ]);
        assert_eq!(table.in_range("viva (", "viva )").unwrap(), vec![2, 4, 9]);
    }
}
