//! The layers of ARCHITECTURE.md are the layers of the code: no two modules of `src/` (the library,
//! with the command line's `cli/` on top) import each other, directly or around a longer loop.
//! Sibling modules are compared at every depth (`docstore::page` and `docstore::html`, `run` and
//! `docstore`); unit-test modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path below the crate root: `src/docstore/index/mod.rs` → `["docstore", "index"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code of a file before its `#[cfg(test)] mod tests { … }` block (unit tests may reach anywhere).
fn non_test_code(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    }
}

/// The module paths a file names through `crate::…` or `super::…`.
fn references(module: &[String], text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("::") {
        let before = &text[..at];
        let word_start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |idx| idx + 1);
        let base: Vec<String> = match &before[word_start..] {
            "crate" => Vec::new(),
            // `super` in `a/b.rs` and in `a/b/mod.rs` alike names `a`.
            "super" => module[..module.len().saturating_sub(1)].to_vec(),
            _ => continue,
        };
        let rest = &text[at + 2..];
        let mut path = base;
        for segment in rest.split("::") {
            let name: String = segment
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() || name.chars().next().is_some_and(char::is_uppercase) {
                break;
            }
            path.push(name);
            if !segment[path.last().unwrap().len()..].is_empty() {
                break;
            }
        }
        found.push(path);
    }
    found
}

/// Sibling edges `a → b` at every depth: the first place the two paths part.
fn edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in super::audit::source_files(src) {
        let module = module_path(src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        for target in references(&module, non_test_code(&text)) {
            let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if common < module.len() && common < target.len() {
                let from = module[..=common].join("::");
                let to = target[..=common].join("::");
                graph.entry(from).or_default().insert(to);
            }
        }
    }
    graph
}

/// Every cycle's modules, each cycle once (strongly connected components of more than one module).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Two modules are in one cycle when each reaches the other.
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_owned()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = graph.keys().map(|node| (node, reach(node))).collect();
    let mut found: Vec<Vec<String>> = Vec::new();
    for (node, from_node) in &reached {
        let component: Vec<String> = from_node
            .iter()
            .filter(|other| reached.get(other).is_some_and(|back| back.contains(*node)))
            .cloned()
            .collect();
        if component.len() > 1 && !found.contains(&component) {
            found.push(component);
        }
    }
    found
}

#[test]
fn no_module_imports_a_module_that_imports_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = edges(&src);
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "import cycles between modules (move the shared piece below both): {found:?}"
    );
}

#[test]
fn the_layer_check_sees_a_cycle() {
    let module = |path: &str| path.split("::").map(str::to_owned).collect::<Vec<_>>();
    let page = references(&module("docstore::page"), "use super::html::SearchOutcome;");
    assert_eq!(page, vec![module("docstore::html")]);
    let run = references(
        &module("run"),
        "use crate::docstore::DocstoreInfo; x: crate::fsutil::f()",
    );
    assert_eq!(run, vec![module("docstore"), module("fsutil::f")]);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    assert!(cycles(&graph).is_empty());
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        cycles(&graph),
        vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]
    );
}

/// The modules in the order `lib.rs` declares them: a newcomer reading it meets the layers bottom
/// up.
fn declared_order(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|line| {
            let line = line.trim();
            let name = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("mod "))?;
            Some(name.trim_end_matches(';').to_owned())
        })
        .collect()
}

/// The edges between the children of `parent` (`""`: the crate root) that import a sibling the
/// parent declares after them: a lower layer reaching up.
fn upward_edges(
    graph: &BTreeMap<String, BTreeSet<String>>,
    parent: &str,
    order: &[String],
) -> Vec<(String, String)> {
    let child = |module: &str| -> Option<usize> {
        let name = if parent.is_empty() {
            module
        } else {
            module.strip_prefix(parent)?.strip_prefix("::")?
        };
        if name.contains("::") {
            return None;
        }
        order.iter().position(|declared| declared == name)
    };
    let mut upward = Vec::new();
    for (from, targets) in graph {
        for to in targets {
            if let (Some(from_rank), Some(to_rank)) = (child(from), child(to))
                && to_rank > from_rank
            {
                upward.push((from.clone(), to.clone()));
            }
        }
    }
    upward
}

#[test]
fn every_folder_declares_its_layers_bottom_up_and_no_module_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = edges(&src);
    let mut upward = Vec::new();
    let mut folders = 0;
    for file in super::audit::source_files(&src) {
        let module = module_path(&src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        let order: Vec<String> = declared_order(non_test_code(&text))
            .into_iter()
            .filter(|name| name != "tests")
            .collect();
        if order.len() > 1 {
            folders += 1;
            upward.extend(upward_edges(&graph, &module.join("::"), &order));
        }
    }
    assert!(
        folders >= 8,
        "found only {folders} modules that declare submodules"
    );
    assert!(
        upward.is_empty(),
        "these modules import a sibling declared after them (declare the lower one first, or move the shared piece down): {upward:?}"
    );
}

#[test]
fn the_order_check_sees_a_lower_layer_reaching_up() {
    let order = declared_order("pub mod run;\nmod http;\npub mod eval;\n");
    assert_eq!(order, ["run", "http", "eval"]);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("eval".into()).or_default().insert("run".into());
    assert!(upward_edges(&graph, "", &order).is_empty());
    graph.entry("run".into()).or_default().insert("eval".into());
    assert_eq!(
        upward_edges(&graph, "", &order),
        [("run".to_owned(), "eval".to_owned())]
    );
    // The same inside a folder, and nothing across folders.
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph
        .entry("record::run".into())
        .or_default()
        .insert("record::eval".into());
    graph.entry("run".into()).or_default().insert("eval".into());
    assert_eq!(
        upward_edges(&graph, "record", &order),
        [("record::run".to_owned(), "record::eval".to_owned())]
    );
}

