//! The terminal prompter (`hark serve --prompter terminal`), for operators on
//! SSH: one item at a time, numbered options, Enter takes the default, free
//! text allowed, `s` skips.

use std::io::Write;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{Mutex, mpsc};

use hark_core::model::attribution::Attribution;
use hark_core::model::ids::SessionId;
use hark_core::model::item::{Item, Surface};
use hark_core::model::resolve::{Pick, Picks};
use hark_core::model::schema::Question;
use hark_core::prompter::{OperatorPrompter, PromptFuture, Unanswered};
use hark_core::text::visible;

/// Asks on this process's terminal (stdin/stdout).
#[derive(Debug, Clone)]
pub struct TerminalPrompter {
    /// Lines typed by the operator. Holding the lock is holding the terminal,
    /// so concurrent items queue instead of interleaving.
    lines: Arc<Mutex<mpsc::Receiver<String>>>,
}

impl Default for TerminalPrompter {
    fn default() -> Self {
        TerminalPrompter::new()
    }
}

impl TerminalPrompter {
    /// Starts reading stdin on the current runtime.
    pub fn new() -> TerminalPrompter {
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            let mut lines = BufReader::new(tokio::io::stdin()).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).await.is_err() {
                    break;
                }
            }
        });
        TerminalPrompter {
            lines: Arc::new(Mutex::new(rx)),
        }
    }
}

/// What one typed line means for one question.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Typed {
    /// Enter: take the default (the core fills it in).
    Default,
    Skip,
    Pick(Pick),
}

/// Why a typed line answers nothing; shown before asking again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Retry {
    #[error("this question has no default: pick a number or type an answer")]
    NoDefault,
    #[error("pick one number")]
    OneNumber,
    #[error("there is no option {n}: pick 1-{count}")]
    NoOption { n: usize, count: usize },
}

/// Reads a line typed for `q`.
fn parse(q: &Question, line: &str) -> Result<Typed, Retry> {
    let line = line.trim();
    if line.is_empty() {
        return if q.default_labels().is_some() {
            Ok(Typed::Default)
        } else {
            Err(Retry::NoDefault)
        };
    }
    if line.eq_ignore_ascii_case("s") || line.eq_ignore_ascii_case("skip") {
        return Ok(Typed::Skip);
    }
    if q.multi_select && (line == "0" || line.eq_ignore_ascii_case("none")) {
        return Ok(Typed::Pick(Pick::Labels(Vec::new())));
    }
    let numbers: Option<Vec<usize>> = line
        .split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect();
    let Some(numbers) = numbers else {
        return Ok(Typed::Pick(Pick::Text {
            text: line.to_owned(),
        }));
    };
    if !q.multi_select && numbers.len() > 1 {
        return Err(Retry::OneNumber);
    }
    let mut labels = Vec::new();
    for n in numbers {
        match q.options.get(n.wrapping_sub(1)) {
            Some(option) => labels.push(option.label.clone()),
            None => {
                return Err(Retry::NoOption {
                    n,
                    count: q.options.len(),
                });
            }
        }
    }
    Ok(Typed::Pick(if q.multi_select {
        Pick::Labels(labels)
    } else {
        Pick::Label(labels.remove(0))
    }))
}

/// How much of an approval's preview (a diff, a command) the terminal shows.
const PREVIEW_LINES: usize = 40;

/// The lines of an agent's multi-line text (a question's paragraphs, a
/// preview), each made [`visible`]. The line breaks are kept because they
/// are the text's shape; the caller prints every line it starts behind a
/// gutter (`┆`, `│`), so none can pass for an option line.
fn visible_lines(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines().map(visible)
}

