//! `hark answer`, `hark skip`, `hark approve` and `hark deny`: the
//! operator's reply to a pending item, from any terminal. The daemon's reply
//! rules decide; an id prefix is enough.

use std::path::Path;

use serde_json::json;

use hark_core::bridge::client;
use hark_core::bridge::views::ItemView;
use hark_core::bridge::wire::{ClientFrame, ServerFrame, WireReply};
use hark_core::model::ids::ItemId;
use hark_core::model::item::Outcome;
use hark_core::model::resolve::{Answer, Notes, Pick, Picks, resolve_answer};
use hark_core::model::schema::AskRequest;
use hark_core::model::validate::Issue;
use hark_core::model::validate::describe;

use crate::cli::{AnswerArgs, ApproveArgs, ItemArgs};
use crate::commands::inbox;
use crate::commands::query::{refused, socket_path, unreachable};
use crate::exit::ExitStatus;

/// Finds the pending item a full id or a unique id prefix names, whole
/// (its picks are checked against every label as the agent wrote it).
async fn find_pending(socket: &Path, id: &str) -> Result<ItemView, ExitStatus> {
    let item = inbox::find(socket, id, true).await?;
    let Some(outcome) = &item.outcome else {
        return Ok(item);
    };
    let how = item
        .replied_by_label()
        .unwrap_or_else(|| outcome.name().to_owned());
    eprintln!(
        "hark: item {} is already settled ({how}); exactly one reply counts",
        item.id
    );
    Err(ExitStatus::Refused)
}

async fn send_reply(socket: &Path, id: ItemId, reply: WireReply, json: bool) -> ExitStatus {
    let frame = ClientFrame::Reply {
        id,
        reply,
        via: None,
    };
    match client::request(socket, &frame).await {
        Ok(ServerFrame::Replied { id, outcome }) => {
            if json {
                println!("{}", json!({"id": id, "outcome": outcome}));
            } else {
                match &outcome {
                    Outcome::Answered(r) => println!(
                        "answered {id}: {}",
                        serde_json::to_string(&r.answers).unwrap_or_default()
                    ),
                    Outcome::Approved { scope } => println!("approved {id} ({})", scope.name()),
                    other => println!("{} {id}", other.name()),
                }
            }
            ExitStatus::Success
        }
        Ok(other) => refused(other),
        Err(e) => unreachable(&e),
    }
}

/// `hark answer ID --pick LABEL… | --text TEXT | --defaults`.
pub async fn answer(options: AnswerArgs) -> ExitStatus {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    if options.picks.is_empty() && options.text.is_none() && !options.defaults {
        eprintln!("hark: say what to answer: --pick LABEL, --text TEXT or --defaults");
        return ExitStatus::Refused;
    }
    let record = match find_pending(&socket, &options.id).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    // The picks are resolved here as the daemon will resolve them, so a
    // misfit is told in the command line's words before anything is sent.
    let answer = picks_from_words(&record.request, &options.picks, options.text.as_deref())
        .and_then(|picks| {
            let notes = notes_from_words(&record.request, &options.notes)?;
            Ok(Answer { picks, notes })
        })
        .and_then(|answer| resolve_answer(&record.request, &answer).map(|_| answer));
    let answer = match answer {
        Ok(a) => a,
        Err(issues) => {
            eprintln!(
                "hark: the answer does not fit the questions:\n{}",
                describe(&issues)
            );
            return ExitStatus::Refused;
        }
    };
    let reply = WireReply::Answer {
        answers: answer.picks,
        notes: answer.notes,
    };
    send_reply(&socket, record.id, reply, options.json).await
}

/// `hark skip ID`.
pub async fn skip(item: ItemArgs) -> ExitStatus {
    reply_to(item, WireReply::Skip).await
}

/// `hark cancel ID`: withdraw the item and the run waiting on it.
pub async fn cancel(item: ItemArgs) -> ExitStatus {
    reply_to(item, WireReply::Cancel).await
}

/// `hark approve ID [--scope turn|action|session]`: allow a write-mode
/// approval (its default scope without `--scope`).
pub async fn approve(args: ApproveArgs) -> ExitStatus {
    let scope = args.scope.map(Into::into);
    reply_to(args.item, WireReply::Approve { scope }).await
}

/// `hark deny ID`: the agent stays read-only.
pub async fn deny(item: ItemArgs) -> ExitStatus {
    reply_to(item, WireReply::Deny).await
}

/// Sends `reply` to the pending item `id` (or a unique prefix of it).
async fn reply_to(ItemArgs { id, json }: ItemArgs, reply: WireReply) -> ExitStatus {
    let socket = match socket_path() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let record = match find_pending(&socket, &id).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    send_reply(&socket, record.id, reply, json).await
}

