use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/docstore")
        .join(name)
}

use std::path::PathBuf;

/// The first question's ten paragraphs (HotpotQA distractor setting).
fn context() -> Vec<ContextParagraph> {
    let records: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(fixture("hotpotqa-distractor-3.json")).unwrap())
            .unwrap();
    context_paragraphs(&records[0]["context"]).unwrap()
}

fn explorer(profile: Profile) -> ContextExplorer {
    DistractorSource::new(profile).explorer(&context()).unwrap()
}

/// What searching `entity` opens in a loaded corpus: the page's title and first sentence.
fn corpus_hit(pages: Vec<IndexedPage>, entity: &str) -> (String, String) {
    let index = PageIndex::in_memory(pages, "corpus").unwrap();
    match index.search(entity).unwrap() {
        crate::docstore::index::SearchHit::Page(page) => {
            let sentences = page.to_page().sentences(Profile::Default);
            (page.title, sentences[0].clone())
        }
        other => panic!("{entity}: {other:?}"),
    }
}

#[test]
fn search_by_exact_title_ignoring_case_and_punctuation() {
    for profile in [Profile::Paper, Profile::Default] {
        let mut explorer = explorer(profile);
        for entity in ["VIVA Media", "viva media", "Viva-Media", "\"VIVA Media\""] {
            let observation = explorer.search_now(entity).unwrap();
            assert!(
                observation.starts_with("VIVA Media GmbH (until 2004 \"VIVA Media AG\") is a music"),
                "{observation}"
            );
        }
    }
    let mut explorer = explorer(Profile::Default);
    assert_eq!(
        explorer.search_now("VIVA: UK and Ireland").unwrap(),
        "Viva (stylised as VIVA) is a music television channel in the United Kingdom and Ireland, owned by VIVA \
         Media and thereby Viacom International Media Networks Europe. The channel launched on 26 October 2009, \
         replacing TMF."
    );
}

#[test]
fn a_miss_ranks_titles_by_similarity() {
    let mut default = explorer(Profile::Default);
    assert_eq!(
        default.search_now("VIVA Media GmbH").unwrap(),
        "Could not find VIVA Media GmbH. Similar: ['VIVA Media', 'VIVA Poland', 'ProSiebenSat.1 Media', \
         'Viva (UK and Ireland)', 'Constantin Medien']."
    );
    // Only pages that share a word (or nearly) with the entity, or whose titles are much alike,
    // are offered.
    assert_eq!(
        default.search_now("Gesellschaft Haftung").unwrap(),
        "Could not find Gesellschaft Haftung. Similar: ['Gesellschaft mit beschränkter Haftung']."
    );
    assert_eq!(
        default.search_now("Gesellschaft Hafftung Zzyzx").unwrap(),
        "Could not find Gesellschaft Hafftung Zzyzx. Similar: ['Gesellschaft mit beschränkter Haftung']."
    );
    // A short word, or two glued, matches no title word: the title's letters still find it.
    assert_eq!(
        default.search_now("Blc").unwrap(),
        "Could not find Blc. Similar: ['Blic']."
    );
    assert_eq!(
        default.search_now("MixMegapol").unwrap(),
        "Could not find MixMegapol. Similar: ['Mix Megapol']."
    );
    assert_eq!(
        default.search_now("Zzyzx").unwrap(),
        "Could not find Zzyzx. No similar pages."
    );
    // Close spellings find the page first.
    assert!(
        default
            .search_now("viva uk & ireland")
            .unwrap()
            .starts_with("Could not find viva uk & ireland. Similar: ['Viva (UK and Ireland)', ")
    );
    let mut empty = DistractorSource::new(Profile::Default).explorer(&[]).unwrap();
    assert_eq!(
        empty.search_now("x").unwrap(),
        "Could not find x. No similar pages."
    );
    let mut paper = DistractorSource::new(Profile::Paper).explorer(&[]).unwrap();
    assert_eq!(paper.search_now("x").unwrap(), "Could not find x. Similar: [].");
}