fn show(out: &mut impl Write, item: &Item, index: usize) -> std::io::Result<()> {
    let q = &item.request.questions[index];
    let total = item.request.questions.len();
    let left = item
        .deadline()
        .duration_since(SystemTime::now())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let who = visible(&Attribution::of(&item.asker, &item.session_id, item.run_id.as_ref()).line);
    writeln!(
        out,
        "\n── hark · question {} of {total} · {who} · {left} s left",
        index + 1
    )?;
    let mut question = visible_lines(&q.question);
    writeln!(
        out,
        "[{}] {}",
        visible(&q.header),
        question.next().unwrap_or_default()
    )?;
    for line in question {
        writeln!(out, "  ┆ {line}")?;
    }
    if let Some(approval) = &item.approval {
        writeln!(
            out,
            "  {}: {}",
            visible(&approval.tool),
            visible(&approval.target)
        )?;
        let lines: Vec<String> = visible_lines(&approval.preview).collect();
        for line in lines.iter().take(PREVIEW_LINES) {
            writeln!(out, "  │ {line}")?;
        }
        if lines.len() > PREVIEW_LINES {
            writeln!(out, "  │ … {} more lines", lines.len() - PREVIEW_LINES)?;
        }
    }
    let defaults = q.default_labels().unwrap_or_default();
    for (i, option) in q.options.iter().enumerate() {
        let mark = if defaults.contains(&option.label.as_str()) {
            "  ← default"
        } else {
            ""
        };
        let label = visible(&option.label);
        if option.description.is_empty() {
            writeln!(out, "  {}) {label}{mark}", i + 1)?;
        } else {
            let description = visible(&option.description);
            writeln!(out, "  {}) {label} — {description}{mark}", i + 1)?;
        }
    }
    let how = if q.multi_select {
        "numbers like 1,3 pick · 0 = none"
    } else {
        "a number picks"
    };
    let enter = if defaults.is_empty() {
        ""
    } else {
        "Enter = default · "
    };
    if item.approval.is_some() {
        writeln!(out, "  {enter}{how} · s = deny")?;
    } else {
        writeln!(out, "  {enter}{how} · s = skip · or type your own answer")?;
    }
    write!(out, "> ")?;
    out.flush()
}

impl OperatorPrompter for TerminalPrompter {
    fn surface(&self) -> Surface {
        Surface::Terminal
    }

