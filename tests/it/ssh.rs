//! Agents on a host reached over SSH (`hark ssh`). A real sshd on
//! 127.0.0.1 stands for the remote host: what runs "there" runs under it,
//! as a remote login's commands do, with its own environment (none of the
//! sandbox's `HARK_*`), and reaches the operator only through the socket
//! `ssh -R` forwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use hark_harness::sshd::Sshd;
use serde_json::{Value, json};

use crate::support::{Daemon, Sandbox, answer, db, inbox, questions, sandbox, serve};

/// sshd for `sandbox`, whose logins' runtime directory (`XDG_RUNTIME_DIR`,
/// which a login manager sets) is the sandbox's `remote-run`.
fn sshd(sandbox: &Sandbox) -> Sshd {
    Sshd::start(
        &sandbox.path("sshd"),
        &[("XDG_RUNTIME_DIR", &sandbox.path("remote-run"))],
    )
    .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)))
}

/// `hark ssh devbox -- COMMAND…` in `sandbox`, through `sshd`.
fn hark_ssh(sandbox: &Sandbox, sshd: &Sshd, command: &[&str]) -> Command {
    let mut ssh = sandbox.hark(["ssh"]);
    ssh.args(sshd.hark_ssh_args())
        .arg("devbox")
        .arg("--")
        .args(command);
    ssh
}

/// The questions file, and `hark ask` of it as the remote host runs it.
fn remote_ask(sandbox: &Sandbox, extra: &[&str]) -> Vec<String> {
    let file = sandbox.path("q.json");
    std::fs::write(&file, questions(&[db()]).to_string()).unwrap();
    let mut command = vec![
        path(&sandbox.bin("hark")),
        "ask".to_owned(),
        "--session".to_owned(),
        "remote".to_owned(),
    ];
    command.extend(extra.iter().map(|s| (*s).to_owned()));
    command.extend(["--file".to_owned(), path(&file)]);
    command
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: stdout {:?}, stderr {:?}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

#[test]
fn an_agent_on_a_host_reached_over_ssh_asks_the_operator_here_and_its_item_names_the_host() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let sshd = sshd(sandbox);
    let ask = remote_ask(sandbox, &[]);
    let ask: Vec<&str> = ask.iter().map(String::as_str).collect();

    let out = hark_ssh(sandbox, &sshd, &ask).output().unwrap();

    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        json_of(&out),
        json!({"outcome": "answered", "answers": {"Which database?": "SQLite"}, "defaulted": []})
    );
    // Nothing told the remote hark where to ask: the socket is where it
    // looks by itself, in the login's runtime directory.
    let remote = sandbox.path("remote-run/hark/hark.sock");
    assert!(
        text(&out.stderr).contains(&path(&remote)),
        "{}",
        text(&out.stderr)
    );
    let items = inbox(sandbox);
    let item = items
        .iter()
        .find(|i| i["session_id"] == "remote")
        .unwrap_or_else(|| panic!("no remote item in {items:?}"));
    assert_eq!(item["asker"]["host"], "devbox");
    assert!(item["asker"].get("pid").is_none(), "{item}");
    let line = item["attribution"]["line"].as_str().unwrap();
    assert!(line.contains(" on devbox · "), "{line}");
    assert_eq!(item["replied_by"], "script");
}

#[test]
fn nothing_on_the_remote_host_can_answer_or_list_through_its_socket_and_the_operator_here_can() {
    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    let sshd = sshd(sandbox);
    let ask = remote_ask(sandbox, &[]);
    let ask: Vec<&str> = ask.iter().map(String::as_str).collect();
    let asker = hark_ssh(sandbox, &sshd, &ask)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = daemon.log.question_id("remote");

    // The remote side's own `hark answer` and `hark inbox`, through the
    // forward, as anything there could run them.
    let hark = path(&sandbox.bin("hark"));
    for command in [
        [hark.as_str(), "answer", &id, "--pick", "SQLite"].as_slice(),
        [hark.as_str(), "inbox", "--json"].as_slice(),
    ] {
        let out = hark_ssh(sandbox, &sshd, command).output().unwrap();
        assert!(!out.status.success(), "{command:?} was served");
        let said = text(&out.stderr);
        assert!(
            said.contains("this is devbox's socket"),
            "{command:?}: {said}"
        );
    }
    let items = inbox(sandbox);
    assert_eq!(items[0]["state"], "pending", "{items:?}");

    answer(sandbox, &id, "Postgres (Recommended)");
    let out = asker.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        json_of(&out)["answers"],
        json!({"Which database?": "Postgres (Recommended)"})
    );
}

#[test]
fn with_no_daemon_behind_the_forward_the_remote_agent_hears_no_operator_is_reachable() {
    // A forward to this machine's host socket while no daemon serves it:
    // the remote end accepts, and the connection ends before any answer.
    let sandbox = sandbox();
    let sshd = sshd(&sandbox);
    let remote_dir = sandbox.path("remote-run/hark");
    std::fs::create_dir_all(&remote_dir).unwrap();
    let remote: PathBuf = remote_dir.join("hark.sock");
    let local = sandbox.path("run/hosts/devbox.sock");
    let out = sshd
        .ssh()
        .args(["-o", "ExitOnForwardFailure=yes", "-R"])
        .arg(format!("{}:{}", remote.display(), local.display()))
        .arg("devbox")
        .args(remote_ask(&sandbox, &["--no-wait"]))
        .output()
        .unwrap();

    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(
        json_of(&out),
        json!({"outcome": "not_answered", "reason": "no operator is attached"})
    );
}

#[test]
fn hark_ssh_refuses_a_host_name_that_cannot_name_its_socket() {
    let daemon: Daemon = serve(json!({}));
    let out = daemon
        .sandbox
        .hark(["ssh", "--name", "../etc", "devbox"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("\"../etc\" is not a host name hark takes"),
        "{}",
        text(&out.stderr)
    );
    assert!(!daemon.sandbox.path("run/hosts").exists());
}
