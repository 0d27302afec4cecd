//! The core's layout holds: it prints nothing, its top-level modules form
//! no cycle, and no source file outgrows a reader. These read the sources
//! themselves, so a change that breaks the architecture fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a source file may grow.
const MAX_LINES: usize = 600;

/// Every `.rs` file under the crate's `src`, with its text.
fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &mut out);
    assert!(out.len() > 20, "found the sources under {}", root.display());
    out
}

/// The product code of a file: without its unit tests (an inline `mod
/// tests { … }` is last in a file; a `tests.rs` is all test) and comments.
fn product_code(path: &Path, text: &str) -> String {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap();
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level module a file belongs to (`store` for `src/store/runs.rs`).
fn module_of(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let relative = path.strip_prefix(&root).unwrap();
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_owned()
}

#[test]
fn the_core_prints_nothing() {
    let printing: Vec<String> = sources()
        .iter()
        .flat_map(|(path, text)| {
            let code = product_code(path, text);
            ["print!(", "println!(", "eprint!(", "eprintln!(", "dbg!("]
                .into_iter()
                .filter(move |m| code.contains(m))
                .map(move |m| format!("{}: {m}", path.display()))
        })
        .collect();
    assert!(printing.is_empty(), "the core prints: {printing:#?}");
}

#[test]
fn no_source_file_outgrows_a_reader() {
    let long: Vec<String> = sources()
        .iter()
        .map(|(path, text)| (path, text.lines().count()))
        .filter(|(_, lines)| *lines > MAX_LINES)
        .map(|(path, lines)| format!("{}: {lines} lines", path.display()))
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:#?}");
}

#[test]
fn the_top_level_modules_form_no_cycle() {
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in sources() {
        let module = module_of(&path);
        if module == "lib" {
            continue;
        }
        let code = product_code(&path, &text);
        for (at, _) in code.match_indices("crate::") {
            let named: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !named.is_empty() && named != module {
                uses.entry(module.clone()).or_default().insert(named);
            }
        }
    }
    assert!(
        uses.get("model").is_some_and(|m| m.contains("text")),
        "the scan sees the model's imports: {uses:?}"
    );
    // Depth-first, keeping the path: a module met again on it is a cycle.
    fn visit(
        module: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if let Some(at) = path.iter().position(|m| m == module) {
            panic!("a module cycle: {} -> {module}", path[at..].join(" -> "));
        }
        if !done.insert(module.to_owned()) {
            return;
        }
        path.push(module.to_owned());
        for next in uses.get(module).into_iter().flatten() {
            visit(next, uses, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for module in uses.keys() {
        visit(module, &uses, &mut Vec::new(), &mut done);
    }
}
