//! The Bash side of the write-mode gate: a command line parsed with
//! tree-sitter-bash and walked two ways. [`Script::simple_commands`] is
//! strict: it yields the literal words of every simple command only when
//! the whole line is built of constructs that cannot write by themselves
//! (lists, pipelines, groups, subshells, `!`, comments, redirections to
//! `/dev/null` or between descriptors, reads from a file, literal here
//! documents, `[ … ]` and `[[ … ]]` tests, and `<( … )`, whose commands
//! are yielded too); anything else — a command substitution, an expansion,
//! an assignment, `>( … )`, a function, a loop, `&`, a node it does not
//! know — yields nothing, and the gate asks. [`Script::all_commands`] is lenient: it finds every simple
//! command anywhere, nested ones too, for spotting external effects.

use tree_sitter::{Node, Parser, Tree};

/// A parsed Bash command line.
#[derive(Debug)]
pub struct Script<'a> {
    source: &'a str,
    tree: Tree,
}

/// Tokens that may join the statements of a read-only line (`&` may not:
/// a background job outlives the review).
const JOINERS: &[&str] = &["\n", ";", "&&", "||", "|", "|&", "(", ")", "{", "}", "!"];

/// Characters a bare word may not hold: brace expansion and `(`/`)` of an
/// extended glob make one word into others.
const EXPANDING: &[char] = &['{', '}', '(', ')'];

/// Glob characters: a word holding one unquoted becomes file names.
const GLOB: &[char] = &['*', '?', '['];

impl<'a> Script<'a> {
    /// Parses `source`; `None` when it is not well-formed Bash.
    pub fn parse(source: &'a str) -> Option<Script<'a>> {
        if !source.chars().all(parsable) {
            return None;
        }
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .ok()?;
        let tree = parser.parse(source, None)?;
        if tree.root_node().has_error() {
            return None;
        }
        Some(Script { source, tree })
    }

    /// The literal words of each simple command, when nothing else in the
    /// line can write; `None` otherwise (and for a line with no command).
    pub fn simple_commands(&self) -> Option<Vec<Vec<String>>> {
        let mut commands = Vec::new();
        self.statement(self.tree.root_node(), &mut commands)
            .then_some(commands)
            .filter(|c| !c.is_empty())
    }

    /// The words of every simple command anywhere in the line (literal
    /// where they are, as written where they are not).
    pub fn all_commands(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut stack = vec![self.tree.root_node()];
        while let Some(node) = stack.pop() {
            if node.kind() == "command" {
                let words = children(node)
                    .filter(|c| c.kind() == "command_name" || c.is_named() && is_word(c))
                    .map(|c| self.literal(c).unwrap_or_else(|| self.text(c).to_owned()))
                    .collect();
                out.push(words);
            }
            stack.extend(children(node));
        }
        out
    }

    fn statement(&self, node: Node, out: &mut Vec<Vec<String>>) -> bool {
        match node.kind() {
            "program"
            | "list"
            | "pipeline"
            | "compound_statement"
            | "subshell"
            | "negated_command"
            | "redirected_statement" => self.sequence(children(node), out),
            "command" => self.command(node, out),
            "test_command" => self.test_command(node, out),
            "comment" => true,
            _ => false,
        }
    }

    /// Statements, redirections and the tokens that join them.
    fn sequence<'t>(
        &self,
        parts: impl Iterator<Item = Node<'t>>,
        out: &mut Vec<Vec<String>>,
    ) -> bool {
        let mut parts = parts;
        parts.all(|c| {
            if !c.is_named() {
                JOINERS.contains(&c.kind())
            } else if is_redirect(&c) {
                self.redirect(c, out)
            } else {
                self.statement(c, out)
            }
        })
    }

