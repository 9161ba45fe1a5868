//! `RecentPages`: the pages a server's steps opened last, by the search that opened them, so the
//! Lookups that follow a Search do not search the index again. Bounded, and only a shortcut: a
//! state whose page was forgotten (or was opened by another replica) is restored by its search,
//! as without it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::docstore::Reader;

/// At most `capacity` readers holding at most `budget` bytes of text (each with its page open
/// and no cursor), kept in two generations: when the newer fills up (half the capacity or half
/// the budget) the older is dropped and the newer takes its place, and a reader found in the older
/// moves back to the newer. A page larger than half the budget is not kept.
pub struct RecentPages {
    generations: Mutex<Generations>,
    half_count: usize,
    half_bytes: usize,
}

#[derive(Default)]
struct Generations {
    newer: Generation,
    older: Generation,
}

#[derive(Default)]
struct Generation {
    readers: HashMap<String, (Arc<Reader>, usize)>,
    bytes: usize,
}

impl Generation {
    fn remove(&mut self, search: &str) -> Option<(Arc<Reader>, usize)> {
        let (reader, bytes) = self.readers.remove(search)?;
        self.bytes -= bytes;
        Some((reader, bytes))
    }
}

impl RecentPages {
    pub fn new(capacity: usize, budget: usize) -> RecentPages {
        RecentPages {
            generations: Mutex::new(Generations::default()),
            half_count: (capacity / 2).max(1),
            half_bytes: budget / 2,
        }
    }

    /// The reader `search` opened, if it is still remembered.
    pub fn get(&self, search: &str) -> Option<Arc<Reader>> {
        let mut generations = self.lock();
        if let Some((reader, _)) = generations.newer.readers.get(search) {
            return Some(reader.clone());
        }
        let (reader, bytes) = generations.older.remove(search)?;
        self.keep(&mut generations, search.to_owned(), reader.clone(), bytes);
        Some(reader)
    }

    /// Remembers `reader`, just opened by `search`.
    pub fn insert(&self, search: &str, reader: Reader) {
        let bytes = search.len() + text_bytes(&reader);
        if bytes > self.half_bytes {
            return;
        }
        let mut generations = self.lock();
        generations.older.remove(search);
        self.keep(&mut generations, search.to_owned(), Arc::new(reader), bytes);
    }

    fn keep(&self, generations: &mut Generations, search: String, reader: Arc<Reader>, bytes: usize) {
        generations.newer.remove(&search);
        let newer = &generations.newer;
        if newer.readers.len() >= self.half_count || newer.bytes + bytes > self.half_bytes {
            generations.older = std::mem::take(&mut generations.newer);
        }
        generations.newer.bytes += bytes;
        generations.newer.readers.insert(search, (reader, bytes));
    }

    /// How many readers are remembered, and their bytes of text.
    pub fn size(&self) -> (usize, usize) {
        let generations = self.lock();
        (
            generations.newer.readers.len() + generations.older.readers.len(),
            generations.newer.bytes + generations.older.bytes,
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations> {
        // A panic while the lock was held left two plain maps behind: still usable.
        self.generations
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The text a reader holds: its page's paragraphs, and the same again as sentences.
fn text_bytes(reader: &Reader) -> usize {
    reader.page().map_or(0, |page| {
        page.title.len() + 2 * page.paragraphs.iter().map(String::len).sum::<usize>()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::profile::Profile;
    use crate::docstore::Page;

    /// A reader with a page of `bytes` bytes of text open.
    fn reader(bytes: usize) -> Reader {
        let mut reader = Reader::new(Profile::Default);
        reader.open(Page::new("", vec!["x".repeat(bytes)]));
        reader
    }

    #[test]
    fn holds_at_most_its_capacity_and_keeps_what_was_used_last() {
        let recent = RecentPages::new(4, 1 << 20);
        for search in ["a", "b", "c"] {
            recent.insert(search, reader(10));
        }
        assert_eq!(recent.size().0, 3);
        // `a` is used: it moves to the newer generation, `b` stays only in the older.
        assert!(recent.get("a").is_some());
        recent.insert("d", reader(10));
        recent.insert("e", reader(10));
        assert_eq!(recent.size().0, 4);
        assert!(recent.get("e").is_some());
        assert!(recent.get("d").is_some());
        assert!(recent.get("b").is_none());
        for idx in 0..100 {
            recent.insert(&idx.to_string(), reader(10));
            assert!(recent.size().0 <= 4);
        }
        assert!(recent.get("99").is_some() && recent.get("98").is_some());
        assert!(recent.get("nothing").is_none());
    }

    #[test]
    fn holds_at_most_its_budget_of_text() {
        // 1,000 bytes: two generations of 500; a page is kept as 2 × its text.
        let recent = RecentPages::new(1024, 1000);
        for idx in 0..50 {
            recent.insert(&idx.to_string(), reader(100));
            let (count, bytes) = recent.size();
            assert!(bytes <= 1000, "{count} readers, {bytes} bytes");
        }
        assert!(recent.get("49").is_some());
        assert!(recent.get("0").is_none());
        // A page larger than a generation is not kept; the same search again is counted once.
        recent.insert("large", reader(300));
        assert!(recent.get("large").is_none());
        let before = recent.size();
        recent.insert("49", reader(100));
        assert_eq!(recent.size(), before);
    }
}
