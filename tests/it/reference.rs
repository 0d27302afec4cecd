//! The book's reference pages that restate the code are generated from it,
//! and a test fails when the committed page differs from what the code
//! generates now (as uv's `cargo dev generate-all` and its check do):
//!
//! - `docs/src/reference/cli.md`: every command's `--help`, as clap prints
//!   it from `src/cli.rs` (the real `hark`, so hidden commands stay hidden);
//! - `docs/src/reference/configuration.md`: the `Config` types' fields with
//!   their doc comments (read from the sources with syn) and their defaults
//!   (what the config loads to, serialized back);
//! - `docs/src/reference/environment.md`: every `HARK_*` constant of
//!   `crates/hark-core/src/env.rs` with its doc comment.
//!
//! `HARK_UPDATE_REFERENCE=1 cargo test -p hark --test it -- reference`
//! writes the pages anew.

mod config;
mod rust;

use std::path::Path;
use std::process::Command;

/// The variable that makes the tests write the pages instead of checking
/// them.
const UPDATE: &str = "HARK_UPDATE_REFERENCE";

/// The command that writes the pages anew.
const REGENERATE: &str = "HARK_UPDATE_REFERENCE=1 cargo test -p hark --test it -- reference";

/// The workspace's root (the `hark` package's own directory).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The line under each generated page's title.
fn generated_note(from: &str) -> String {
    format!(
        "<!-- Generated from {from} by tests/it/reference.rs; do not edit by hand. \
         Regenerate with `{REGENERATE}`. -->"
    )
}

/// Writes `page` to `path` under `HARK_UPDATE_REFERENCE=1`; otherwise
/// fails, saying how to regenerate it, when the committed page differs.
fn check_page(path: &str, page: &str) {
    let file = root().join(path);
    if std::env::var_os(UPDATE).is_some_and(|v| v == "1") {
        std::fs::write(&file, page).unwrap_or_else(|e| panic!("writing {path}: {e}"));
        return;
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    if committed != page {
        let first = committed
            .lines()
            .zip(page.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(page.lines().count()));
        panic!(
            "{path} differs from what the code generates (first at line {}: committed {:?}, generated {:?}).\n\
             Regenerate it with:\n    {REGENERATE}\nand commit the result.",
            first + 1,
            committed.lines().nth(first).unwrap_or("<end>"),
            page.lines().nth(first).unwrap_or("<end>"),
        );
    }
}

/// `hark ARGS --help` in an empty environment (clap shows an `env`
/// argument's current value), as clap prints it.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hark"))
        .args(args)
        .arg("--help")
        .env_clear()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "hark {args:?} --help: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help text lists (not clap's own `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("  ") && !line[2..].starts_with(' '))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The command line's page: `hark`'s help, then each command's, depth
/// first in clap's order.
fn cli_page() -> String {
    let mut page = format!(
        "# Command line\n\n{}\n\nEach command's `--help`, as `hark` prints it. \
         [Commands](commands.md) says how they fit together.\n",
        generated_note("`src/cli.rs` (clap)")
    );
    let mut todo = vec![Vec::<String>::new()];
    while let Some(path) = todo.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        let name = ["hark"].iter().copied().chain(args.iter().copied());
        let name = name.collect::<Vec<_>>().join(" ");
        page.push_str(&format!(
            "\n## {name}\n\n```text\n{}\n```\n",
            text.trim_end()
        ));
        for sub in subcommands(&text).into_iter().rev() {
            let mut next = path.clone();
            next.push(sub);
            todo.push(next);
        }
    }
    page
}

/// The environment's page: `env.rs`'s module doc, then a row a constant.
fn environment_page() -> String {
    let file = rust::parse("crates/hark-core/src/env.rs");
    let mut consts = Vec::new();
    for item in &file.items {
        if let syn::Item::Const(c) = item
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(value),
                ..
            }) = &*c.expr
        {
            consts.push((c.ident.to_string(), value.value(), rust::doc(&c.attrs)));
        }
    }
    let names: Vec<(String, String)> = consts
        .iter()
        .map(|(ident, value, _)| (ident.clone(), value.clone()))
        .collect();
    let mut page = format!(
        "# Environment variables\n\n{}\n\n{}\n\n| variable | meaning |\n| --- | --- |\n",
        generated_note("`crates/hark-core/src/env.rs`"),
        rust::links(&rust::doc(&file.attrs), &names)
    );
    for (_, value, doc) in &consts {
        let meaning = rust::cell(&rust::links(doc, &names));
        page.push_str(&format!("| `{value}` | {meaning} |\n"));
    }
    page
}

/// Every `"HARK_…"` string in the product code (not its tests), with the
/// file it is in.
fn hark_variables_named() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut dirs: Vec<_> = ["src", "crates", "app/src", "src-tauri/src"]
        .iter()
        .map(|d| root().join(d))
        .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() && name != "tests" && name != "target" {
                dirs.push(path);
            } else if name.ends_with(".rs") && name != "tests.rs" {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap();
                for (at, _) in code.match_indices("\"HARK_") {
                    let var: String = code[at + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                        .collect();
                    found.push((
                        var,
                        path.strip_prefix(root()).unwrap().display().to_string(),
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn every_hark_variable_the_code_names_is_in_env_rs() {
    let page = environment_page();
    let named = hark_variables_named();
    assert!(
        named.iter().any(|(var, _)| var == "HARK_SOCKET"),
        "the scan finds env.rs's own: {named:?}"
    );
    let missing: Vec<String> = named
        .iter()
        .filter(|(var, _)| !page.contains(&format!("| `{var}` |")))
        .map(|(var, file)| format!("{var} ({file})"))
        .collect();
    assert!(
        missing.is_empty(),
        "name these in crates/hark-core/src/env.rs, with a doc comment, and use the constant: {missing:?}"
    );
}

#[test]
fn the_cli_reference_is_what_clap_prints() {
    let page = cli_page();
    for command in ["## hark run", "## hark web pair", "## hark completions"] {
        assert!(page.contains(command), "{command} is missing:\n{page}");
    }
    assert!(
        !page.contains("## hark man") && !page.contains("## hark hook\n"),
        "hidden commands are listed"
    );
    check_page("docs/src/reference/cli.md", &page);
}

#[test]
fn the_environment_reference_is_what_env_rs_says() {
    let page = environment_page();
    for name in [
        "HARK_SOCKET",
        "HARK_HUB",
        "HARK_LOG_FORMAT",
        "HARK_CONFINED",
    ] {
        assert!(page.contains(&format!("| `{name}` |")), "{name} is missing");
    }
    check_page("docs/src/reference/environment.md", &page);
}

#[test]
fn the_configuration_reference_is_what_the_config_types_say() {
    let page = config::page();
    for key in [
        "| `ask_timeout_secs` | integer | `300` |",
        "`[web]`",
        "`listen`",
    ] {
        assert!(page.contains(key), "{key} is missing:\n{page}");
    }
    check_page("docs/src/reference/configuration.md", &page);
}

#[test]
fn the_subcommands_are_read_from_clap_s_help() {
    let help = "Usage: hark [COMMAND]\n\nCommands:\n  app     Start\n          more\n  web     The web\n  help    Print this\n\nOptions:\n  -h, --help\n";
    assert_eq!(subcommands(help), ["app", "web"]);
}
