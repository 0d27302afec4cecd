//! Listings of any size: the daemon pages them by bytes and clips long
//! texts (each cut marked, the entry `"clipped": true`), so no listing
//! frame passes the 1 MiB cap whatever the agents wrote; `hark show` and
//! `hark answer` fetch an item whole by id.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, SystemTime};

use crate::support::*;
use hark_core::model::ids::{Clock, ItemId, SessionId};
use hark_core::model::item::{Asker, Item, Outcome};
use hark_core::model::resolve::Resolution;
use hark_core::model::schema::AnswerValue;
use hark_core::model::validate::{Rules, validate};
use hark_core::store::Store;
use serde_json::{Value, json};

/// The frame cap the daemon and its clients hold to.
const MAX_FRAME: usize = 1 << 20;

/// A connection to the daemon that sends frames and reads them back.
struct Raw(BufReader<UnixStream>);

impl Raw {
    fn connect(sandbox: &Sandbox) -> Raw {
        Raw(BufReader::new(
            UnixStream::connect(sandbox.socket()).unwrap(),
        ))
    }

    fn send(&mut self, frame: &Value) {
        let mut bytes = serde_json::to_vec(frame).unwrap();
        bytes.push(b'\n');
        self.0.get_mut().write_all(&bytes).unwrap();
    }

    /// The next frame, and how many bytes it took on the wire.
    fn next(&mut self) -> (Value, usize) {
        let mut line = String::new();
        let read = self.0.read_line(&mut line).unwrap();
        (serde_json::from_str(&line).unwrap(), read)
    }
}

/// One question "Pick one?" with options A–D, each described by `describe`.
fn long_question(describe: impl Fn(&str) -> String) -> Value {
    long_questions(&["Pick one?"], describe)
}

/// The questions `texts`, each with options A–D described by `describe`.
fn long_questions(texts: &[&str], describe: impl Fn(&str) -> String) -> Value {
    let qs: Vec<Value> = texts
        .iter()
        .map(|text| {
            let options: Vec<Value> = ["A", "B", "C", "D"]
                .iter()
                .map(|l| json!({"label": l, "description": describe(&format!("{text}{l}"))}))
                .collect();
            json!({"question": text, "header": "Pick", "options": options})
        })
        .collect();
    questions(&qs)
}

/// The four questions of each of the 250 items.
const FOUR: [&str; 4] = ["Pick 1?", "Pick 2?", "Pick 3?", "Pick 4?"];

/// The item's request holds every text of `asked`, byte for byte (without
/// printing megabytes when it does not).
fn assert_same_request(item: &Value, asked: &Value) {
    let texts = |request: &Value| -> Vec<String> {
        let mut texts = Vec::new();
        for q in request["questions"].as_array().unwrap() {
            texts.push(q["question"].as_str().unwrap().to_owned());
            for o in q["options"].as_array().unwrap() {
                texts.push(o["label"].as_str().unwrap().to_owned());
                texts.push(o["description"].as_str().unwrap().to_owned());
            }
        }
        texts
    };
    let (got, want) = (texts(&item["request"]), texts(asked));
    assert_eq!(got.len(), want.len());
    for (got, want) in got.iter().zip(&want) {
        assert!(
            got == want,
            "{} bytes, not the {} asked",
            got.len(),
            want.len()
        );
    }
}

fn out_json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn two_hundred_fifty_settled_items_with_long_descriptions_list_in_pages() {
    let daemon = serve(json!({"Pick 1?": "B", "Pick 2?": "B", "Pick 3?": "B", "Pick 4?": "B"}));
    let describe = |i: usize| move |l: &str| format!("{i}{l}:{}", "d".repeat(6 * 1024));
    for i in 0..250 {
        let mut asker = Raw::connect(&daemon.sandbox);
        let request = long_questions(&FOUR, describe(i));
        asker.send(&json!({"type": "ask", "session_id": format!("s{i}"), "request": request}));
        assert_eq!(asker.next().0["type"], "accepted");
        assert_eq!(asker.next().0["type"], "settled");
    }

    // The daemon's first page stays under the cap and says more follow.
    let mut raw = Raw::connect(&daemon.sandbox);
    raw.send(&json!({"type": "list", "filter": {}}));
    let (page, bytes) = raw.next();
    assert!(bytes <= MAX_FRAME, "a page of {bytes} bytes");
    assert_eq!(page["type"], "items", "{page}");
    let first = page["items"].as_array().unwrap().len();
    assert_eq!(page["next"], first, "more follow after {first}");
    // Cut by bytes, not by the hundred rows a page reads at most.
    assert!(first < 100, "one page held {first}");

    let items = out_json(&hark(&daemon.sandbox, &["inbox", "--all", "--json"]));
    let items = items.as_array().unwrap();
    assert_eq!(items.len(), 250);
    let mut sessions: Vec<&str> = items
        .iter()
        .map(|i| i["session_id"].as_str().unwrap())
        .collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), 250, "every item once");
    for item in items {
        assert_eq!(item["clipped"], true);
        assert_eq!(item["outcome"]["answers"]["Pick 3?"], "B");
        let description = item["request"]["questions"][0]["options"][0]["description"]
            .as_str()
            .unwrap();
        assert!(description.ends_with("…[clipped, 6 KB]"), "{description}");
    }
    let human = hark(&daemon.sandbox, &["inbox", "--all"]);
    assert!(human.status.success());
    assert_eq!(String::from_utf8_lossy(&human.stdout).lines().count(), 250);
    let limited = out_json(&hark(
        &daemon.sandbox,
        &["inbox", "--all", "--json", "--limit", "120"],
    ));
    assert_eq!(limited.as_array().unwrap().len(), 120);

    // One item whole, byte for byte.
    let one = items.iter().find(|i| i["session_id"] == "s17").unwrap();
    let id = one["id"].as_str().unwrap();
    let whole = out_json(&hark(&daemon.sandbox, &["show", id, "--json"]));
    assert!(whole.get("clipped").is_none(), "{}", whole["clipped"]);
    assert_same_request(&whole, &long_questions(&FOUR, describe(17)));
}

