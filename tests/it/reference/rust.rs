//! What the generators read of Rust sources: a file's syntax tree and the
//! doc comments in it, made into Markdown for a page or a table's cell.

use super::root;

/// `path`'s syntax tree.
pub fn parse(path: &str) -> syn::File {
    let text = std::fs::read_to_string(root().join(path))
        .unwrap_or_else(|e| panic!("reading {path}: {e}"));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {path}: {e}"))
}

/// The doc comment among `attrs` (`///` or `//!`), as its Markdown.
pub fn doc(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        if let syn::Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            let line = s.value();
            lines.push(line.strip_prefix(' ').unwrap_or(&line).to_owned());
        }
    }
    lines.join("\n").trim().to_owned()
}

/// `text` on one line, fit for a table's cell.
pub fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// `text` with rustdoc's intra-doc links made plain code: a link to one of
/// `names` (an identifier and its value) becomes that value.
pub fn links(text: &str, names: &[(String, String)]) -> String {
    let mut text = text.to_owned();
    for (ident, value) in names {
        text = text.replace(&format!("[`{ident}`]"), &format!("`{value}`"));
    }
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("[`") {
        let Some(len) = rest[start..].find("`]") else {
            break;
        };
        let end = start + len + 2;
        out.push_str(&rest[..start]);
        if rest[end..].starts_with('(') {
            out.push_str(&rest[start..end]);
        } else {
            out.push_str(&rest[start + 1..end - 1]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The value of `#[serde(KEY = "…")]` among `attrs`, or `Some("")` for a
/// bare `#[serde(KEY)]`.
pub fn serde(attrs: &[syn::Attribute], key: &str) -> Option<String> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(key) {
                found = Some(match meta.value() {
                    Ok(value) => value.parse::<syn::LitStr>()?.value(),
                    Err(_) => String::new(),
                });
            } else if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            }
            Ok(())
        });
    }
    found
}

/// A variant's name as `#[serde(rename_all = RULE)]` spells it.
pub fn rename(variant: &str, rule: Option<&str>) -> String {
    let words: Vec<String> = variant.chars().fold(Vec::<String>::new(), |mut words, c| {
        if c.is_uppercase() || words.is_empty() {
            words.push(String::new());
        }
        words.last_mut().unwrap().extend(c.to_lowercase());
        words
    });
    match rule {
        Some("kebab-case") => words.join("-"),
        Some("snake_case") => words.join("_"),
        Some("lowercase") => words.concat(),
        _ => variant.to_owned(),
    }
}

#[test]
fn intra_doc_links_become_code() {
    let names = [("SOCKET".to_owned(), "HARK_SOCKET".to_owned())];
    assert_eq!(
        links("wins over [`SOCKET`]; see [`Other`] and [`x`](y)", &names),
        "wins over `HARK_SOCKET`; see `Other` and [`x`](y)"
    );
    assert_eq!(rename("TitleOnly", Some("kebab-case")), "title-only");
    assert_eq!(rename("TitleOnly", Some("snake_case")), "title_only");
}
