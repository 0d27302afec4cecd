//! The configuration page: `config.rs`'s module doc, then a table per TOML
//! table of the config, from the `Config` types: each field's key, its
//! type (an enum's values), its default and its doc comment. The defaults
//! are what hark loads: a config with every table present and nothing set,
//! serialized back.

use std::collections::{BTreeMap, VecDeque};

use hark_core::config::Config;
use hark_core::gate::commands::CommandRule;

use super::{generated_note, rust};

/// The sources the `Config` types are in.
const SOURCES: [&str; 5] = [
    "crates/hark-core/src/config.rs",
    "crates/hark-core/src/gate/policy.rs",
    "crates/hark-core/src/gate/commands.rs",
    "crates/hark-core/src/gate/operands.rs",
    "crates/hark-core/src/agent/mod.rs",
];

/// A config with every optional table present and nothing set: loaded,
/// its tables hold their defaults.
const EVERY_TABLE: &str = "[web]\n[push]\nntfy = {}\n[hub]\n";

/// A type of the config, as its source declares it.
enum Decl {
    Struct(syn::ItemStruct),
    Enum(syn::ItemEnum),
}

/// Every struct and enum the sources declare, by name.
fn declarations() -> BTreeMap<String, Decl> {
    let mut found = BTreeMap::new();
    for path in SOURCES {
        for item in rust::parse(path).items {
            match item {
                syn::Item::Struct(s) => {
                    found.insert(s.ident.to_string(), Decl::Struct(s));
                }
                syn::Item::Enum(e) => {
                    found.insert(e.ident.to_string(), Decl::Enum(e));
                }
                _ => {}
            }
        }
    }
    found
}

/// What a field's type is to someone writing TOML.
enum Kind {
    /// A value: its description, and the enum it is, if one.
    Value(String, Option<String>),
    /// A table (`[name]`) of this struct.
    Table(String),
    /// An array of tables (`[[name]]`) of this struct.
    Tables(String),
}

/// The last segment of a type's path, and its first generic argument.
fn segment(ty: &syn::Type) -> Option<(String, Option<&syn::Type>)> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    let arg = match &last.arguments {
        syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        }),
        _ => None,
    };
    Some((last.ident.to_string(), arg))
}

/// `ty` as a [`Kind`]; `Option`'s are what they hold.
fn kind(ty: &syn::Type, decls: &BTreeMap<String, Decl>) -> Kind {
    let (name, arg) = segment(ty).unwrap_or_else(|| panic!("an unexpected type in the config"));
    let plain = |text: &str| Kind::Value(text.to_owned(), None);
    match (name.as_str(), arg) {
        ("Option", Some(inner)) => kind(inner, decls),
        ("Vec", Some(inner)) => match kind(inner, decls) {
            Kind::Table(name) => Kind::Tables(name),
            Kind::Value(text, _) => plain(&format!("list of {text}s")),
            Kind::Tables(_) => panic!("an array of arrays of tables in the config"),
        },
        ("u64" | "u32" | "usize", _) => plain("integer"),
        ("bool", _) => plain("boolean"),
        ("String", _) => plain("string"),
        ("PathBuf", _) => plain("path"),
        ("SocketAddr", _) => plain("`host:port`"),
        // Parsed when the config loads (config/urls.rs).
        ("HttpUrl", _) => plain("`http(s)://` URL"),
        ("WebOrigin", _) => plain("origin (`scheme://host[:port]`)"),
        ("HubUrls", _) => plain("NATS URL(s), comma-separated"),
        (other, _) => match decls.get(other) {
            Some(Decl::Struct(_)) => Kind::Table(other.to_owned()),
            Some(Decl::Enum(e)) => {
                let rule = rust::serde(&e.attrs, "rename_all");
                let values: Vec<String> = e
                    .variants
                    .iter()
                    .map(|v| {
                        format!(
                            "`\"{}\"`",
                            rust::rename(&v.ident.to_string(), rule.as_deref())
                        )
                    })
                    .collect();
                Kind::Value(values.join(" \\| "), Some(other.to_owned()))
            }
            None => panic!("the config's type {other} is not declared in {SOURCES:?}"),
        },
    }
}