#[test]
fn two_pending_items_of_600_kb_are_listed_clipped_and_answered_by_prefix() {
    let daemon = serve(json!({}));
    // Option D of each is described at length (600 KB), the others briefly.
    let describe = |who: &'static str| {
        move |l: &str| match l.ends_with('D') {
            true => format!("{who}{l}{}", "x".repeat(600 * 1024)),
            false => format!("{who}{l}"),
        }
    };
    let mut askers = Vec::new();
    for who in ["first", "second"] {
        let file = daemon.sandbox.path(format!("{who}.json"));
        std::fs::write(&file, long_question(describe(who)).to_string()).unwrap();
        let asker = daemon
            .sandbox
            .hark(["ask", "--session", who, "--file"])
            .arg(&file)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        daemon
            .log
            .wait_event("operator.question.asked", &[("session_id", who)]);
        askers.push(asker);
    }

    let human = hark(&daemon.sandbox, &["inbox"]);
    assert!(
        human.status.success(),
        "{}",
        String::from_utf8_lossy(&human.stderr)
    );
    let lines = String::from_utf8_lossy(&human.stdout).to_string();
    assert_eq!(
        lines.lines().filter(|l| l.starts_with("PENDING")).count(),
        2
    );
    let items = out_json(&hark(&daemon.sandbox, &["inbox", "--json"]));
    let items = items.as_array().unwrap();
    assert_eq!(items.len(), 2);
    for item in items {
        assert_eq!(item["clipped"], true);
        let description = item["request"]["questions"][0]["options"][3]["description"]
            .as_str()
            .unwrap();
        assert!(description.ends_with("…[clipped, 600 KB]"), "{description}");
    }

    let second = items.iter().find(|i| i["session_id"] == "second").unwrap();
    let whole = out_json(&hark(
        &daemon.sandbox,
        &["show", &second["id"].as_str().unwrap()[..8], "--json"],
    ));
    assert_same_request(&whole, &long_question(describe("second")));

    let first = items.iter().find(|i| i["session_id"] == "first").unwrap();
    let prefix = &first["id"].as_str().unwrap()[..8];
    let answered = hark(&daemon.sandbox, &["answer", prefix, "--pick", "C"]);
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    let first_asker = askers.remove(0);
    let got = first_asker.wait_with_output().unwrap();
    assert!(got.status.success());
    let got: Value = serde_json::from_slice(&got.stdout).unwrap();
    assert_eq!(got["answers"]["Pick one?"], "C", "{got}");
    for mut asker in askers {
        let _ = asker.kill();
        let _ = asker.wait();
    }
}

#[test]
fn runs_with_1_mb_prompts_are_listed_clipped() {
    let daemon = serve(json!({}));
    let prompt = "p".repeat(1000 * 1000);
    // A process of its own stands for the runs (they are running while it
    // lives): a run the test reported as itself would have the test's own
    // `hark runs` inside it, and refused.
    let mut runner = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let ids = [
        "00000000-0000-0000-0000-00000000000a",
        "00000000-0000-0000-0000-00000000000b",
    ];
    for id in ids {
        let mut raw = Raw::connect(&daemon.sandbox);
        raw.send(&json!({"type": "run_started", "run": {
            "id": id, "session_id": "long", "command": format!("claude -p {prompt}"),
            "pid": runner.id()}}));
        assert_eq!(raw.next().0["type"], "recorded");
    }

    let human = hark(&daemon.sandbox, &["runs"]);
    assert!(
        human.status.success(),
        "{}",
        String::from_utf8_lossy(&human.stderr)
    );
    let shown = String::from_utf8_lossy(&human.stdout).to_string();
    assert_eq!(
        shown.lines().filter(|l| l.starts_with("RUNNING")).count(),
        2
    );
    let runs = out_json(&hark(&daemon.sandbox, &["runs", "--json"]));
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert!(ids.contains(&run["id"].as_str().unwrap()));
        assert_eq!(run["clipped"], true);
        let command = run["command"].as_str().unwrap();
        assert!(
            command.ends_with("…[clipped, 976 KB]"),
            "{}",
            &command[900..]
        );
    }
    let limited = out_json(&hark(&daemon.sandbox, &["runs", "--json", "--limit", "1"]));
    assert_eq!(limited.as_array().unwrap().len(), 1);
    let sessions = hark(&daemon.sandbox, &["sessions", "--json"]);
    assert!(sessions.status.success());
    let _ = runner.kill();
    let _ = runner.wait();
}

