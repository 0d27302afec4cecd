//! The docs hold together: every relative link and image in the README,
//! `BENCHMARKS.md`, `CONTRIBUTING.md` and the book (`docs/src/**/*.md`)
//! names a file that exists, and its `#anchor` a heading of that file (the
//! slug mdBook and GitHub give it: lowercased, spaces as `-`, punctuation
//! dropped); and the README and `BENCHMARKS.md` stay short enough to read.
//! The book itself is built by `scripts/test` (`mdbook build docs`).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The longest the README may grow: what hark is, how to install and start
/// it, and links; the rest is the book's.
const MAX_README_LINES: usize = 300;

/// The longest `BENCHMARKS.md` may grow: the method, the targets and the
/// current figures; the dated runs are `bench/results/`'s.
const MAX_BENCHMARKS_LINES: usize = 150;

/// The workspace's root (the `hark` package's own directory).
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files whose links are checked: the three at the root and the book.
fn documents() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["README.md", "BENCHMARKS.md", "CONTRIBUTING.md"]
        .iter()
        .map(|name| root().join(name))
        .collect();
    let mut dirs = vec![root().join("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A heading's anchor as mdBook and GitHub make it.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Markdown's options as GitHub and mdBook read these files.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES
}

/// Every anchor a Markdown file's headings give (a repeated heading's
/// second anchor ends in `-1`, its third in `-2`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let mut anchor = base.clone();
                let mut n = 1;
                while !anchors.insert(anchor.clone()) {
                    anchor = format!("{base}-{n}");
                    n += 1;
                }
            }
            _ => {}
        }
    }
    anchors
}

/// Every link and image target in a Markdown file, with the line it is on:
/// Markdown's own, and `src="…"` in its HTML.
fn targets(text: &str) -> Vec<(usize, String)> {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                found.push((line_of(range.start), dest_url.to_string()));
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                for part in html.split("src=\"").skip(1) {
                    if let Some((src, _)) = part.split_once('"') {
                        found.push((line_of(range.start), src.to_owned()));
                    }
                }
            }
            _ => {}
        }
    }
    found
}

/// `path` with its `.` and `..` resolved, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What is wrong with one link of `file`, if anything.
fn broken(file: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let dest = if path.is_empty() {
        file.to_path_buf()
    } else {
        normalize(&file.parent().unwrap().join(path))
    };
    if !dest.starts_with(root()) {
        return Some(format!("{} is outside the repository", dest.display()));
    }
    if !dest.exists() {
        return Some(format!("{} does not exist", dest.display()));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if dest.extension().is_none_or(|ext| ext != "md") {
        return Some(format!(
            "#{anchor} points into {}, which has no headings",
            dest.display()
        ));
    }
    let text = std::fs::read_to_string(&dest).unwrap();
    (!anchors(&text).contains(anchor)).then(|| {
        format!(
            "{} has no heading whose anchor is #{anchor}",
            dest.display()
        )
    })
}

#[test]
fn every_relative_link_names_a_file_and_a_heading_that_exist() {
    let files = documents();
    assert!(
        files.iter().any(|f| f.ends_with("docs/src/SUMMARY.md")),
        "the book's docs/src/SUMMARY.md is missing"
    );
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, target) in targets(&text) {
            checked += 1;
            if let Some(problem) = broken(file, &target) {
                let shown = file.strip_prefix(root()).unwrap_or(file).display();
                problems.push(format!("{shown}:{line}: ({target}) {problem}"));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} links were found: is the parser reading the files?"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_readme_and_the_benchmarks_stay_short() {
    for (name, max) in [
        ("README.md", MAX_README_LINES),
        ("BENCHMARKS.md", MAX_BENCHMARKS_LINES),
    ] {
        let lines = std::fs::read_to_string(root().join(name))
            .unwrap()
            .lines()
            .count();
        assert!(
            lines <= max,
            "{name} has {lines} lines; at most {max} (move the rest into the book, or bench/results/)"
        );
    }
}

#[test]
fn the_slugs_follow_mdbook_and_github() {
    assert_eq!(slug("The Windows installer"), "the-windows-installer");
    assert_eq!(
        slug("Agents on another host: hark ssh"),
        "agents-on-another-host-hark-ssh"
    );
    assert_eq!(
        slug("2026-12-04: after 1,000 asks (8eee760, 242d1f9)"),
        "2026-12-04-after-1000-asks-8eee760-242d1f9"
    );
    let text = "# A\n\n## `code` heading\n\n## A\n";
    let found = anchors(text);
    assert!(
        found.contains("a") && found.contains("a-1") && found.contains("code-heading"),
        "{found:?}"
    );
}