/// Builds picks from what a person typed on a command line: each `--pick`
/// is an option label (matched to the one question that has it) or
/// `QUESTION=LABEL`; `--text` is free text for the only question, or
/// `QUESTION=TEXT`. Questions left out take their defaults when resolved.
fn picks_from_words(
    request: &AskRequest,
    labels: &[String],
    text: Option<&str>,
) -> Result<Picks, Vec<Issue>> {
    let mut picks = Picks::new();
    let mut issues = Vec::new();
    for word in labels {
        let owners: Vec<&str> = request
            .questions
            .iter()
            .filter(|q| q.has_option(word))
            .map(|q| q.question.as_str())
            .collect();
        let (question, label) = match (owners.as_slice(), word.split_once('=')) {
            ([one], _) => (request.question(one), word.as_str()),
            ([], Some((q, label))) if request.question(q).is_some_and(|q| q.has_option(label)) => {
                (request.question(q), label)
            }
            ([], _) => {
                issues.push(Issue::new(
                    format!("--pick {word:?}"),
                    "is not an option of any question",
                ));
                continue;
            }
            (_, _) => {
                issues.push(Issue::new(
                    format!("--pick {word:?}"),
                    "is an option of several questions: write QUESTION=LABEL",
                ));
                continue;
            }
        };
        let Some(q) = question else { continue };
        let entry = picks
            .entry(q.question.clone())
            .or_insert(Pick::Labels(Vec::new()));
        // A label named twice is picked once, as a checkbox ticked twice is.
        if let Pick::Labels(list) = entry
            && !list.iter().any(|l| l == label)
        {
            list.push(label.to_owned());
        }
    }
    if let Some(text) = text {
        let target = targeted(request, "--text", text, &mut issues);
        // A question takes an option or free text: with both, one would be
        // dropped without a word. (Each of several questions may take one.)
        match target {
            Some((q, _)) if picks.contains_key(&q) => issues.push(Issue::new(
                "--text",
                format!("{q:?} already has a --pick: answer a question with one or the other"),
            )),
            Some((q, t)) => {
                picks.insert(q, Pick::Text { text: t });
            }
            None => {}
        }
    }
    if issues.is_empty() {
        Ok(picks)
    } else {
        Err(issues)
    }
}

/// The question a `--text` or `--note` word is for, and its text: `TEXT`
/// for the only question, else `QUESTION=TEXT`.
fn targeted(
    request: &AskRequest,
    flag: &str,
    word: &str,
    issues: &mut Vec<Issue>,
) -> Option<(String, String)> {
    match word.split_once('=') {
        Some((q, t)) if request.question(q).is_some() => Some((q.to_owned(), t.to_owned())),
        _ if request.questions.len() == 1 => {
            Some((request.questions[0].question.clone(), word.to_owned()))
        }
        _ => {
            issues.push(Issue::new(
                flag,
                "the item has several questions: write QUESTION=TEXT",
            ));
            None
        }
    }
}

/// The `--note` words as notes, by question.
fn notes_from_words(request: &AskRequest, words: &[String]) -> Result<Notes, Vec<Issue>> {
    let mut issues = Vec::new();
    let mut notes = Notes::new();
    for word in words {
        if let Some((q, note)) = targeted(request, "--note", word, &mut issues)
            && notes.insert(q.clone(), note).is_some()
        {
            issues.push(Issue::new(
                "--note",
                format!("{q:?} has two notes: give one --note a question"),
            ));
        }
    }
    if issues.is_empty() {
        Ok(notes)
    } else {
        Err(issues)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hark_core::model::validate::{Rules, validate};
    use serde_json::json;

    /// A single-select, a multi-select and a free-text-friendly question.
    fn request() -> AskRequest {
        let question = |text: &str, multi: bool, labels: &[&str]| {
            let options: Vec<_> = labels
                .iter()
                .map(|l| json!({"label": l, "description": ""}))
                .collect();
            json!({"question": text, "header": "H", "multiSelect": multi, "options": options})
        };
        let questions = [
            question("Which db?", false, &["Postgres", "SQLite"]),
            question("Which features?", true, &["Auth", "Billing", "Search"]),
            question("Name?", false, &["foo", "bar"]),
        ];
        validate(&json!({ "questions": questions }), Rules::default()).unwrap()
    }

    #[test]
    fn command_line_words_become_picks() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let picks = picks_from_words(
            &request(),
            &words(&["SQLite", "Auth", "Search"]),
            Some("Name?=baz"),
        )
        .unwrap();
        let r = hark_core::model::resolve::resolve(&request(), &picks).unwrap();
        assert_eq!(
            serde_json::to_value(&r.answers).unwrap(),
            json!({"Which db?": "SQLite", "Which features?": ["Auth", "Search"], "Name?": "baz"})
        );
        let issues = picks_from_words(&request(), &words(&["Nope"]), Some("x")).unwrap_err();
        assert_eq!(issues.len(), 2);
    }

    #[test]
    fn a_label_picked_twice_is_sent_once() {
        let words = ["Auth", "Search", "Auth"].map(String::from);
        let picks = picks_from_words(&request(), &words, None).unwrap();
        assert_eq!(
            picks["Which features?"],
            Pick::Labels(vec!["Auth".into(), "Search".into()])
        );
    }

    #[test]
    fn a_pick_and_text_for_the_same_question_are_refused_not_one_dropped() {
        let one = validate(
            &json!({"questions": [{"question": "Name?", "header": "H",
                "options": [{"label": "foo"}, {"label": "bar"}]}]}),
            Rules::default(),
        )
        .unwrap();
        let issues = picks_from_words(&one, &["foo".into()], Some("hi")).unwrap_err();
        assert_eq!(
            issues,
            [Issue::new(
                "--text",
                "\"Name?\" already has a --pick: answer a question with one or the other"
            )]
        );
        // Different questions may take one each.
        let picks = picks_from_words(&request(), &["SQLite".into()], Some("Name?=baz")).unwrap();
        assert_eq!(picks.len(), 2);
    }
}
