//! HTML → search outcome, pure and synchronous, for both profiles.
//!
//! Two readers, one per profile. The `paper` profile must match BeautifulSoup's `html.parser`
//! builder byte for byte, which is not HTML5 (elements nest exactly as written, a stray end tag
//! is ignored): `soup` is a small reader with those rules. The `default` profile reads the page
//! as a browser would: `browser` parses it with scraper (html5ever's HTML5 tree builder) and
//! CSS selectors, so pages that are not MediaWiki's own markup read sensibly too. Both return
//! owned data (a `scraper::Html` is not `Send`): no parsed document outlives the call.

mod soup;
mod browser;

use super::page::SearchOutcome;
use crate::base::profile::Profile;

/// How many result headings a results page is read for (MediaWiki shows 20; a miss offers 5).
const MAX_RESULT_TITLES: usize = 20;
/// How many list items of a disambiguation page are read for entries (a miss offers 10).
const MAX_DISAMBIGUATION_ITEMS: usize = 200;
/// The most of an element's text a title or a section heading is read from, in bytes.
const TITLE_LIMIT: usize = 1024;

/// Reads a `/w/index.php?search=...` response under `profile`'s rules.
pub fn parse_search_page(html: &str, profile: Profile) -> SearchOutcome {
    match profile {
        Profile::Paper => soup::paper_outcome(html),
        Profile::Default => browser::default_outcome(html),
    }
}

#[cfg(test)]
mod tests;