/// Stores an answered item whose free-text answer is `text`, as an older
/// hark (before answers were bounded) could have, and returns its id.
fn seed_answered(sandbox: &Sandbox, text: &str) -> ItemId {
    std::fs::create_dir_all(sandbox.data_dir()).unwrap();
    let store = Store::open(&sandbox.data_dir().join("hark.db"), Clock::system()).unwrap();
    let request = validate(&questions(&[db()]), Rules::default()).unwrap();
    let item = Item {
        id: ItemId("00000000-0000-0000-0000-000000000abc".parse().unwrap()),
        session_id: SessionId::from("old"),
        run_id: None,
        asker: Asker::default(),
        request,
        approval: None,
        created_at: SystemTime::now(),
        timeout: Duration::from_secs(60),
        parking: None,
        mirrored: false,
    };
    store.insert(&item).unwrap();
    let answers = [(
        "Which database?".to_owned(),
        AnswerValue::One(text.to_owned()),
    )];
    let outcome = Outcome::Answered(Resolution {
        answers: answers.into_iter().collect(),
        defaulted: Vec::new(),
        annotations: Default::default(),
    });
    assert!(
        store
            .settle(
                item.id,
                &outcome,
                Some(&hark_core::model::item::Surface::Cli)
            )
            .unwrap()
    );
    item.id
}

#[test]
fn a_1_mib_free_text_answer_is_refused_and_a_stored_one_is_listed_clipped() {
    let sandbox = sandbox();
    let huge = "t".repeat(MAX_FRAME - 200);
    let old = seed_answered(&sandbox, &huge);
    let daemon = serve_in(&sandbox, json!({}), &[]);

    // The stored one lists, clipped; whole it cannot travel, and says so.
    let listed = out_json(&hark(
        &sandbox,
        &["inbox", "--all", "--json", "--limit", "1"],
    ));
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], old.to_string());
    assert_eq!(listed[0]["clipped"], true);
    let answer = listed[0]["outcome"]["answers"]["Which database?"]
        .as_str()
        .unwrap();
    assert!(answer.ends_with("…[clipped, 1023 KB]"), "{answer}");
    let human = hark(&sandbox, &["inbox", "--all", "--limit", "1"]);
    assert!(human.status.success());
    let whole = hark(&sandbox, &["show", &old.to_string()]);
    assert_eq!(whole.status.code(), Some(1));
    let said = String::from_utf8_lossy(&whole.stderr);
    assert!(said.contains("more than one frame carries"), "{said}");

    // A new answer that long is refused and leaves the item pending.
    let file = sandbox.path("q.json");
    std::fs::write(&file, questions(&[db()]).to_string()).unwrap();
    let asker = sandbox
        .hark(["ask", "--session", "new", "--file"])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let asked = daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "new")]);
    let id = asked["question_id"].as_str().unwrap().to_owned();
    let mut raw = Raw::connect(&sandbox);
    raw.send(
        &json!({"type": "reply", "id": id, "reply": {"action": "answer",
        "answers": {"Which database?": {"text": "t".repeat(MAX_FRAME - 200)}}}}),
    );
    let (refusal, _) = raw.next();
    assert_eq!(refusal["code"], "invalid", "{refusal}");
    assert!(
        refusal["issues"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("free text must be at most 65536 bytes"),
        "{refusal}"
    );

    // The longest answer allowed is kept whole and reaches the agent.
    let longest = "w".repeat(64 * 1024 - 2);
    let answered = hark(&sandbox, &["answer", &id[..8], "--text", &longest]);
    assert!(
        answered.status.success(),
        "{}",
        String::from_utf8_lossy(&answered.stderr)
    );
    let got: Value = serde_json::from_slice(&asker.wait_with_output().unwrap().stdout).unwrap();
    assert!(
        got["answers"]["Which database?"] == longest.as_str(),
        "the agent got it whole"
    );
    let listed = out_json(&hark(
        &sandbox,
        &["inbox", "--all", "--json", "--limit", "1"],
    ));
    assert_eq!(listed[0]["id"], id.as_str());
    assert!(
        listed[0]["outcome"]["answers"]["Which database?"]
            .as_str()
            .unwrap()
            .ends_with("…[clipped, 63 KB]")
    );
    let whole = out_json(&hark(&sandbox, &["show", &id, "--json"]));
    assert!(whole["outcome"]["answers"]["Which database?"] == longest.as_str());
}
