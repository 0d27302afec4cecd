//! The workspace's product code keeps its layout: every crate of it
//! (`crates/*`, the `hark` binary in `src`, the app in `app/src`, its window in `src-tauri/src`;
//! not the tests, benches or fake agents) has typed errors, files a reader
//! takes in, and top-level modules that form no cycle. These read the
//! sources themselves (parsed with syn, so a type is what the compiler
//! sees), so a change that breaks the layout fails here, whatever its
//! platform: every file is read, compiled here or not (the macOS and
//! Windows notification backends too).
//!
//! What the compiler can check is left to it (clippy, in the workspace's
//! lints): a function's length (`too_many_lines`, 100 lines of code,
//! `clippy.toml`) and that the core prints nothing (`print_stdout`,
//! `print_stderr`, denied in `hark-core`'s `lib.rs`; `dbg_macro`). The test
//! command runs clippy for Linux and, for those lints, for macOS and
//! Windows, so the other platforms' files are held to them too.
//!
//! It lives here, not in the core's tests: it reads every crate of the
//! workspace, which no one crate's own tests should reach into.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::Span;
use syn::visit::{self, Visit};

/// The longest a source file may grow.
const MAX_FILE_LINES: usize = 600;

/// The workspace's root (the `hark` package's own directory).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One product crate: its name and its `src`.
#[derive(Debug)]
struct Crate {
    name: String,
    src: PathBuf,
}

/// Every product crate: each of `crates/`, the `hark` binary, the app.
fn product_crates() -> Vec<Crate> {
    let mut crates: Vec<Crate> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .map(|dir| Crate {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            src: dir.join("src"),
        })
        .collect();
    crates.sort_by(|a, b| a.name.cmp(&b.name));
    crates.push(Crate {
        name: "hark".to_owned(),
        src: root().join("src"),
    });
    crates.push(Crate {
        name: "hark-app".to_owned(),
        src: root().join("app/src"),
    });
    crates.push(Crate {
        name: "hark-window".to_owned(),
        src: root().join("src-tauri/src"),
    });
    crates
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
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
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    assert!(!out.is_empty(), "found the sources under {}", dir.display());
    out
}

/// Every product source file of every product crate.
fn all_sources() -> Vec<(PathBuf, String)> {
    product_crates()
        .iter()
        .flat_map(|c| sources(&c.src))
        .collect()
}

/// `path` as the workspace names it.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// A `tests.rs` is all unit tests (its parent declares it `#[cfg(test)]`).
fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
}

