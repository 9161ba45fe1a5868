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