#[test]
fn lookup_has_the_wikipedia_cursor() {
    let mut default = explorer(Profile::Default);
    assert_eq!(default.lookup("2004"), crate::docstore::page::NO_PAGE);
    default.search_now("VIVA Media").unwrap();
    assert_eq!(
        default.lookup("gmbh"),
        "(Result 1 / 1) VIVA Media GmbH (until 2004 \"VIVA Media AG\") is a music television network \
         originating from Germany."
    );
    assert_eq!(default.lookup("GmbH"), "No more results.");
    assert_eq!(default.lookup("elephant"), "No results for elephant.");
    // A miss keeps the page, starts the cursor afresh.
    default.search_now("nothing like it").unwrap();
    assert!(default.lookup("GmbH").starts_with("(Result 1 / 1)"));

    let mut paper = explorer(Profile::Paper);
    assert_eq!(paper.lookup("2004"), "No more results.\n");
    paper.search_now("VIVA Media").unwrap();
    assert!(paper.lookup("GmbH").starts_with("(Result 1 / 1) VIVA Media GmbH"));
    assert_eq!(paper.lookup("GmbH"), "No more results.\n");
}

#[test]
fn loads_every_corpus_format() {
    let jsonl = load_pages(&fixture("corpus-3.jsonl")).unwrap();
    assert_eq!(jsonl.len(), 30);
    let huggingface = load_pages(&fixture("hotpotqa-distractor-3.json")).unwrap();
    assert_eq!(huggingface.len(), 30);
    let official = load_pages(&fixture("hotpotqa-official-1.json")).unwrap();
    assert_eq!(official.len(), 10);
    for pages in [&jsonl, &huggingface, &official] {
        let (title, first) = corpus_hit(pages.clone(), "john m keller");
        assert_eq!(title, "John M. Keller");
        assert!(
            first.starts_with("John M. Keller (born March 5, 1938)"),
            "{first}"
        );
    }
    let paper = |pages: &[IndexedPage]| {
        pages
            .iter()
            .map(|page| page.to_page().sentences(Profile::Paper))
            .collect::<Vec<_>>()
    };
    assert_eq!(paper(&jsonl), paper(&huggingface));
}

#[test]
fn corpus_errors_name_the_file_and_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "bad.jsonl",
            "{\"title\": \"A\", \"text\": \"x\"}\n{oops\n",
            "line 2: not valid JSON",
        ),
        (
            "notitle.jsonl",
            "{\"text\": \"x\"}\n",
            "line 1: expected a `title` (a page) or a `context`",
        ),
        (
            "notext.jsonl",
            "{\"title\": \"A\"}\n",
            "line 1: a page needs `text`, `sentences` or `paragraphs`",
        ),
        (
            "number.jsonl",
            "{\"title\": 3, \"text\": \"x\"}\n",
            "line 1: field `title` is a number, expected a string",
        ),
        (
            "array.json",
            "[{\"context\": [[\"A\", \"not a list\"]]}]",
            "record 1: `context[0][1]` must be a list",
        ),
        (
            "columns.json",
            "[{}, {\"context\": {\"title\": [\"A\"], \"sentences\": []}}]",
            "record 1: expected a `title`",
        ),
        (
            "mismatch.json",
            "[{\"context\": {\"title\": [\"A\"], \"sentences\": []}}]",
            "1 titles but 0 sentence lists",
        ),
        ("empty.jsonl", "\n\n", "the file: holds no pages"),
        ("scalar.jsonl", "3\n", "line 1: expected a JSON object"),
    ];
    for (name, content, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let message = load_pages(&path).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("corpus {}, ", path.display())),
            "{message}"
        );
        assert!(message.contains(expected), "{name}: {message}");
    }
    let missing = dir.path().join("missing.jsonl");
    let error = load_pages(&missing).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("cannot read the corpus {}", missing.display())
    );
}

