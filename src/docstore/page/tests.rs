use super::*;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

#[test]
fn paper_split_follows_wikienv() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["One. Two. Three."], &["One.", "Two.", "Three.."]),
        (&["Ends without a period"], &["Ends without a period."]),
        (
            &["Line one. Line\ntwo.  ", "  "],
            &["Line one.", "Line.", "two.."],
        ),
        (&["U.S. Army. Dr. Who"], &["U.S.", "Army.", "Dr.", "Who."]),
        (&["a. . b"], &["a.", "b."]),
        (&["\u{a0}padded\u{1c}"], &["padded."]),
        (&[], &[]),
    ];
    for (paragraphs, expected) in cases {
        assert_eq!(paper_sentences(paragraphs), strings(expected), "{paragraphs:?}");
    }
}

#[test]
fn default_splitter_keeps_abbreviations_together() {
    let cases: &[(&str, &[&str])] = &[
        (
            "The U.S. Army was founded in 1775. It is the oldest branch.",
            &["The U.S. Army was founded in 1775.", "It is the oldest branch."],
        ),
        (
            "Martin Luther King Jr. was born in Atlanta. He became a minister.",
            &[
                "Martin Luther King Jr. was born in Atlanta.",
                "He became a minister.",
            ],
        ),
        (
            "He lived on St. Mark's Place near Mt. Hood with Dr. Smith. Later he moved.",
            &[
                "He lived on St. Mark's Place near Mt. Hood with Dr. Smith.",
                "Later he moved.",
            ],
        ),
        (
            "J. R. R. Tolkien wrote it. George W. Bush read it.",
            &["J. R. R. Tolkien wrote it.", "George W. Bush read it."],
        ),
        (
            "The rock is 1.78 Ga old. Pressure exceeded 1.2 GPa.",
            &["The rock is 1.78 Ga old.", "Pressure exceeded 1.2 GPa."],
        ),
        (
            "He moved to the U.S. In 1990 he returned. Then he left the U.S. The end.",
            &[
                "He moved to the U.S.",
                "In 1990 he returned.",
                "Then he left the U.S.",
                "The end.",
            ],
        ),
        (
            "The U.S. Supreme Court sits in Washington, D.C. Its building opened in 1935.",
            &[
                "The U.S. Supreme Court sits in Washington, D.C.",
                "Its building opened in 1935.",
            ],
        ),
        (
            "It was founded by Acme Inc. The company grew.",
            &["It was founded by Acme Inc.", "The company grew."],
        ),
        (
            "Was it? Yes! \"Quoted.\" (Bracketed.) Last one...",
            &["Was it?", "Yes!", "\"Quoted.\"", "(Bracketed.)", "Last one..."],
        ),
        (
            "See e.g. Smith, pp. 3–4, and No. 5. Done.",
            &["See e.g. Smith, pp. 3–4, and No. 5.", "Done."],
        ),
        (
            "lowercase after period. continues here.",
            &["lowercase after period. continues here."],
        ),
        ("A list item without a period", &["A list item without a period"]),
        ("", &[]),
    ];
    for (paragraph, expected) in cases {
        let sentences = split_sentences(paragraph);
        assert_eq!(sentences, strings(expected), "{paragraph:?}");
        assert!(
            sentences
                .iter()
                .all(|sentence| !sentence.ends_with("..") || sentence.ends_with("..."))
        );
    }
}

#[test]
fn default_sentences_collapse_whitespace_and_use_given_sentences() {
    let page = Page::new(
        "T",
        vec!["  First\u{a0}one.\n\nSecond  one. ".to_owned(), String::new()],
    );
    assert_eq!(
        page.sentences(Profile::Default),
        strings(&["First one.", "Second one."])
    );
    let given = Page::from_sentences("T", strings(&["Alpha beta.", " Gamma Jr. Delta.", " "]));
    assert_eq!(given.paragraphs, strings(&["Alpha beta. Gamma Jr. Delta. "]));
    assert_eq!(
        given.sentences(Profile::Default),
        strings(&["Alpha beta.", "Gamma Jr. Delta."])
    );
    assert_eq!(
        given.sentences(Profile::Paper),
        strings(&["Alpha beta.", "Gamma Jr.", "Delta.."])
    );
}

