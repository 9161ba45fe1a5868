use super::*;

fn page(format: DumpFormat, line: &str) -> IndexedPage {
    match parse_record(format, line.as_bytes()) {
        Ok(Record::Page(page)) => page,
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn formats_are_detected_from_their_first_line() {
    #[track_caller]
    fn check(line: &str, expected: Option<DumpFormat>) {
        assert_eq!(DumpFormat::detect(line.as_bytes()), expected, "{line}");
    }
    check(
        r#"{"id": "12", "url": "u", "title": "A", "text": ["x"]}"#,
        Some(DumpFormat::Hotpotqa),
    );
    check(
        r#"{"wikipedia_id": "1", "wikipedia_title": "A", "text": ["A\n"]}"#,
        Some(DumpFormat::Kilt),
    );
    check(r#"{"id": "", "text": "", "lines": ""}"#, Some(DumpFormat::Fever));
    check("id\ttext\ttitle", Some(DumpFormat::Dpr));
    check("7\t\"some text\"\tA", Some(DumpFormat::Dpr));
    check(r#"{"title": "A", "text": "x"}"#, Some(DumpFormat::Jsonl));
    check(r#"{"title": "A", "sentences": ["x"]}"#, Some(DumpFormat::Jsonl));
    check(r#"{"name": "A"}"#, None);
    check("plain text", None);
    check("{not json", None);
}

#[test]
fn hotpotqa_abstracts_keep_sentences_and_read_links() {
    let page = page(
        DumpFormat::Hotpotqa,
        r#"{"id": "1", "url": "u", "title": "Tom &amp; Jerry", "text": ["Tom and Jerry is a cartoon.", " It is American."],
            "charoffset": [[[0, 3]]], "text_with_links": ["Tom and Jerry is a <a href=\"Animated%20cartoon\">cartoon</a>.", " It is American."]}"#,
    );
    assert_eq!(page.title, "Tom & Jerry");
    assert_eq!(
        page.paragraphs,
        vec![vec![
            "Tom and Jerry is a cartoon.".to_owned(),
            " It is American.".to_owned()
        ]]
    );
    assert_eq!(page.links, vec!["Animated cartoon"]);
}

#[test]
fn hotpotqa_full_edition_strips_inline_links_and_the_title_paragraph() {
    let page = page(
        DumpFormat::Hotpotqa,
        r#"{"id": "1", "url": "u", "title": "Mix", "text": [["Mix"], ["A <a href=\"Radio\">radio</a> station.", " In <a href='Sweden'>Sweden</a>."], ["More <b>bold</b>."]]}"#,
    );
    assert_eq!(
        page.paragraphs,
        vec![
            vec!["A radio station.".to_owned(), " In Sweden.".to_owned()],
            vec!["More <b>bold</b>.".to_owned()]
        ]
    );
    assert_eq!(page.links, vec!["Radio", "Sweden"]);
}

#[test]
fn kilt_drops_the_title_and_headings_and_keeps_list_items() {
    let page = page(
        DumpFormat::Kilt,
        r#"{"_id": "1", "wikipedia_id": "1", "wikipedia_title": "Rome Protocols", "text": ["Rome Protocols\n", "Signed in Rome.\n", "Section::::History.\n", "BULLET::::- Austria\n"],
            "anchors": [{"paragraph_id": 1, "start": 10, "end": 14, "text": "Rome", "href": "Rome", "wikipedia_title": "Rome", "wikipedia_id": "2"}, {"paragraph_id": 3, "start": 0, "end": 7, "text": "Austria", "href": "Austria%20%28country%29"}]}"#,
    );
    assert_eq!(page.title, "Rome Protocols");
    assert_eq!(
        page.paragraphs,
        vec![vec!["Signed in Rome.".to_owned()], vec!["Austria".to_owned()]]
    );
    assert_eq!(page.sentences, super::super::schema::Sentences::Unsplit);
    assert_eq!(page.links, vec!["Rome", "Austria (country)"]);
}

#[test]
fn fever_titles_and_sentences_are_unescaped() {
    assert_eq!(
        fever_title("Subway_-LRB-Homicide-COLON-_Life_on_the_Street-RRB-"),
        "Subway (Homicide: Life on the Street)"
    );
    let page = page(
        DumpFormat::Fever,
        "{\"id\": \"Constantin_Medien\", \"text\": \"x\", \"lines\": \"0\\tConstantin Medien AG -LRB- formerly EM.TV , then em.sport -RRB- is a `` German '' group .\\tGerman\\tGermany\\n1\\t\\n2\\tIt is based in Ismaning .\"}",
    );
    assert_eq!(page.title, "Constantin Medien");
    assert_eq!(
        page.paragraphs,
        vec![vec![
            "Constantin Medien AG (formerly EM.TV, then em.sport) is a \"German\" group.".to_owned(),
            "It is based in Ismaning.".to_owned()
        ]]
    );
    assert_eq!(page.links, vec!["Germany"]);
    assert_eq!(
        parse_record(DumpFormat::Fever, br#"{"id": "", "text": "", "lines": ""}"#),
        Ok(Record::Nothing)
    );
}

#[test]
fn dpr_passages_are_unquoted_and_joined() {
    assert_eq!(
        parse_record(DumpFormat::Dpr, b"id\ttext\ttitle"),
        Ok(Record::Nothing)
    );
    assert_eq!(
        parse_record(
            DumpFormat::Dpr,
            b"1\t\"Aaron Aaron ( or ; \"\"Aharon\"\") is a prophet\"\tAaron\r\n"
        ),
        Ok(Record::Passage {
            title: "Aaron".to_owned(),
            text: "Aaron Aaron ( or ; \"Aharon\") is a prophet".to_owned()
        })
    );
    let page = dpr_page(
        "Aaron".to_owned(),
        &[
            "Aaron Aaron is a prophet and".to_owned(),
            "a high priest.".to_owned(),
        ],
    );
    assert_eq!(
        page.paragraphs,
        vec![vec!["Aaron is a prophet and a high priest.".to_owned()]]
    );
}

#[test]
fn json_lines_pages_in_every_shape() {
    let text = page(
        DumpFormat::Jsonl,
        r#"{"title": "A", "text": "One. Two.\n\nThree."}"#,
    );
    assert_eq!(
        text.paragraphs,
        vec![vec!["One. Two.".to_owned()], vec!["Three.".to_owned()]]
    );
    let sentences = page(
        DumpFormat::Jsonl,
        r#"{"title": "A", "sentences": ["One.", "Two."]}"#,
    );
    assert_eq!(
        sentences.paragraphs,
        vec![vec!["One.".to_owned(), "Two.".to_owned()]]
    );
    let whole = page(
        DumpFormat::Jsonl,
        r#"{"title": "A", "paragraphs": ["One.", "Two."]}"#,
    );
    assert_eq!(whole.paragraphs.len(), 2);
    let split = page(
        DumpFormat::Jsonl,
        r#"{"title": "A", "paragraphs": [["One.", "Two."], ["Three."]]}"#,
    );
    assert_eq!(split.paragraphs[0].len(), 2);
}

#[test]
fn malformed_records_say_why() {
    #[track_caller]
    fn check(format: DumpFormat, line: &[u8], expected: &str) {
        let error = parse_record(format, line).expect_err("malformed");
        assert!(error.contains(expected), "{error}");
    }
    check(DumpFormat::Jsonl, b"{\"title\": ", "not valid JSON");
    check(DumpFormat::Jsonl, br#"{"text": "x"}"#, "no `title` field");
    check(
        DumpFormat::Jsonl,
        br#"{"title": 42, "text": "x"}"#,
        "field `title` is a number, expected a string",
    );
    check(
        DumpFormat::Kilt,
        br#"{"wikipedia_title": "A", "text": "x"}"#,
        "field `text` is a string, expected a list",
    );
    check(
        DumpFormat::Jsonl,
        br#"{"title": "A"}"#,
        "needs `text`, `sentences` or `paragraphs`",
    );
    check(
        DumpFormat::Jsonl,
        br#"{"title": "  ", "text": "x"}"#,
        "`title` is empty",
    );
    check(DumpFormat::Jsonl, b"{\"title\": \"caf\xe9\"}", "not valid UTF-8");
    check(DumpFormat::Jsonl, b"[1, 2]", "expected a JSON object");
    check(
        DumpFormat::Hotpotqa,
        br#"{"title": "A", "text": [1]}"#,
        "`text` must be a list",
    );
    check(
        DumpFormat::Dpr,
        b"just one field",
        "expected `id<TAB>text<TAB>title`",
    );
}

#[test]
fn strings_read_in_one_pass_as_serdes_untagged_enum_reads_them() {
    // What `Strings` was: serde's untagged enum, which buffers the list and tries each shape.
    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(untagged)]
    enum Untagged {
        Flat(Vec<String>),
        Nested(Vec<Vec<String>>),
    }
    fn shape(strings: Strings) -> Untagged {
        match strings {
            Strings::Flat(texts) => Untagged::Flat(texts),
            Strings::Nested(lists) => Untagged::Nested(lists),
        }
    }
    let lists = [
        r#"[]"#,
        r#"["a", "b\u00e9\n"]"#,
        r#"[[], ["a"], ["b", "c"]]"#,
        r#"[[]]"#,
        r#"["a", ["b"]]"#,
        r#"[["a"], "b"]"#,
        r#"[1]"#,
        r#"["a", null]"#,
        r#"[["a", 1]]"#,
        r#"[[["a"]]]"#,
        r#"[{"a": "b"}]"#,
        r#"[true]"#,
        r#""a""#,
        r#"{"a": ["b"]}"#,
        r#"null"#,
        r#"["a", "b""#,
    ];
    for list in lists {
        let expected = serde_json::from_str::<Untagged>(list);
        let read = serde_json::from_str::<Strings>(list).map(shape);
        let value = serde_json::from_str::<Value>(list).map(serde_json::from_value::<Strings>);
        match (&expected, &read) {
            (Ok(expected), Ok(read)) => assert_eq!(read, expected, "{list}"),
            (Err(expected), Err(read)) => {
                let expected = expected.to_string().replace("enum Untagged", "enum Strings");
                let untagged = expected.contains(NOT_STRINGS);
                assert_eq!(
                    read.to_string().contains(NOT_STRINGS),
                    untagged,
                    "{list}: {read} / {expected}"
                );
                if !untagged {
                    // A JSON error (the list cut short) is serde_json's own, as before.
                    assert_eq!(read.to_string(), expected, "{list}");
                }
            }
            _ => panic!("{list}: {read:?} where untagged gives {expected:?}"),
        }
        if let Ok(Ok(from_value)) = value {
            assert_eq!(Some(shape(from_value)), expected.ok(), "{list} as a Value");
        }
    }
}
