//! A store that cannot be written loses no question: with the data
//! directory's disk full, the item is still listed (with a warning naming
//! the store), answered, and its answer reaches the agent; rows stored
//! before stay; once the disk frees, the held item is recorded and the
//! warning clears. A daemon started on a full disk says so and exits.
//!
//! The full disk is a real one: a 400 KB tmpfs on the sandbox's data
//! directory, filled with a file. Mounting takes root (CI runs as root);
//! where it is not permitted, these tests say so and skip.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use hark_harness::process::{EXIT_PATIENCE, wait_or_kill};
use serde_json::{Value, json};

use crate::support::*;

/// A small tmpfs, unmounted when dropped.
pub struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts 400 KB on `dir`; `None`, said as SKIPPED, where mounting is
    /// not permitted (a failure in CI and under the test command, which
    /// run as root: `hark_harness::skip`).
    pub fn mount(dir: &Path) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=400k,mode=0700", "tmpfs"])
            .arg(dir)
            .output();
        match mounted {
            Ok(out) if out.status.success() => Some(Tmpfs {
                dir: dir.to_owned(),
            }),
            Ok(out) => {
                hark_harness::skip(&format!(
                    "cannot mount a tmpfs to fill (run as root): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                None
            }
            Err(e) => {
                hark_harness::skip(&format!("cannot run mount: {e}"));
                None
            }
        }
    }

    /// Fills the disk with one file, until a write fails for want of space.
    pub fn fill(&self) -> PathBuf {
        let path = self.dir.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = [0u8; 4096];
        loop {
            match file.write_all(&block).and_then(|()| file.sync_all()) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(28) => return path,
                Err(e) => panic!("filling {}: {e}", path.display()),
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// The stored item of `session` in a listing.
fn of<'a>(items: &'a [Value], session: &str) -> &'a Value {
    items
        .iter()
        .find(|i| i["session_id"] == session)
        .unwrap_or_else(|| panic!("no item of {session} in {items:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_loses_no_question_and_the_operator_is_told() {
    let sandbox = sandbox();
    let Some(disk) = Tmpfs::mount(&sandbox.data_dir()) else {
        return;
    };
    let store = sandbox.data_dir().join("hark.db");
    let daemon = serve_in(&sandbox, json!({"Which database?": "SQLite"}), &[]);
    let earlier_agent = agent(&sandbox, &[("HARK_SESSION_ID", "earlier")]).await;
    let answered = ask(&earlier_agent, questions(&[db()])).await;
    assert_eq!(
        text(&answered),
        r#"{"answers":{"Which database?":"SQLite"}}"#
    );
    let before = inbox(&sandbox);
    assert_eq!(before.len(), 1);

    let filler = disk.fill();
    let held_agent = agent(&sandbox, &[("HARK_SESSION_ID", "held")]).await;
    let call = tokio::spawn(async move {
        let result = ask(&held_agent, questions(&[features()])).await;
        held_agent.cancel().await.unwrap();
        result
    });
    let id = daemon.log.question_id("held");

    // `hark inbox` lists it, after a warning that names the store and why.
    let listed = hark(&sandbox, &["inbox"]);
    assert!(listed.status.success());
    assert!(stdout(&listed).contains(&format!("PENDING   {}", &id[..8])));
    let warned = String::from_utf8_lossy(&listed.stderr);
    let says = format!(
        "warning: the store {} cannot be written: database or disk is full",
        store.display()
    );
    assert!(warned.contains(&says), "{warned}");
    // `--json` keeps its one value on stdout and warns in JSON on stderr.
    let listed = hark(&sandbox, &["inbox", "--json"]);
    let pending: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0]["id"].as_str(), &pending[0]["outcome"]),
        (Some(&*id), &Value::Null)
    );
    let warning: Value = serde_json::from_slice(&listed.stderr).unwrap();
    assert_eq!(warning["warning"], "store_failing");
    assert_eq!(warning["store"]["path"], store.display().to_string());
    assert_eq!(warning["store"]["error"], "database or disk is full");
    assert_eq!(warning["store"]["unrecorded"], 1);

    // `hark answer` answers it, and the answer reaches the agent.
    let replied = hark(&sandbox, &["answer", &id, "--pick", "Billing"]);
    assert!(
        replied.status.success(),
        "{}",
        String::from_utf8_lossy(&replied.stderr)
    );
    let result = call.await.unwrap();
    assert_eq!(
        text(&result),
        r#"{"answers":{"Which features?":["Billing"]}}"#
    );
    let all = inbox(&sandbox);
    assert_eq!(of(&all, "earlier"), of(&before, "earlier"));
    assert_eq!(of(&all, "held")["replied_by"], "cli");

    // The disk frees: the next look records what was held and warns no more.
    std::fs::remove_file(filler).unwrap();
    let listed = hark(&sandbox, &["inbox", "--all"]);
    assert!(
        listed.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    // A new daemon on the same store reads both from the file.
    assert!(daemon.stop().unwrap());
    let daemon = serve_in(&sandbox, json!({}), &[]);
    let after = inbox(&daemon.sandbox);
    assert_eq!(after.len(), 2);
    assert_eq!(of(&after, "earlier"), of(&before, "earlier"));
    let held = of(&after, "held");
    assert_eq!(held["id"], id);
    assert_eq!(
        held["outcome"],
        json!({"outcome": "answered", "answers": {"Which features?": ["Billing"]}, "defaulted": []})
    );
    assert_eq!(held["replied_by"], "cli");
}

#[test]
fn a_daemon_started_on_a_full_disk_says_so_and_exits() {
    let sandbox = sandbox();
    let Some(disk) = Tmpfs::mount(&sandbox.data_dir()) else {
        return;
    };
    disk.fill();
    let script = sandbox.path("script.json");
    std::fs::write(&script, "{}").unwrap();
    let mut serve = sandbox
        .hark(["serve", "--prompter"])
        .arg(format!("script:{}", script.display()))
        .arg("--socket")
        .arg(sandbox.socket())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_or_kill(&mut serve, EXIT_PATIENCE).expect("hark serve exited");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut serve.stderr.take().unwrap(), &mut said).unwrap();
    assert_eq!(status.code(), Some(1), "{said}");
    let store = sandbox.data_dir().join("hark.db");
    assert!(
        said.contains(&format!("hark: the store {}", store.display())),
        "{said}"
    );
    assert!(said.contains("hint: free space on the disk"), "{said}");
    assert!(!sandbox.socket().exists(), "it serves nothing");
}