fn page() -> Page {
    Page::new(
        "Colorado orogeny",
        strings(&[
            "It extends into New Mexico. The eastern sector extends into the High Plains.",
            "It is part of the Yavapai orogeny. New Mexico has more.",
        ]),
    )
}

#[test]
fn paper_lookup_cursor() {
    let mut reader = Reader::new(Profile::Paper);
    // Before any page: the empty list, not a crash.
    assert_eq!(reader.lookup("New Mexico"), "No more results.\n");
    assert_eq!(
        reader.open(page()),
        "It extends into New Mexico. The eastern sector extends into the High Plains.. It is part of the \
         Yavapai orogeny. New Mexico has more.."
    );
    assert_eq!(
        reader.lookup("New Mexico"),
        "(Result 1 / 2) It extends into New Mexico."
    );
    // The keyword identity is case-sensitive: another spelling starts over.
    assert_eq!(
        reader.lookup("new mexico"),
        "(Result 1 / 2) It extends into New Mexico."
    );
    assert_eq!(
        reader.lookup("new mexico"),
        "(Result 2 / 2) New Mexico has more.."
    );
    assert_eq!(reader.lookup("new mexico"), "No more results.\n");
    assert_eq!(reader.lookup("elevation"), "No more results.\n");
    // A miss keeps the page and the cursor.
    assert_eq!(
        reader.lookup("New Mexico"),
        "(Result 1 / 2) It extends into New Mexico."
    );
    reader.missed();
    assert_eq!(
        reader.lookup("New Mexico"),
        "(Result 2 / 2) New Mexico has more.."
    );
    // A hit resets the cursor.
    reader.open(page());
    assert_eq!(
        reader.lookup("New Mexico"),
        "(Result 1 / 2) It extends into New Mexico."
    );
}

#[test]
fn default_lookup_cursor() {
    let mut reader = Reader::new(Profile::Default);
    assert_eq!(reader.lookup("New Mexico"), NO_PAGE);
    assert_eq!(
        reader.open(page()),
        "It extends into New Mexico. The eastern sector extends into the High Plains. It is part of the \
         Yavapai orogeny. New Mexico has more."
    );
    assert_eq!(
        reader.lookup("New Mexico"),
        "(Result 1 / 2) It extends into New Mexico."
    );
    // Same keyword in another case walks on.
    assert_eq!(
        reader.lookup(" new mexico "),
        "(Result 2 / 2) New Mexico has more."
    );
    assert_eq!(reader.lookup("New Mexico"), "No more results.");
    assert_eq!(reader.lookup("elevation"), "No results for elevation.");
    assert_eq!(
        reader.lookup("High Plains"),
        "(Result 1 / 1) The eastern sector extends into the High Plains."
    );
    // Every search starts the cursor afresh, a miss included; the page stays open.
    reader.missed();
    assert_eq!(
        reader.lookup("High Plains"),
        "(Result 1 / 1) The eastern sector extends into the High Plains."
    );
    assert_eq!(
        reader.page().map(|page| page.title.as_str()),
        Some("Colorado orogeny")
    );
}

#[test]
fn empty_pages() {
    let mut paper = Reader::new(Profile::Paper);
    assert_eq!(paper.open(Page::new("Empty", Vec::new())), "");
    let mut default = Reader::new(Profile::Default);
    assert_eq!(
        default.open(Page::new("Empty", Vec::new())),
        "The page Empty has no text."
    );
    assert_eq!(default.lookup("x"), "No results for x.");
}

/// A page with no sentence break: 2 MB of words in one paragraph.
fn run_on_page() -> Page {
    Page::new(
        "Run-on",
        vec!["word ".repeat(400_000) + "needle " + &"word ".repeat(10)],
    )
}