/// The product code of a file as text: without its unit tests (an inline
/// `mod tests { … }` is last in a file; a `tests.rs` is all test) and
/// comments.
fn product_code(path: &Path, text: &str) -> String {
    if is_test_file(path) {
        return String::new();
    }
    let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap();
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An item only tests see: `#[test]`, or `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg")
                && a.parse_args::<syn::Meta>()
                    .is_ok_and(|m| m.path().is_ident("test")))
    })
}

fn line(span: Span) -> usize {
    span.start().line
}

/// What one file's product code breaks: results whose error is a bare
/// `String`.
#[derive(Debug, Default)]
struct Findings {
    string_errors: Vec<String>,
}

/// Walks one file's syntax tree, leaving out what only tests see.
struct Scan<'a> {
    file: &'a str,
    found: &'a mut Findings,
}

impl<'ast> Visit<'ast> for Scan<'_> {
    fn visit_item_mod(&mut self, node: &'ast syn::ItemMod) {
        if !is_test(&node.attrs) {
            visit::visit_item_mod(self, node);
        }
    }

    fn visit_item_impl(&mut self, node: &'ast syn::ItemImpl) {
        if !is_test(&node.attrs) {
            visit::visit_item_impl(self, node);
        }
    }

    fn visit_item_fn(&mut self, node: &'ast syn::ItemFn) {
        if !is_test(&node.attrs) {
            visit::visit_item_fn(self, node);
        }
    }

    fn visit_impl_item_fn(&mut self, node: &'ast syn::ImplItemFn) {
        if !is_test(&node.attrs) {
            visit::visit_impl_item_fn(self, node);
        }
    }

    /// `Result<T, String>`, wherever a type is written: signatures,
    /// closures, turbofish, aliases.
    fn visit_type_path(&mut self, node: &'ast syn::TypePath) {
        if let Some(result) = node.path.segments.last()
            && result.ident == "Result"
            && let syn::PathArguments::AngleBracketed(args) = &result.arguments
            && let [_, syn::Type::Path(error)] = args
                .args
                .iter()
                .filter_map(|a| match a {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                })
                .collect::<Vec<_>>()[..]
            && error.path.segments.last().is_some_and(|s| {
                s.ident == "String" && matches!(s.arguments, syn::PathArguments::None)
            })
        {
            self.found.string_errors.push(format!(
                "{}:{}: a Result whose error is a String",
                self.file,
                line(result.ident.span())
            ));
        }
        visit::visit_type_path(self, node);
    }
}

/// What the product code of every crate breaks.
fn scan() -> Findings {
    let mut found = Findings::default();
    for (path, text) in all_sources() {
        if is_test_file(&path) {
            continue;
        }
        let file = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", shown(&path)));
        let name = shown(&path);
        Scan {
            file: &name,
            found: &mut found,
        }
        .visit_file(&file);
    }
    found
}

#[test]
fn every_product_crate_of_the_workspace_is_read() {
    let manifest: toml::Table = std::fs::read_to_string(root().join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let members = manifest["workspace"]["members"].as_array().unwrap();
    let read: BTreeSet<PathBuf> = product_crates().into_iter().map(|c| c.src).collect();
    for member in members {
        let member = member.as_str().unwrap();
        if member.starts_with("tests/") || member.starts_with("bench/") {
            continue;
        }
        let dirs: Vec<PathBuf> = match member.strip_suffix("/*") {
            Some(parent) => std::fs::read_dir(root().join(parent))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|dir| dir.join("Cargo.toml").is_file())
                .collect(),
            None => vec![root().join(member)],
        };
        for dir in dirs {
            assert!(
                read.contains(&dir.join("src")),
                "the workspace member {} is not read here",
                shown(&dir)
            );
        }
    }
    assert!(
        read.contains(&root().join("src")),
        "the hark binary is read"
    );
    assert!(read.len() >= 4, "the product crates: {read:?}");
}

#[test]
fn no_result_has_a_bare_string_for_its_error() {
    let found = scan().string_errors;
    assert!(
        found.is_empty(),
        "errors are typed (a thiserror enum or struct that says what failed): {found:#?}"
    );
}

#[test]
fn no_source_file_outgrows_a_reader() {
    let long: Vec<String> = all_sources()
        .iter()
        .map(|(path, text)| (path, text.lines().count()))
        .filter(|(_, lines)| *lines > MAX_FILE_LINES)
        .map(|(path, lines)| format!("{}: {lines} lines", shown(path)))
        .collect();
    assert!(long.is_empty(), "over {MAX_FILE_LINES} lines: {long:#?}");
}

/// A crate's top-level modules, each with the ones it names (`crate::x`).
fn module_uses(krate: &Crate) -> BTreeMap<String, BTreeSet<String>> {
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in sources(&krate.src) {
        let relative = path.strip_prefix(&krate.src).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let module = first.to_string_lossy().trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
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
    uses
}

#[test]
fn no_crate_has_top_level_modules_that_form_a_cycle() {
    // Depth-first, keeping the path: a module met again on it is a cycle.
    fn visit(
        module: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<String> {
        if let Some(at) = path.iter().position(|m| m == module) {
            return Some(format!("{} -> {module}", path[at..].join(" -> ")));
        }
        if !done.insert(module.to_owned()) {
            return None;
        }
        path.push(module.to_owned());
        let cycle = uses
            .get(module)
            .into_iter()
            .flatten()
            .find_map(|next| visit(next, uses, path, done));
        path.pop();
        cycle
    }
    let mut cycles = Vec::new();
    for krate in product_crates() {
        let uses = module_uses(&krate);
        if krate.name == "hark-core" {
            assert!(
                uses.get("model").is_some_and(|m| m.contains("text")),
                "the scan sees the core model's imports: {uses:?}"
            );
        }
        let mut done = BTreeSet::new();
        for module in uses.keys() {
            if let Some(cycle) = visit(module, &uses, &mut Vec::new(), &mut done) {
                cycles.push(format!("{}: {cycle}", krate.name));
            }
        }
    }
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
}

/// What the layout leaves to the compiler stays asked of it: clippy's
/// `too_many_lines` at 100 for every product crate, and `print_stdout`,
/// `print_stderr` denied in the core.
#[test]
fn the_compiler_holds_function_length_and_the_core_s_silence() {
    let read = |path: &str| std::fs::read_to_string(root().join(path)).unwrap();
    let manifest: toml::Table = read("Cargo.toml").parse().unwrap();
    let clippy = &manifest["workspace"]["lints"]["clippy"];
    assert_eq!(
        clippy.get("too_many_lines").and_then(|l| l.as_str()),
        Some("warn"),
        "[workspace.lints.clippy] too_many_lines"
    );
    let config: toml::Table = read("clippy.toml").parse().unwrap();
    assert_eq!(
        config
            .get("too-many-lines-threshold")
            .and_then(|t| t.as_integer()),
        Some(100),
        "clippy.toml's too-many-lines-threshold"
    );
    for krate in product_crates() {
        let manifest: toml::Table = std::fs::read_to_string(krate.src.with_file_name("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
        let lints = manifest.get("lints").and_then(|l| l.get("workspace"));
        assert_eq!(
            lints.and_then(|w| w.as_bool()),
            Some(true),
            "{} takes the workspace's lints ([lints] workspace = true)",
            krate.name
        );
    }
    let core = read("crates/hark-core/src/lib.rs");
    assert!(
        core.contains("#![deny(clippy::print_stdout, clippy::print_stderr)]"),
        "hark-core's lib.rs denies clippy::print_stdout and clippy::print_stderr"
    );
}