/// Every question of the 100-question sample, searched the ways a model searches (exact, case,
/// punctuation, a dropped letter, a word of the text, a miss) and looked up: the observations
/// (cut at 120 characters). Re-pinned when a miss among ten pages began to offer the titles much
/// alike letter for letter: nine one-typo searches (`Blc`, `KentBaer`, `WWR`, ...) that found
/// nothing now offer their title.
#[test]
fn observations_over_a_hundred_real_contexts() {
    let records: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(fixture("hotpotqa-distractor-100.json")).unwrap())
            .unwrap();
    let cut = |observation: String| match observation.char_indices().nth(120) {
        Some((end, _)) => format!("{}…", &observation[..end]),
        None => observation,
    };
    let mut transcript = String::new();
    for (idx, record) in records.iter().enumerate() {
        let context = context_paragraphs(&record["context"]).unwrap();
        let title = |n: usize| context[n % context.len()].title.clone();
        let mut typo: Vec<char> = title(3).chars().collect();
        typo.remove(typo.len() / 2);
        let text_word = context[4 % context.len()].sentences[0]
            .split_whitespace()
            .max_by_key(|word| word.len())
            .unwrap_or("word")
            .to_owned();
        let searches = [
            title(0),
            title(1).to_lowercase(),
            format!("\"{}.\"", title(2)),
            typo.into_iter().collect(),
            text_word,
            format!("{} Zyzzogeton", title(5).split_whitespace().next().unwrap_or("")),
        ];
        transcript.push_str(&format!("# {idx}\n"));
        let mut explorer = DistractorSource::new(Profile::Default)
            .explorer(&context)
            .unwrap();
        for entity in searches {
            let observation = cut(explorer.search_now(&entity).unwrap());
            transcript.push_str(&format!("Search[{entity}] {observation}\n"));
        }
        explorer.search_now(&title(0)).unwrap();
        let keyword = title(0).split_whitespace().last().unwrap_or("x").to_owned();
        transcript.push_str(&format!("Lookup[{keyword}] {}\n", cut(explorer.lookup(&keyword))));
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    settings.bind(|| insta::assert_snapshot!(transcript));
}

/// The three typos a model makes in a title: a middle letter dropped, the two middle letters
/// swapped, the first space removed (`None` when the title has no such typo).
fn typos(title: &str) -> [Option<String>; 3] {
    let chars: Vec<char> = title.chars().collect();
    let middle = chars.len() / 2;
    let mut dropped = chars.clone();
    dropped.remove(middle);
    let mut swapped = chars.clone();
    swapped.swap(middle - 1, middle);
    [
        Some(dropped.into_iter().collect()),
        (swapped != chars).then(|| swapped.into_iter().collect()),
        title.contains(' ').then(|| title.replacen(' ', "", 1)),
    ]
}

/// Over the 100 real contexts, each title of four characters or more misspelt the three ways: how
/// many searches of each kind opened the page or listed its title among the similar ones.
#[test]
fn a_misspelt_title_is_among_the_similar_titles() {
    let records: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(fixture("hotpotqa-distractor-100.json")).unwrap())
            .unwrap();
    let mut found = [(0usize, 0usize); 3];
    let mut missed = Vec::new();
    for record in &records {
        let context = context_paragraphs(&record["context"]).unwrap();
        let index = ContextIndex::new(context_pages(&context));
        for paragraph in &context {
            let title = &paragraph.title;
            if title.chars().count() < 4 {
                continue;
            }
            for (kind, typo) in typos(title).into_iter().enumerate() {
                let Some(typo) = typo else { continue };
                let listed = match index.search(&typo) {
                    ContextHit::Page(page) => page.title == *title,
                    ContextHit::Similar(titles) => titles.contains(title),
                };
                found[kind].1 += 1;
                if listed {
                    found[kind].0 += 1;
                } else {
                    missed.push(format!("{kind} {typo:?} for {title:?}"));
                }
            }
        }
    }
    // 999 of 999, 981 of 981 and 921 of 921 when this was written (911, 979 and 609 before a
    // miss among a few pages offered the titles alike letter for letter).
    for (kind, (listed, searched)) in found.into_iter().enumerate() {
        assert!(
            listed * 100 >= searched * 98,
            "typo {kind}: {listed} of {searched}; missed:\n{}",
            missed.join("\n")
        );
    }
}