/// An enum's values with their doc comments: "`"a"`: …; `"b"`: …".
fn values(decl: &syn::ItemEnum) -> String {
    let rule = rust::serde(&decl.attrs, "rename_all");
    decl.variants
        .iter()
        .map(|v| {
            let name = rust::rename(&v.ident.to_string(), rule.as_deref());
            format!("`\"{name}\"`: {}", rust::doc(&v.attrs))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One TOML table to document: its heading, its struct, its defaults.
struct Section {
    heading: String,
    anchor: String,
    name: String,
    defaults: Option<toml::Table>,
}

impl Section {
    fn new(toml_name: &str, name: &str, defaults: Option<toml::Table>) -> Section {
        let heading = format!("`{toml_name}`");
        let anchor = toml_name
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        Section {
            heading,
            anchor,
            name: name.to_owned(),
            defaults,
        }
    }
}

/// The defaults of an array's tables, which no config holds until written.
fn array_defaults(name: &str) -> Option<toml::Table> {
    (name == "CommandRule").then(|| {
        let rule: CommandRule = toml::from_str("command = \"\"").unwrap();
        toml::Table::try_from(rule).unwrap()
    })
}

/// One field's row, and the section it opens, if a table.
fn row(
    field: &syn::Field,
    section: &Section,
    container_default: bool,
    decls: &BTreeMap<String, Decl>,
) -> (String, Option<Section>) {
    let key = field.ident.as_ref().unwrap().to_string();
    let mut meaning = rust::doc(&field.attrs);
    let optional = segment(&field.ty).is_some_and(|(name, _)| name == "Option");
    let defaulted = container_default || rust::serde(&field.attrs, "default").is_some();
    let prefix = match section.name.as_str() {
        "Config" => String::new(),
        _ => format!("{}.", section.heading.trim_matches(['`', '[', ']'])),
    };
    let (ty, opens) = match kind(&field.ty, decls) {
        Kind::Value(text, enumeration) => {
            if let Some(Decl::Enum(e)) = enumeration.and_then(|name| decls.get(&name)) {
                meaning = format!("{meaning} {}", values(e));
            }
            (text, None)
        }
        Kind::Table(name) => {
            let defaults = section
                .defaults
                .as_ref()
                .and_then(|d| d.get(&key))
                .and_then(|v| v.as_table().cloned());
            let opens = Section::new(&format!("[{prefix}{key}]"), &name, defaults);
            (
                format!("table: [{}](#{})", opens.heading, opens.anchor),
                Some(opens),
            )
        }
        Kind::Tables(name) => {
            let opens = Section::new(&format!("[[{prefix}{key}]]"), &name, array_defaults(&name));
            let ty = format!("array of tables: [{}](#{})", opens.heading, opens.anchor);
            (ty, Some(opens))
        }
    };
    let value = section.defaults.as_ref().and_then(|d| d.get(&key));
    let default = match value {
        _ if opens.is_some() && optional => "absent: off".to_owned(),
        _ if !defaulted && !optional => "required".to_owned(),
        _ if opens.is_some() => "—".to_owned(),
        Some(value) => format!("`{value}`"),
        None if optional => "none".to_owned(),
        None => "—".to_owned(),
    };
    let line = format!(
        "| `{key}` | {ty} | {} | {} |\n",
        rust::cell(&default),
        rust::cell(&meaning)
    );
    (line, opens)
}

/// The configuration page.
pub fn page() -> String {
    let decls = declarations();
    let loaded: Config = toml::from_str(EVERY_TABLE).expect("a config of empty tables loads");
    let defaults = toml::Table::try_from(loaded).unwrap();
    let intro = rust::doc(&rust::parse(SOURCES[0]).attrs);
    let mut page = format!(
        "# Configuration\n\n{}\n\n{intro}\n",
        generated_note("the `Config` types in `crates/hark-core/src/config.rs`")
    );
    let mut top = Section::new("top level", "Config", Some(defaults));
    top.heading = "The top level".to_owned();
    let mut todo = VecDeque::from([top]);
    while let Some(section) = todo.pop_front() {
        let Some(Decl::Struct(decl)) = decls.get(&section.name) else {
            panic!("{} is not a struct", section.name);
        };
        // A struct read through another (`#[serde(try_from = "Lists")]`)
        // takes that one's defaults.
        let read_as = rust::serde(&decl.attrs, "try_from").and_then(|name| decls.get(&name));
        let read_as = match read_as {
            Some(Decl::Struct(other)) => other,
            _ => decl,
        };
        let container_default = rust::serde(&read_as.attrs, "default").is_some();
        page.push_str(&format!("\n## {}\n\n", section.heading));
        let doc = rust::doc(&decl.attrs);
        if !doc.is_empty() {
            page.push_str(&format!("{doc}\n\n"));
        }
        page.push_str("| key | type | default | meaning |\n| --- | --- | --- | --- |\n");
        let mut nested = Vec::new();
        for field in &decl.fields {
            let (line, opens) = row(field, &section, container_default, &decls);
            page.push_str(&line);
            nested.extend(opens);
        }
        // A table's own tables follow it, before its siblings.
        for opens in nested.into_iter().rev() {
            todo.push_front(opens);
        }
    }
    page
}