#[test]
fn default_observations_and_sentences_are_capped_and_marked() {
    let mut reader = Reader::new(Profile::Default);
    let shown = reader.open(run_on_page());
    assert!(
        shown.chars().count() <= OBSERVATION_CHARS + 64,
        "{} chars",
        shown.len()
    );
    assert!(shown.starts_with("word word"), "{shown}");
    assert!(shown.contains(" … [cut: "), "{}", &shown[shown.len() - 80..]);
    assert!(
        shown.ends_with(" more characters]"),
        "{}",
        &shown[shown.len() - 80..]
    );
    // A Lookup shows the (capped) sentence that holds the keyword.
    let found = reader.lookup("word");
    assert!(found.starts_with("(Result 1 / 1) word word"), "{}", &found[..40]);
    assert!(
        found.chars().count() <= SENTENCE_CHARS + 80,
        "{} chars",
        found.len()
    );
    assert!(
        found.ends_with(" more characters]"),
        "{}",
        &found[found.len() - 80..]
    );
    // Five long sentences: the observation as a whole is cut too.
    let sentence = format!("{}end.", "Long words ".repeat(80));
    let mut reader = Reader::new(Profile::Default);
    let shown = reader.open(Page::new("Long", vec![[sentence.as_str(); 6].join(" ")]));
    assert!(
        shown.chars().count() <= OBSERVATION_CHARS + 64,
        "{} chars",
        shown.len()
    );
    assert!(shown.ends_with(" more characters]"), "{shown}");
}

#[test]
fn paper_keeps_the_reference_observation_within_the_page_limit() {
    let mut reader = Reader::new(Profile::Paper);
    let page = run_on_page();
    let expected = format!("{}.", page.paragraphs[0].trim());
    assert_eq!(reader.open(page), expected);
    // A page past the limit is cut there: memory stays bounded whatever the page.
    let huge = Page::new(
        "Huge",
        vec![
            "x".repeat(PAGE_TEXT_LIMIT - 5),
            "abcdefgh".to_owned(),
            "y".to_owned(),
        ],
    );
    assert_eq!(huge.paragraphs.len(), 2);
    assert_eq!(huge.paragraphs[1], "abcde");
    let wide = Page::new("Wide", vec!["x".repeat(PAGE_TEXT_LIMIT - 1), "é".repeat(10)]);
    assert_eq!(wide.paragraphs.len(), 1);
    let mut budget = TextBudget::page();
    assert_eq!(
        budget.take(&"a".repeat(PAGE_TEXT_LIMIT - 1)).len(),
        PAGE_TEXT_LIMIT - 1
    );
    assert_eq!(budget.take("éa"), "");
    assert!(!budget.is_spent());
    assert_eq!(budget.take("aé"), "a");
    assert!(budget.is_spent());
}

#[test]
fn pages_given_as_sentences_stay_within_the_page_limit() {
    let sentence = "word ".repeat(1000);
    let paragraphs = vec![vec![sentence.clone(); 1000], vec![sentence.clone(); 1000]];
    let page = Page::with_sentences("Huge", paragraphs);
    let kept: usize = page.paragraphs.iter().map(String::len).sum();
    assert!(kept <= PAGE_TEXT_LIMIT + 2 * 1000, "{kept}");
    assert_eq!(
        page.paragraphs.len(),
        2,
        "the first paragraph fits whole (5 MB), the second is cut"
    );
    let sentences = page.sentences(Profile::Default);
    assert!(sentences.len() < 2000);
    // A small page is untouched.
    let small = Page::with_sentences(
        "Small",
        vec![vec!["One.".into(), "Two.".into()], vec!["Three.".into()]],
    );
    assert_eq!(
        small.paragraphs,
        vec!["One. Two.".to_owned(), "Three.".to_owned()]
    );
}

#[test]
fn nothing_after_the_cut_is_kept_even_when_it_would_fit() {
    // The first paragraph leaves one byte; the second starts with `é` (two bytes), so it is cut
    // to nothing, and the short ASCII paragraph after it must not slip in.
    let first = "a".repeat(PAGE_TEXT_LIMIT - 1);
    let page = Page::with_sentences(
        "Edge",
        vec![
            vec![first.clone()],
            vec!["é and more".to_owned()],
            vec!["b".to_owned()],
        ],
    );
    assert_eq!(page.paragraphs, vec![first.clone()]);
    let page = Page::new(
        "Edge",
        vec![first.clone(), "é and more".to_owned(), "b".to_owned()],
    );
    assert_eq!(page.paragraphs, vec![first]);
}