    fn ask(&self, _session_id: &SessionId, item: Arc<Item>) -> PromptFuture {
        let lines = self.lines.clone();
        Box::pin(async move {
            let mut lines = lines.lock().await;
            let mut picks = Picks::new();
            let mut index = 0;
            while index < item.request.questions.len() {
                let q = &item.request.questions[index];
                let _ = show(&mut std::io::stdout(), &item, index);
                let Some(line) = lines.recv().await else {
                    return Err(Unanswered::Cancelled(
                        "the operator's terminal closed".into(),
                    ));
                };
                match parse(q, &line) {
                    Ok(Typed::Skip) => return Err(Unanswered::Skipped),
                    Ok(Typed::Default) => {}
                    Ok(Typed::Pick(Pick::Text { .. })) if item.approval.is_some() => {
                        println!("  an approval takes a verdict: pick a number, or s to deny");
                        continue;
                    }
                    Ok(Typed::Pick(pick)) => {
                        picks.insert(q.question.clone(), pick);
                    }
                    Err(message) => {
                        println!("  {message}");
                        continue;
                    }
                }
                index += 1;
            }
            Ok(picks)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hark_core::model::schema::QuestionOption;

    fn question(multi: bool, recommended: bool) -> Question {
        let first = if recommended { "A (Recommended)" } else { "A" };
        Question {
            question: "Q?".into(),
            header: "H".into(),
            options: [first, "B", "C"]
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: String::new(),
                    preview: None,
                })
                .collect(),
            multi_select: multi,
            default: None,
        }
    }

    #[test]
    fn typed_lines_become_picks() {
        let single = question(false, true);
        assert_eq!(parse(&single, ""), Ok(Typed::Default));
        assert_eq!(
            parse(&single, " 2 "),
            Ok(Typed::Pick(Pick::Label("B".into())))
        );
        assert_eq!(parse(&single, "s"), Ok(Typed::Skip));
        assert_eq!(
            parse(&single, "something else"),
            Ok(Typed::Pick(Pick::Text {
                text: "something else".into()
            }))
        );
        assert!(parse(&single, "4").is_err());
        assert!(parse(&single, "1,2").is_err());
        assert!(parse(&question(false, false), "").is_err());

        let multi = question(true, false);
        assert_eq!(
            parse(&multi, "1, 3"),
            Ok(Typed::Pick(Pick::Labels(vec!["A".into(), "C".into()])))
        );
        assert_eq!(parse(&multi, "0"), Ok(Typed::Pick(Pick::Labels(vec![]))));
    }

    /// An agent's text cannot drive the operator's terminal (clear it, hide
    /// text, ring it) or fake an option line: controls reach the screen
    /// escaped, and a line break inside a question continues behind a gutter.
    #[test]
    fn an_agents_control_characters_are_shown_escaped_and_cannot_fake_an_option() {
        let fake = "  2) Yes, delete everything (Recommended)";
        let option = |label: String, description: String| QuestionOption {
            label,
            description,
            preview: None,
        };
        let mut item = Item {
            id: hark_core::model::ids::Ids::random().item(),
            session_id: "s\x1b[2J".into(),
            run_id: None,
            asker: hark_core::model::item::Asker {
                cwd: Some("/w\r".into()),
                command: Some("claude\x07".into()),
                ..Default::default()
            },
            request: hark_core::model::schema::AskRequest {
                questions: vec![Question {
                    question: format!(
                        "Keep the files?\x1b[2J\x1b[8m\n{fake}\r{fake}\u{9b}0m\u{7f}"
                    ),
                    header: "\x1b[8mH\x07".into(),
                    options: vec![
                        option(format!("No\n{fake}"), format!("safe\r{fake}")),
                        option("Maybe\u{202e}".into(), format!("a\n{fake}\t")),
                    ],
                    multi_select: false,
                    default: None,
                }],
            },
            approval: Some(hark_core::model::approval::Approval {
                tool: "Bash\x1b[2J".into(),
                target: format!("rm -rf /tmp/x\n{fake}"),
                preview: format!("one\r{fake}\n\x1b[8mtwo\x07"),
                external: false,
            }),
            created_at: SystemTime::now(),
            timeout: std::time::Duration::from_secs(60),
            parking: None,
            mirrored: false,
        };
        for approval in [true, false] {
            if !approval {
                item.approval = None;
            }
            let mut out = Vec::new();
            show(&mut out, &item, 0).unwrap();
            let shown = String::from_utf8(out).unwrap();
            let raw: Vec<char> = shown
                .chars()
                .filter(|&c| {
                    (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c)
                })
                .collect();
            assert!(raw.is_empty(), "raw controls {raw:?} in\n{shown}");
            let options: Vec<&str> = shown
                .lines()
                .filter(|l| {
                    let l = l.trim_start();
                    l.split_once(')').is_some_and(|(n, _)| {
                        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
                    })
                })
                .collect();
            assert_eq!(options.len(), 2, "one line per real option in\n{shown}");
            assert!(options[0].starts_with("  1) No\\n"), "{shown}");
            assert!(options[1].starts_with("  2) Maybe\\u{202e}"), "{shown}");
            assert!(shown.contains("\\e[2J"), "{shown}");
        }
    }

    #[test]
    fn an_approval_shows_its_target_and_diff_and_offers_deny_not_skip() {
        let hark_core::gate::policy::Class::Write(approval) = hark_core::gate::policy::Policy::default().classify(
            "Edit",
            &serde_json::json!({"file_path": "/src/a.rs", "old_string": "one", "new_string": "two"}),
        ) else {
            panic!("an edit asks")
        };
        let item = Item {
            id: hark_core::model::ids::Ids::random().item(),
            session_id: "s".into(),
            run_id: None,
            asker: Default::default(),
            request: approval.request(),
            approval: Some(approval),
            created_at: SystemTime::now(),
            timeout: std::time::Duration::from_secs(60),
            parking: None,
            mirrored: false,
        };
        let mut out = Vec::new();
        show(&mut out, &item, 0).unwrap();
        let shown = String::from_utf8(out).unwrap();
        assert!(shown.contains("Edit: /src/a.rs"), "{shown}");
        assert!(shown.contains("│ - one\n  │ + two"), "{shown}");
        assert!(
            shown.contains("s = deny") && !shown.contains("your own answer"),
            "{shown}"
        );
    }
}