    fn command(&self, node: Node, out: &mut Vec<Vec<String>>) -> bool {
        let mut words = Vec::new();
        for child in children(node) {
            let ok = match child.kind() {
                "command_name" => {
                    let name = child.named_child(0).and_then(|n| self.literal(n));
                    name.filter(|n| !n.is_empty() && !n.contains('/'))
                        .map(|n| words.push(n))
                        .is_some()
                }
                _ if is_redirect(&child) => self.redirect(child, out),
                _ if child.is_named() => self.word(child, out).map(|w| words.push(w)).is_some(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        out.push(words);
        true
    }

    /// A command's argument: a literal word, or a process substitution
    /// that only reads (`<( … )` of statements that pass here too), which
    /// the command sees as a `/dev/fd/N` path. `>( … )` takes what the
    /// command writes: never read-only.
    fn word(&self, node: Node, out: &mut Vec<Vec<String>>) -> Option<String> {
        if node.kind() != "process_substitution" {
            return self.literal(node);
        }
        let mut parts = children(node);
        let reads = parts.next().is_some_and(|open| open.kind() == "<(");
        (reads && self.sequence(parts, out)).then(|| "/dev/fd/63".to_owned())
    }

    /// `[ … ]` or `[[ … ]]` as the words of a simple command named `[` or
    /// `[[` (its operators and literal operands in order, the closing
    /// bracket last), for the `test` rules to judge. `[` is a command to
    /// bash, so a token tree-sitter reads as an operator there but bash as
    /// syntax (`<`, `>`, `(`, `&&`: `[ a > b ]` writes `b`) is refused.
    fn test_command(&self, node: Node, out: &mut Vec<Vec<String>>) -> bool {
        let single = node.child(0).is_some_and(|open| open.kind() == "[");
        let mut words = Vec::new();
        let ok = self.test_words(node, single, &mut words);
        out.push(words);
        ok
    }

    fn test_words(&self, node: Node, single: bool, words: &mut Vec<String>) -> bool {
        children(node).all(|c| {
            let word = match c.kind() {
                "unary_expression" | "binary_expression" => {
                    return self.test_words(c, single, words);
                }
                "parenthesized_expression" => return !single && self.test_words(c, single, words),
                "test_operator" => Some(self.text(c).to_owned()),
                "extglob_pattern" => bare_word(self.text(c)),
                "regex" if c.named_child_count() == 0 => Some(self.text(c).to_owned()),
                "[" | "]" | "[[" | "]]" | "!" | "=" | "==" | "!=" => Some(c.kind().to_owned()),
                "(" | ")" | "&&" | "||" | "<" | ">" | "=~" if !single => Some(c.kind().to_owned()),
                _ if c.is_named() => self.literal(c),
                _ => None,
            };
            word.map(|w| words.push(w)).is_some()
        })
    }

    /// Whether a redirection cannot write: `>/dev/null` (and `2>`, `&>`,
    /// `>>`), a descriptor duplicated onto another (`2>&1`), a file (or a
    /// read-only `<( … )`) read with `<`, a literal here-string or
    /// here-document.
    fn redirect(&self, node: Node, out: &mut Vec<Vec<String>>) -> bool {
        let operator = children(node).find(|c| !c.is_named()).map(|c| c.kind());
        // Exactly one target: words the grammar hangs after it are the
        // command's arguments to bash, and must not slip past the rules.
        let mut targets = children(node).filter(|c| c.is_named() && c.kind() != "file_descriptor");
        let target = targets.next().and_then(|t| match operator {
            Some("<") => self.word(t, out),
            _ => self.literal(t),
        });
        let target = target.filter(|_| targets.next().is_none());
        match node.kind() {
            "file_redirect" => match (operator, target.as_deref()) {
                (Some("<"), Some(_)) => true,
                (Some(">" | ">>" | "&>" | "&>>"), Some("/dev/null")) => true,
                (Some(">&" | "<&"), Some(fd)) => {
                    !fd.is_empty() && fd.bytes().all(|b| b.is_ascii_digit())
                }
                _ => false,
            },
            "herestring_redirect" => {
                let mut words = children(node).filter(|c| c.is_named());
                words.next().is_some_and(|w| self.literal(w).is_some()) && words.next().is_none()
            }
            "heredoc_redirect" => children(node).filter(|c| c.is_named()).all(|c| {
                matches!(c.kind(), "heredoc_start" | "heredoc_end")
                    || c.kind() == "heredoc_body" && c.named_child_count() == 0
            }),
            _ => false,
        }
    }

    /// A word's value when it is literal: no expansion, substitution,
    /// brace expansion, or glob that could expand into a flag.
    fn literal(&self, node: Node) -> Option<String> {
        let text = self.text(node);
        match node.kind() {
            "word" => bare_word(text),
            "number" if node.named_child_count() == 0 => Some(text.to_owned()),
            "raw_string" => text
                .strip_prefix('\'')?
                .strip_suffix('\'')
                .map(str::to_owned),
            "string" => {
                let only_text = children(node)
                    .filter(|c| c.is_named())
                    .all(|c| c.kind() == "string_content");
                only_text.then(|| quoted(text.strip_prefix('"')?.strip_suffix('"')?))?
            }
            "concatenation" => {
                let parts: Option<Vec<String>> = children(node)
                    .map(|c| c.is_named().then(|| self.literal(c)).flatten())
                    .collect();
                let joined = parts?.concat();
                // A glob in one part may expand into a flag whatever the
                // other parts hold, unless the first part pins the start.
                let first_bare = node.named_child(0).is_some_and(|c| c.kind() == "word");
                (first_bare || !joined.starts_with('-')).then_some(joined)
            }
            _ => None,
        }
    }

    fn text(&self, node: Node) -> &'a str {
        self.source.get(node.byte_range()).unwrap_or_default()
    }
}

/// Whether the parser may be given `c`. tree-sitter-bash 0.25.1's scanner
/// (C) crashes the process on some characters beyond the Basic
/// Multilingual Plane (`{` then U+41E20 is one); a NUL ends C strings.
fn parsable(c: char) -> bool {
    c != '\0' && u32::from(c) <= 0xFFFF
}

/// The children of `node`, named and anonymous.
fn children(node: Node) -> impl Iterator<Item = Node> {
    (0..node.child_count()).filter_map(move |i| node.child(i))
}

fn is_redirect(node: &Node) -> bool {
    node.kind().ends_with("_redirect")
}

fn is_word(node: &Node) -> bool {
    !is_redirect(node) && node.kind() != "variable_assignment"
}

/// An unquoted word's value, backslashes removed; `None` when it would
/// expand: brace expansion, an extended glob, or a glob whose literal start
/// does not rule out a flag (`*` may match a file named `-o`; `src/*` cannot).
fn bare_word(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    let mut glob = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(escaped) => out.push(escaped),
            },
            '$' | '`' => return None,
            c if EXPANDING.contains(&c) => return None,
            c if GLOB.contains(&c) => {
                if !glob && (out.is_empty() || out.starts_with('-')) {
                    return None;
                }
                glob = true;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// The value of a double-quoted string's inside that holds no expansion.
fn quoted(inside: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = inside.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('"' | '\\' | '$' | '`')) => out.push(e),
                Some('\n') => {}
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            '$' | '`' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}
