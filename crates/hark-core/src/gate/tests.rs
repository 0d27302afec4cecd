//! The gate's Bash corpus (`corpus.txt`): every case is classified and
//! every mismatch is reported at once, with its line number.

use serde_json::{Value, json};

use super::policy::{Class, Policy};

/// A case's expected class, as the corpus spells it.
fn expected(class: &Class) -> &'static str {
    match class {
        Class::ReadOnly => "read-only",
        Class::Write(a) if a.external => "external",
        Class::Write(_) => "ask",
    }
}

/// One corpus case: its line number, the class it must get, the command.
struct Case {
    line: usize,
    want: &'static str,
    command: String,
}

fn corpus() -> Vec<Case> {
    let mut cases = Vec::new();
    for (n, line) in include_str!("corpus.txt").lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (want, command) = line.split_once(' ').unwrap_or((line, ""));
        let want = ["read-only", "ask", "external"]
            .into_iter()
            .find(|c| *c == want)
            .unwrap_or_else(|| panic!("corpus.txt:{}: unknown class {want:?}", n + 1));
        let command = command.replace('⏎', "\n");
        cases.push(Case {
            line: n + 1,
            want,
            command,
        });
    }
    cases
}

#[test]
fn the_corpus_is_classified_as_written() {
    let policy = Policy::default();
    let cases = corpus();
    let mut wrong = Vec::new();
    for Case {
        line,
        want,
        command,
    } in &cases
    {
        let got = expected(&policy.classify("Bash", &json!({ "command": command })));
        if got != *want {
            wrong.push(format!(
                "corpus.txt:{line}: {command:?}: want {want}, got {got}"
            ));
        }
    }
    let cases = cases.len();
    assert!(cases > 600, "the corpus has {cases} cases");
    assert!(
        wrong.is_empty(),
        "{} of {cases} cases are wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The figure docs/src/security/write-gate.md gives: the share of the corpus's read-only lines that
/// pass unasked, and of the lines that must ask (writes, external effects,
/// lines the gate cannot read) that ask; a failure says both (the core
/// prints nothing).
#[test]
fn corpus_figures() {
    let policy = Policy::default();
    let (mut read_only, mut passed, mut asking, mut asked) = (0, 0, 0, 0);
    for case in corpus() {
        let class = policy.classify("Bash", &json!({ "command": case.command }));
        if case.want == "read-only" {
            read_only += 1;
            passed += usize::from(class == Class::ReadOnly);
        } else {
            asking += 1;
            asked += usize::from(class != Class::ReadOnly);
        }
    }
    assert_eq!(
        (passed, asked),
        (read_only, asking),
        "read-only lines passed unasked: {passed} of {read_only}; lines that must ask, asked: {asked} of {asking}"
    );
}

fn bash(policy: &Policy, command: &str) -> Class {
    policy.classify("Bash", &json!({ "command": command }))
}

#[test]
fn a_background_command_asks() {
    let policy = Policy::default();
    let input = |background: Value| json!({"command": "ls", "run_in_background": background});
    let class = |input: Value| policy.classify("Bash", &input);
    assert_eq!(class(input(json!(false))), Class::ReadOnly);
    assert_eq!(
        class(json!({"command": "ls", "description": "list", "timeout": 5})),
        Class::ReadOnly
    );
    for background in [json!(true), json!("true"), json!(1)] {
        assert!(
            matches!(class(input(background.clone())), Class::Write(_)),
            "{background}"
        );
    }
}

#[test]
fn a_command_outside_the_sandbox_asks_whatever_it_is() {
    let policy = Policy::default();
    let class = |flag: Value| {
        policy.classify(
            "Bash",
            &json!({"command": "git status", "dangerouslyDisableSandbox": flag}),
        )
    };
    assert_eq!(class(json!(false)), Class::ReadOnly);
    assert_eq!(class(Value::Null), Class::ReadOnly);
    for flag in [json!(true), json!("yes"), json!(1)] {
        let Class::Write(approval) = class(flag.clone()) else {
            panic!("{flag}: an unsandboxed command passed unasked")
        };
        assert_eq!(approval.target, "git status");
        assert!(
            approval.preview.contains("outside the sandbox"),
            "{}",
            approval.preview
        );
    }
}

mod properties {
    use proptest::prelude::*;
    use proptest::sample::select;

    use super::*;

    /// Shell-ish tokens: names on and off the allowlist, flags safe and
    /// not, operands, quotes, expansions, operators.
    const TOKENS: &[&str] = &[
        "ls",
        "cat",
        "sort",
        "git",
        "log",
        "diff",
        "branch",
        "find",
        "rg",
        "uniq",
        "echo",
        "rm",
        "hark",
        "sh",
        "-c",
        "-o",
        "-n",
        "-la",
        "--output=F",
        "-delete",
        "-name",
        "x",
        "F",
        "'a b'",
        "\"q\"",
        "$X",
        "$(rm x)",
        "`id`",
        "<(ls)",
        ">",
        ">>",
        "2>&1",
        "/dev/null",
        "|",
        "&&",
        "||",
        ";",
        "&",
        "(",
        ")",
        "{",
        "}",
        "\\",
        "#",
        "'",
        "\"",
        "\n",
        "*",
        "=",
    ];

    /// A simple command from the allowlist's neighbourhood.
    const SEGMENT_WORDS: &[&str] = &[
        "-n",
        "-o",
        "-u",
        "-c",
        "-5",
        "--stat",
        "--output=F",
        "-delete",
        "-name",
        "x",
        "F",
        "src",
        "'q'",
        "\"d\"",
        "HEAD",
        "-la",
        "<(ls)",
        ">(ls)",
        "'p'",
        "'w F'",
        "'{print}'",
        "'{print > F}'",
        "-e",
        "-i",
        "+%s",
        "A=1",
        "--get",
        "-f",
    ];
    const SEGMENT_NAMES: &[&str] = &[
        "ls",
        "cat",
        "sort",
        "uniq",
        "head",
        "git log",
        "git diff",
        "git branch",
        "find .",
        "rg",
        "echo",
        "tree",
        "rm",
        "cp",
        "hark",
        "sed",
        "awk",
        "jq",
        "date",
        "env",
        "test",
        "git grep",
        "git config",
    ];

    fn segment() -> impl Strategy<Value = String> {
        (
            select(SEGMENT_NAMES),
            prop::collection::vec(select(SEGMENT_WORDS), 0..4),
        )
            .prop_map(|(name, words)| format!("{name} {}", words.join(" ")))
    }

    /// sed commands that only print, and ones that write or run.
    const SED_READS: &[&str] = &[
        "p",
        "1,10p",
        "$p",
        "/x/d",
        "s/a/b/g",
        "s|a|b|2",
        "y/ab/xy/",
        "/x/!d",
        "/a/,/b/{p;}",
        "=",
        ":a",
        "ba",
        "l",
        "n",
        "G",
        "h",
        "x",
        "# c",
    ];
    const SED_WRITES: &[&str] = &[
        "w F",
        "1w F",
        "W F",
        "s/a/b/w F",
        "s/a/b/gw F",
        "s/a/b/e",
        "e",
        "e rm x",
    ];

    /// awk statements that only print or compute, and ones that write or run.
    const AWK_READS: &[&str] = &[
        "print $1",
        "n++",
        "x = $2",
        "if ($1 > 2) print",
        "printf \"%s\", $1",
        "sum += $3",
        "getline",
        "a[$1]++",
        "print length($0)",
        "next",
    ];
    const AWK_WRITES: &[&str] = &[
        "print > \"F\"",
        "print $1 >> \"F\"",
        "print | \"sh\"",
        "system(\"rm x\")",
        "\"date\" | getline d",
        "getline d < \"F\"",
        "printf \"x\" > \"F\"",
        "x = system(\"ls\")",
    ];

    fn soup() -> impl Strategy<Value = String> {
        prop::collection::vec(select(TOKENS), 0..12).prop_map(|t| t.join(" "))
    }

    fn read_only(class: &Class) -> bool {
        *class == Class::ReadOnly
    }

    // proptest's default of 256 cases each; PROPTEST_CASES sets more.
    proptest! {
        /// Any text at all is classified without a panic.
        #[test]
        fn any_text_is_classified(text in prop::collection::vec(any::<char>(), 0..64)) {
            let text: String = text.into_iter().collect();
            bash(&Policy::default(), &text);
        }

        /// A line passes unasked exactly when each of its commands would:
        /// one command that asks makes the whole line ask, joined by any
        /// of `|`, `&&`, `||`, `;` or a newline.
        #[test]
        fn a_line_is_read_only_only_when_every_command_is(
            segments in prop::collection::vec(segment(), 1..4),
            joiner in select(&[" | ", " && ", " || ", "; ", "\n"][..]),
        ) {
            let policy = Policy::default();
            let each = segments.iter().all(|s| read_only(&bash(&policy, s)));
            let line = segments.join(joiner);
            prop_assert_eq!(read_only(&bash(&policy, &line)), each, "{:?}", line);
        }

        /// Whatever comes first, a write after it is never read-only: a
        /// command run before (`rm x; …`) or in front of a pipe.
        #[test]
        fn a_write_in_front_always_asks(rest in soup()) {
            let policy = Policy::default();
            for line in [format!("rm x; {rest}"), format!("rm x | {rest}"), format!("hark approve 1 && {rest}")] {
                prop_assert!(!read_only(&bash(&policy, &line)), "{:?}", line);
            }
        }

        /// A sed script of commands that only print passes unasked; one
        /// writing or running command anywhere in it makes the line ask.
        #[test]
        fn a_sed_script_asks_exactly_when_it_writes(
            before in prop::collection::vec(select(SED_READS), 0..4),
            write in prop::option::of(select(SED_WRITES)),
            after in prop::collection::vec(select(SED_READS), 0..4),
            joiner in select(&["; ", "\n"][..]),
        ) {
            let policy = Policy::default();
            let writes = write.is_some();
            let script: Vec<&str> = before.into_iter().chain(write).chain(after).collect();
            // A write's file name runs to the end of the line.
            let script = script.join(if writes { "\n" } else { joiner });
            let line = format!("sed -n '{script}' f");
            prop_assert_eq!(read_only(&bash(&policy, &line)), !writes, "{:?}", line);
        }

        /// Likewise an awk program: statements that only print or compute
        /// pass; one that writes, runs or reads a command makes it ask.
        #[test]
        fn an_awk_program_asks_exactly_when_it_writes(
            before in prop::collection::vec(select(AWK_READS), 0..4),
            write in prop::option::of(select(AWK_WRITES)),
            after in prop::collection::vec(select(AWK_READS), 0..4),
            rules in any::<bool>(),
        ) {
            let policy = Policy::default();
            let writes = write.is_some();
            let statements: Vec<&str> = before.into_iter().chain(write).chain(after).collect();
            let program = if rules {
                statements.iter().map(|s| format!("{{ {s} }}")).collect::<Vec<_>>().join("\n")
            } else {
                format!("{{ {} }}", statements.join("; "))
            };
            let line = format!("awk '{program}' f");
            prop_assert_eq!(read_only(&bash(&policy, &line)), !writes, "{:?}", line);
        }

        /// Appending a write to a line of allowlisted commands never
        /// leaves it read-only.
        #[test]
        fn a_write_after_always_asks(
            segments in prop::collection::vec(segment(), 1..3),
            write in select(&["; rm x", " > F", " >> F", " | tee F", " && sort -o F x", " $(rm x)", " &"][..]),
        ) {
            let policy = Policy::default();
            let line = format!("{}{write}", segments.join(" | "));
            prop_assert!(!read_only(&bash(&policy, &line)), "{:?}", line);
        }
    }
}
