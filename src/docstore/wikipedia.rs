//! The Wikipedia explorer: `Search[entity]` fetches `{wiki}/w/index.php?search={entity}` (through
//! the page cache), reads the page under the explorer's profile (once: the fetcher's check sees
//! that same reading) and keeps it open for `Lookup[keyword]`.

use futures::future::BoxFuture;

use super::fetch::Fetcher;
use super::page::SearchOutcome;
use super::page::{Reader, SearchStep};
use super::{ContextParagraph, Docstore, DocstoreError, DocstoreInfo, DocstoreSource};
use crate::base::profile::Profile;

/// Opens one [`WikipediaExplorer`] per question over a shared client and cache.
#[derive(Clone)]
pub struct WikipediaSource {
    fetcher: Fetcher,
    wiki_url: String,
    profile: Profile,
}

impl WikipediaSource {
    pub fn new(fetcher: Fetcher, wiki_url: String, profile: Profile) -> WikipediaSource {
        WikipediaSource {
            fetcher,
            wiki_url,
            profile,
        }
    }

    pub fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    /// A fresh explorer: no page open, no cursor.
    pub fn explorer(&self) -> WikipediaExplorer {
        WikipediaExplorer {
            fetcher: self.fetcher.clone(),
            wiki_url: self.wiki_url.clone(),
            reader: Reader::new(self.profile),
        }
    }
}

impl DocstoreSource for WikipediaSource {
    fn open(&self, _context: &[ContextParagraph]) -> Box<dyn Docstore> {
        Box::new(self.explorer())
    }

    /// Live pages have no snapshot.
    fn info(&self) -> DocstoreInfo {
        DocstoreInfo {
            kind: "wikipedia".to_owned(),
            snapshot: None,
        }
    }
}

/// One question's view of Wikipedia: the page the last successful search opened, and the
/// Lookup cursor over it.
pub struct WikipediaExplorer {
    fetcher: Fetcher,
    wiki_url: String,
    reader: Reader,
}

impl WikipediaExplorer {
    pub fn reader(&self) -> &Reader {
        &self.reader
    }

    async fn search_entity(&mut self, entity: &str) -> Result<String, DocstoreError> {
        let profile = self.reader.profile();
        let mut query = entity.to_owned();
        // The paper re-searches `[entity]` once when it lands on a disambiguation page.
        for depth in 0.. {
            let url = search_url(&self.wiki_url, &query, profile);
            let outcome = self
                .fetcher
                .fetch(&url, &query, profile, is_whole_search_page)
                .await?;
            match self.reader.show(&query, outcome, depth) {
                SearchStep::Shown(observation) => return Ok(observation),
                SearchStep::SearchAgain(again) => query = again,
            }
        }
        // invariant: `Reader::show` asks for another search only at depth 0
        unreachable!("an unbounded range ends only by returning")
    }
}

/// What the fetcher may cache: a whole page (one that opens `<html>` also closes it — a page
/// cut short reads as site chrome) that reads, under the searching profile, as one of the four
/// outcomes, not as an empty article.
fn is_whole_search_page(body: &str, outcome: &SearchOutcome) -> bool {
    const EDGE: usize = 4096;
    let head = &body.as_bytes()[..body.len().min(EDGE)];
    let tail = &body.trim_end().as_bytes()[body.trim_end().len().saturating_sub(EDGE)..];
    let contains = |bytes: &[u8], tag: &[u8]| {
        bytes
            .windows(tag.len())
            .any(|window| window.eq_ignore_ascii_case(tag))
    };
    if contains(head, b"<html") && !contains(tail, b"</html") {
        return false;
    }
    match outcome {
        SearchOutcome::Article(page) => !page.title.is_empty() || !page.paragraphs.is_empty(),
        SearchOutcome::Results(_) | SearchOutcome::NoResults | SearchOutcome::Disambiguation { .. } => true,
    }
}

impl Docstore for WikipediaExplorer {
    fn search<'a>(&'a mut self, entity: &'a str) -> BoxFuture<'a, Result<String, DocstoreError>> {
        Box::pin(self.search_entity(entity))
    }

    fn lookup(&mut self, keyword: &str) -> String {
        self.reader.lookup(keyword)
    }
}

/// `{wiki}/w/index.php?search={entity}`. The paper turns spaces into `+` and leaves the rest as
/// written (the HTTP client then escapes what a URL cannot hold); the `default` profile encodes
/// the entity as a form value, so `&`, `#`, `+` and `%` reach the search as written.
pub fn search_url(wiki_url: &str, entity: &str, profile: Profile) -> String {
    let wiki_url = wiki_url.trim_end_matches('/');
    let query: String = match profile {
        Profile::Paper => entity.replace(' ', "+"),
        Profile::Default => url::form_urlencoded::byte_serialize(entity.as_bytes()).collect(),
    };
    let raw = format!("{wiki_url}/w/index.php?search={query}");
    // The URL as the client sends it, so the cache key is the request's URL.
    match reqwest::Url::parse(&raw) {
        Ok(url) => {
            let mut url = url;
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => raw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_urls_per_profile() {
        let wiki = "https://wiki.example.org/";
        assert_eq!(
            search_url(wiki, "Colorado orogeny", Profile::Paper),
            "https://wiki.example.org/w/index.php?search=Colorado+orogeny"
        );
        assert_eq!(
            search_url(wiki, "Colorado orogeny", Profile::Default),
            "https://wiki.example.org/w/index.php?search=Colorado+orogeny"
        );
        assert_eq!(
            search_url(wiki, "AT&T C# 1+1 100%", Profile::Default),
            "https://wiki.example.org/w/index.php?search=AT%26T+C%23+1%2B1+100%25"
        );
        // The paper sends `&` and `#` raw: the server sees `AT`, the fragment is dropped.
        assert_eq!(
            search_url(wiki, "AT&T C#", Profile::Paper),
            "https://wiki.example.org/w/index.php?search=AT&T+C"
        );
        assert_eq!(
            search_url(wiki, "Zürich", Profile::Paper),
            "https://wiki.example.org/w/index.php?search=Z%C3%BCrich"
        );
        assert_eq!(
            search_url(wiki, "Zürich", Profile::Default),
            "https://wiki.example.org/w/index.php?search=Z%C3%BCrich"
        );
    }
}
