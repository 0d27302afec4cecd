//! `awk` programs: [`read_only`] parses a program with awk-rs's parser
//! and walks every rule, function, statement and expression. A program is
//! read-only when it has no output redirection (`>`, `>>`, `|`), no
//! `getline` from a command or a file (gawk opens `/inet/…` names as
//! connections), no `system()`, calls only awk's own functions (less
//! `system`) and the ones it defines, and does not touch `ARGV`/`ARGC`
//! (which name the files read) or gawk's `SYMTAB`, `FUNCTAB`, `PROCINFO`.
//! gawk's `@load`, `@include`, indirect calls `@f()` and the coprocess `|&`
//! do not lex, so they are not read-only either; neither is anything the
//! parser rejects, or a program longer or deeper than a gate needs to read
//! (the parser recurses).

use std::collections::HashSet;

use awk_rs::ast::{Block, Expr, Pattern, Stmt};
use awk_rs::{Lexer, Parser};

/// Programs longer than this are not read.
const MAX_LENGTH: usize = 4096;

/// Nor those whose brackets nest deeper than this (the parser recurses a
/// dozen frames per level).
const MAX_DEPTH: usize = 32;

/// awk's functions (POSIX, and gawk's that neither write nor run), less
/// `system`.
const FUNCTIONS: &[&str] = &[
    "length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "sin", "cos", "atan2",
    "exp", "log", "sqrt", "int", "rand", "srand", "tolower", "toupper", "close", "fflush",
    "gensub", "strftime", "systime", "mktime", "asort", "asorti", "patsplit", "strtonum", "and",
    "or", "xor", "lshift", "rshift", "compl", "isarray", "typeof",
];

/// Variables that redirect what awk reads or reach other variables.
const SPECIAL: &[&str] = &["ARGV", "ARGC", "SYMTAB", "FUNCTAB", "PROCINFO"];

/// Whether `program` neither writes, nor runs a command, nor reads one.
pub fn read_only(program: &str) -> bool {
    if program.len() > MAX_LENGTH || depth(program) > MAX_DEPTH {
        return false;
    }
    let Ok(tokens) = Lexer::new(program).tokenize() else {
        return false;
    };
    let Ok(program) = Parser::new(tokens).parse() else {
        return false;
    };
    let defined: HashSet<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
    let walk = Walk { defined };
    let rules = program.rules.iter().all(|rule| {
        rule.pattern.as_ref().is_none_or(|p| walk.pattern(p))
            && rule.action.as_ref().is_none_or(|b| walk.block(b))
    });
    let functions = program.functions.iter().all(|f| {
        let name = f.name.as_str();
        !FUNCTIONS.contains(&name) && name != "system" && walk.block(&f.body)
    });
    rules && functions
}