/// The names of the public types a file declares (`pub struct`, `pub enum`, `pub trait`, `pub type`).
fn public_types(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line.trim_start().strip_prefix("pub ")?;
            let rest = ["struct ", "enum ", "trait ", "type "]
                .iter()
                .find_map(|keyword| rest.strip_prefix(keyword))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

#[test]
fn no_two_public_types_share_a_name() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut declared: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in super::audit::source_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in public_types(non_test_code(&text)) {
            let place = file.strip_prefix(&src).unwrap().display().to_string();
            declared.entry(name).or_default().push(place);
        }
    }
    assert!(declared.len() > 100, "found only {} public types", declared.len());
    let shared: Vec<_> = declared.iter().filter(|(_, files)| files.len() > 1).collect();
    assert!(
        shared.is_empty(),
        "public types that share a name (a reader cannot tell which one a `use` means): {shared:?}"
    );
}

#[test]
fn the_name_check_sees_a_public_type() {
    let text = "pub struct Run {\n}\npub(crate) struct Hidden;\n    pub enum Stopped { A }\npub type Alias = u8;\npub trait Llm {}\npub fn run() {}\n";
    assert_eq!(public_types(text), ["Run", "Stopped", "Alias", "Llm"]);
}

/// The modules a file declares, each with whether it is `pub` (`pub mod x;`) or not (`mod x;`,
/// `pub(crate) mod x;`).
fn declared_modules(text: &str) -> Vec<(String, bool)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (name, public) = match line.strip_prefix("pub mod ") {
                Some(rest) => (rest, true),
                None => (
                    line.strip_prefix("mod ")
                        .or_else(|| line.strip_prefix("pub(crate) mod "))?,
                    false,
                ),
            };
            let name = name.strip_suffix(';')?;
            Some((name.to_owned(), public))
        })
        .collect()
}

/// The names a `pub use` statement makes public, each as the item's own name (`A as B` → `A`),
/// with `*` for a glob.
fn reexported_names(statement: &str) -> Vec<String> {
    let body = statement
        .trim()
        .trim_start_matches("pub use")
        .trim_end_matches(';');
    body.split([',', '{', '}'])
        .filter_map(|part| {
            let path = part.trim();
            let path = path.split(" as ").next()?.trim();
            let name = path.rsplit("::").next()?.trim();
            (!name.is_empty() && name != "self").then(|| name.to_owned())
        })
        .collect()
}

/// The `pub use` statements of a file, each joined onto one line.
fn reexports(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        match open.as_mut() {
            Some(statement) => statement.push_str(line),
            None if line.starts_with("pub use ") => open = Some(line.to_owned()),
            None => continue,
        }
        if line.ends_with(';') {
            found.extend(open.take());
        }
    }
    found
}

/// Every public path by which a type of `src/` can be named: where it is declared, when every
/// module on the way is `pub`, and each `pub use` of it in such a module.
fn public_paths(src: &Path) -> BTreeMap<String, Vec<String>> {
    let mut texts: BTreeMap<Vec<String>, String> = BTreeMap::new();
    // `main.rs` is the binary's crate, not a module of the library.
    for file in super::audit::source_files(src)
        .into_iter()
        .filter(|file| *file != src.join("main.rs"))
    {
        let text = std::fs::read_to_string(&file).unwrap();
        texts.insert(module_path(src, &file), non_test_code(&text).to_owned());
    }
    // A module is reachable when its parent is and declares it `pub`.
    let mut public_modules: BTreeSet<Vec<String>> = BTreeSet::from([Vec::new()]);
    let mut frontier = vec![Vec::new()];
    while let Some(module) = frontier.pop() {
        for (child, public) in declared_modules(texts.get(&module).map_or("", String::as_str)) {
            let mut path = module.clone();
            path.push(child);
            if public && public_modules.insert(path.clone()) {
                frontier.push(path);
            }
        }
    }
    let mut types: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (module, text) in &texts {
        for name in public_types(text) {
            types.entry(name).or_default();
        }
        if !public_modules.contains(module) {
            continue;
        }
        for name in public_types(text) {
            types
                .get_mut(&name)
                .unwrap()
                .push(format!("{}::{name}", module.join("::")));
        }
    }
    for (module, text) in &texts {
        if !public_modules.contains(module) {
            continue;
        }
        for statement in reexports(text) {
            for name in reexported_names(&statement) {
                if let Some(paths) = types.get_mut(&name) {
                    paths.push(format!("{}::{name} (pub use)", module.join("::")));
                } else if name == "*" {
                    panic!("a glob re-export in `{}`: `{statement}`", module.join("::"));
                }
            }
        }
    }
    types
}

#[test]
fn no_type_is_named_by_two_public_paths() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let paths = public_paths(&src);
    assert!(paths.len() > 100, "found only {} public types", paths.len());
    let twice: Vec<_> = paths.iter().filter(|(_, paths)| paths.len() > 1).collect();
    assert!(
        twice.is_empty(),
        "types with two public paths (re-export from a private module, or not at all): {twice:#?}"
    );
}

#[test]
fn the_path_check_sees_a_reexport() {
    assert_eq!(
        declared_modules("pub mod a;\nmod b;\npub(crate) mod c;\npub mod d {\n"),
        [
            ("a".to_owned(), true),
            ("b".to_owned(), false),
            ("c".to_owned(), false)
        ]
    );
    let text = "pub use a::{B, c::D as E,\n    self};\nuse x::Y;\npub use crate::f::G;\n";
    let statements = reexports(text);
    assert_eq!(statements.len(), 2);
    assert_eq!(reexported_names(&statements[0]), ["B", "D"]);
    assert_eq!(reexported_names(&statements[1]), ["G"]);
}