/// How deep `(`, `[` and `{` nest, counted over every character (a
/// bracket in a string counts too; that only asks more).
fn depth(program: &str) -> usize {
    let mut depth = 0usize;
    let mut deepest = 0;
    for c in program.chars() {
        match c {
            '(' | '[' | '{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The functions the program defines, which it may call.
struct Walk<'p> {
    defined: HashSet<&'p str>,
}

impl Walk<'_> {
    fn pattern(&self, pattern: &Pattern) -> bool {
        match pattern {
            Pattern::Begin | Pattern::End | Pattern::BeginFile | Pattern::EndFile => true,
            Pattern::Regex(_) => true,
            Pattern::Expr(e) => self.expr(e),
            Pattern::Range { start, end } => self.pattern(start) && self.pattern(end),
            Pattern::And(a, b) | Pattern::Or(a, b) => self.pattern(a) && self.pattern(b),
            Pattern::Not(p) => self.pattern(p),
        }
    }

    fn block(&self, block: &Block) -> bool {
        block.statements.iter().all(|s| self.stmt(s))
    }

    fn stmt(&self, stmt: &Stmt) -> bool {
        let exprs = |es: &[Expr]| es.iter().all(|e| self.expr(e));
        let maybe = |e: &Option<Expr>| e.as_ref().is_none_or(|e| self.expr(e));
        match stmt {
            Stmt::Expr(e) => self.expr(e),
            Stmt::Print { args, output, .. } => output.is_none() && exprs(args),
            Stmt::Printf {
                format,
                args,
                output,
                ..
            } => output.is_none() && self.expr(format) && exprs(args),
            Stmt::If {
                condition,
                then_branch,
                else_branch,
                ..
            } => {
                self.expr(condition)
                    && self.stmt(then_branch)
                    && else_branch.as_ref().is_none_or(|s| self.stmt(s))
            }
            Stmt::While {
                condition, body, ..
            }
            | Stmt::DoWhile {
                body, condition, ..
            } => self.expr(condition) && self.stmt(body),
            Stmt::For {
                init,
                condition,
                update,
                body,
                ..
            } => {
                init.as_ref().is_none_or(|s| self.stmt(s))
                    && maybe(condition)
                    && maybe(update)
                    && self.stmt(body)
            }
            Stmt::ForIn {
                var, array, body, ..
            } => self.name(var) && self.name(array) && self.stmt(body),
            Stmt::Block(b) => self.block(b),
            Stmt::Break { .. }
            | Stmt::Continue { .. }
            | Stmt::Next { .. }
            | Stmt::Nextfile { .. }
            | Stmt::Empty => true,
            Stmt::Exit { code, .. } => maybe(code),
            Stmt::Return { value, .. } => maybe(value),
            Stmt::Delete { array, index, .. } => self.name(array) && exprs(index),
        }
    }

    fn expr(&self, expr: &Expr) -> bool {
        let exprs = |es: &[Expr]| es.iter().all(|e| self.expr(e));
        match expr {
            Expr::Number(..) | Expr::String(..) | Expr::Regex(..) => true,
            Expr::Var(name, _) => self.name(name),
            Expr::Field(e, _)
            | Expr::Unary { operand: e, .. }
            | Expr::PreIncrement(e, _)
            | Expr::PreDecrement(e, _)
            | Expr::PostIncrement(e, _)
            | Expr::PostDecrement(e, _)
            | Expr::Group(e, _) => self.expr(e),
            Expr::ArrayAccess { array, indices, .. } => self.name(array) && exprs(indices),
            Expr::Binary { left, right, .. }
            | Expr::Assign {
                target: left,
                value: right,
                ..
            }
            | Expr::Match {
                expr: left,
                pattern: right,
                ..
            } => self.expr(left) && self.expr(right),
            Expr::Ternary {
                condition,
                then_expr,
                else_expr,
                ..
            } => self.expr(condition) && self.expr(then_expr) && self.expr(else_expr),
            Expr::Call { name, args, .. } => {
                let known =
                    FUNCTIONS.contains(&name.as_str()) || self.defined.contains(name.as_str());
                known && name != "system" && exprs(args)
            }
            Expr::InArray { key, array, .. } => self.name(array) && exprs(key),
            // Only the next record of the input: `getline`, `getline v`.
            Expr::Getline { var, input, .. } => {
                input.is_none() && var.as_ref().is_none_or(|v| self.expr(v))
            }
        }
    }

    fn name(&self, name: &str) -> bool {
        !SPECIAL.contains(&name)
    }
}

#[cfg(test)]
mod tests {
    use super::read_only;

    #[test]
    fn reading_programs_are_read_only() {
        for program in [
            "{print $1}",
            "{ print $1, $NF }",
            "$3 > 100",
            "NR==1,NR==5",
            "/start/,/end/",
            "!seen[$0]++",
            "length > 72",
            "BEGIN { FS = \":\" } { print $1 }",
            "{ sum += $3 } END { print sum }",
            "{ printf \"%-10s %s\\n\", $1, $2 }",
            "{ n = split($0, a, \":\"); print a[1] }",
            "{ gsub(/a/, \"b\"); print }",
            "function f(a) { return a * 2 } { print f($1) }",
            "{ print (a > b) }",
            "{ getline; print }",
            "BEGIN { while ((getline line) > 0) n++; print n }",
            "{ print toupper(substr($0, 1, 3)) }",
            "END { print NR }",
        ] {
            assert!(read_only(program), "{program:?}");
        }
    }

    #[test]
    fn writing_and_running_programs_are_not() {
        for program in [
            "{print > \"x\"}",
            "{ print $1 >> \"x\" }",
            "{ print $1 > $2 }",
            "{ print | \"sh\" }",
            "{ printf \"%s\", $1 | \"cat\" }",
            "{ printf \"x\" > \"/dev/stderr\" }",
            "BEGIN{system(\"rm x\")}",
            "{ x = system(\"ls\") }",
            "{ \"date\" | getline d }",
            "{ cmd | getline }",
            "{ getline line < \"f\" }",
            "BEGIN { getline < \"/inet/tcp/0/host/80\" }",
            "@load \"filefuncs\"",
            "@include \"x.awk\"",
            "{ f = \"system\"; @f(\"rm x\") }",
            "{ print |& \"cmd\" }",
            "BEGIN { ARGV[1] = \"/inet/tcp/0/h/80\" }",
            "BEGIN { ARGC = 1 }",
            "BEGIN { SYMTAB[\"x\"] = 1 }",
            "{ unknown($1) }",
            "function system() { } { system() }",
            "func f() { system(\"x\") }",
            "{ if (x) /\"/ ; system(\"rm x\"); /\"/ }",
            "/[/]/ { system(\"x\") }",
            "{ print $1",
            "BEGIN { x = ((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))) }",
        ] {
            assert!(!read_only(program), "{program:?}");
        }
    }
}
