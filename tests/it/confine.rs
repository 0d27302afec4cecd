//! What `hark run` starts cannot reach the operator's side: tried as an
//! attacker would, with the fake agent's own Bash tool (`SHELL`) detaching
//! helpers every way a shell can, each of which tries to list the inbox,
//! answer the agent's own question, connect to the operator socket, read the
//! store and a paused run's file, widen the config, reach the X display and
//! connect to an abstract unix socket made outside the run (as an X server
//! listens on `@/tmp/.X11-unix/X0`).
//! The agent's own ask and the operator's answer still work.

use std::io::Write;
use std::path::Path;

use crate::support::*;
use serde_json::json;

const QUESTION: &str = "Delete the staging database?";

fn delete_question() -> String {
    let ask = json!({"questions": [{
        "question": QUESTION, "header": "Staging", "multiSelect": false,
        "options": [{"label": "Delete it", "description": "drop it now"},
                    {"label": "Keep it", "description": "leave it"}]}]});
    format!("ASK {ask}")
}

/// What each helper tries (uncovering the socket directory by `umount`
/// first, which a sandbox keeping root's capabilities would allow), one line of `NAME STATUS` per attempt in
/// `$HOME/attack/WHO.status`, once the test has sent the item's id on the
/// fifo `$HOME/attack/go.WHO` (so that it tries while the question waits).
const ATTACK: &str = r#"
out="$HOME/attack/$1"
read -r id < "$HOME/attack/go.$1"
try() { name=$1; shift; "$@" > "$out.$name" 2>&1; echo "$name $?" >> "$out.status"; }
try inbox "$HARK_UNDER_TEST" inbox --json
try answer "$HARK_UNDER_TEST" answer "$id" --pick "Delete it"
try umount umount "$(dirname "$TARGET_SOCKET")"
try socket python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print("connected")' "$TARGET_SOCKET"
try store cat "$TARGET_STORE"
try paused cat "$TARGET_PAUSED"
try config sh -c 'printf "\n[confine]\nenabled = false\n" >> "$TARGET_CONFIG"'
try abstract python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect("\0" + sys.argv[1]); print("connected")' "$TARGET_ABSTRACT"
if [ -n "$TARGET_DISPLAY" ]; then try display xdpyinfo -display "$TARGET_DISPLAY"; fi
echo "done $1" >> "$HOME/attack/done"
"#;

/// The ways a tool's shell leaves its process tree.
const DETACHED: [(&str, &str); 3] = [
    (
        "setsid",
        "setsid -f sh \"$HOME/attack.sh\" setsid </dev/null >/dev/null 2>&1",
    ),
    (
        "fork",
        "( sh \"$HOME/attack.sh\" fork </dev/null >/dev/null 2>&1 & )",
    ),
    (
        "nohup",
        "bash -c 'nohup sh \"$HOME/attack.sh\" nohup </dev/null >/dev/null 2>&1 & disown'",
    ),
];

fn results(home: &Path, who: &str) -> Vec<(String, i32)> {
    let text = std::fs::read_to_string(home.join(format!("attack/{who}.status"))).unwrap();
    text.lines()
        .map(|l| {
            let (name, code) = l.split_once(' ').unwrap();
            (name.to_owned(), code.parse().unwrap())
        })
        .collect()
}

/// How an attacked run went: its daemon, its stdout and stderr, and what
/// each helper tried with what exit status.
struct Attacked {
    daemon: Daemon,
    out: String,
    err: String,
    tried: Vec<(String, Vec<(String, i32)>)>,
}

/// Starts a run whose agent detaches the three helpers and then asks; the
/// helpers try once the question waits; then the operator answers.
/// Returns the run's stdout and the helpers' results.
fn attacked_run(extra: &[&str], ways: &[(&'static str, &'static str)]) -> Attacked {
    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    let home = sandbox.path("home");
    std::fs::create_dir_all(home.join("attack")).unwrap();
    std::fs::write(home.join("attack.sh"), ATTACK).unwrap();
    // Each helper says it is done on a fifo the test follows.
    let done = Lines::follow("the helpers", crate::tree::fifo(&home.join("attack/done")));
    // And waits on one of its own for the item's id (readers of one fifo
    // would share its bytes, one each, as they come).
    let mut go: Vec<std::fs::File> = ways
        .iter()
        .map(|(who, _)| crate::tree::fifo(&home.join(format!("attack/go.{who}"))))
        .collect();
    // A parked run's file, as the data directory holds them.
    let paused = sandbox.data_dir().join("paused");
    std::fs::create_dir_all(&paused).unwrap();
    let decoy = paused.join("decoy.json");
    std::fs::write(&decoy, r#"{"env":{"ANTHROPIC_API_KEY":"sk-secret"}}"#).unwrap();
    let script: Vec<String> = ways
        .iter()
        .map(|(_, line)| format!("SHELL {line}"))
        .chain([delete_question()])
        .collect();
    let display = std::env::var("DISPLAY").unwrap_or_default();
    // An abstract socket of the operator's side, as an X server's is.
    let abstract_name = format!("hark-test-operator{}", sandbox.root().display());
    let _outside = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    let mut run = sandbox.hark(["run", "--agent"]);
    run.arg(fake_claude())
        .args(extra)
        .args(["--session", "attacked", "--", &script.join("\n")])
        .env("HARK_UNDER_TEST", sandbox.bin("hark"))
        .env("TARGET_SOCKET", sandbox.socket())
        .env("TARGET_STORE", sandbox.data_dir().join("hark.db"))
        .env("TARGET_PAUSED", &decoy)
        .env("TARGET_CONFIG", sandbox.config())
        .env("TARGET_DISPLAY", &display)
        .env("TARGET_ABSTRACT", &abstract_name)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = run.spawn().unwrap();
    daemon
        .log
        .wait_event("operator.question.asked", &[("session_id", "attacked")]);
    let id = inbox(sandbox)
        .iter()
        .find(|i| i["session_id"] == "attacked")
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .unwrap();
    for go in &mut go {
        writeln!(go, "{id}").unwrap();
    }
    for (who, _) in ways {
        done.wait_for(&format!("helper {who}"), |l| l == format!("done {who}"));
    }
    // The helpers have had their go; the operator answers now (unless one
    // of them already did).
    let _ = hark(sandbox, &["answer", &id, "--pick", "Keep it"]);
    let out = child.wait_with_output().unwrap();
    let tried = ways
        .iter()
        .map(|(who, _)| (who.to_string(), results(&home, who)))
        .collect();
    Attacked {
        out: stdout(&out),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
        daemon,
        tried,
    }
}

#[test]
fn detached_helpers_of_a_confined_agent_can_neither_list_answer_nor_read_the_operators_side() {
    let Attacked {
        daemon,
        out,
        err,
        tried: all,
    } = attacked_run(&[], &DETACHED);
    assert!(err.contains("confined by bubblewrap"), "{err}");
    assert!(err.contains("are out of reach (Landlock)"), "{err}");
    // The agent's own ask went through, and got the operator's answer.
    assert!(
        out.contains(r#"{"answers":{"Delete the staging database?":"Keep it"}}"#),
        "{out}\n{err}"
    );
    assert!(!out.contains("Delete it\"}"), "{out}");
    let item = inbox(&daemon.sandbox)
        .into_iter()
        .find(|i| i["session_id"] == "attacked")
        .unwrap();
    assert_eq!(item["outcome"]["outcome"], "answered");
    assert_eq!(item["replied_by"], "cli");
    for (who, tried) in &all {
        let names: Vec<&str> = tried.iter().map(|(n, _)| n.as_str()).collect();
        assert!(
            [
                "inbox", "answer", "umount", "socket", "store", "paused", "config", "abstract"
            ]
            .iter()
            .all(|n| names.contains(n)),
            "{who} tried {names:?}"
        );
        for (name, code) in tried {
            assert_ne!(*code, 0, "the {who} helper's {name} succeeded");
        }
    }
    // Nothing of the operator's side leaked or changed.
    let home = daemon.sandbox.path("home");
    let said = |who: &str, name: &str| {
        std::fs::read_to_string(home.join(format!("attack/{who}.{name}"))).unwrap_or_default()
    };
    for (who, tried) in &all {
        // Refused for the right reason: the operator's side is not there.
        assert!(
            said(who, "answer").contains("no operator is reachable"),
            "{}",
            said(who, "answer")
        );
        assert!(
            ["Read-only file system", "Permission denied"]
                .iter()
                .any(|why| said(who, "config").contains(why)),
            "{}",
            said(who, "config")
        );
        // Landlock's scope, not a missing listener: the same connect
        // works unconfined (below).
        assert!(
            said(who, "abstract").contains("PermissionError"),
            "{}",
            said(who, "abstract")
        );
        if tried.iter().any(|(n, _)| n == "display") {
            assert!(
                said(who, "display").contains("unable to open display"),
                "{}",
                said(who, "display")
            );
        }
    }
    for (who, _) in DETACHED {
        let store = std::fs::read(home.join(format!("attack/{who}.store"))).unwrap();
        assert!(!String::from_utf8_lossy(&store).contains(QUESTION));
        let paused = std::fs::read_to_string(home.join(format!("attack/{who}.paused"))).unwrap();
        assert!(!paused.contains("sk-secret"), "{paused}");
    }
    let config = std::fs::read_to_string(daemon.sandbox.config()).unwrap_or_default();
    assert!(!config.contains("[confine]"), "{config}");
    // Named but missing, it was made empty and owner-only to be bound
    // read-only (not left as a mount point of bubblewrap's).
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(daemon.sandbox.config())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let runs = crate::run::runs(&daemon);
    assert_eq!(
        runs[0]["confinement"],
        json!({"state": "confined", "by": "bubblewrap"})
    );
}

#[test]
fn unconfined_the_same_helpers_reach_the_operators_side_and_the_run_says_so() {
    // The attack is real: without confinement a helper that left the tree
    // answers the agent's question for it (the others, in the agent's
    // process group, end with it).
    let Attacked {
        daemon,
        out,
        err,
        tried: all,
    } = attacked_run(&["--no-confine"], &DETACHED[..1]);
    assert!(err.contains("not confined (turned off)"), "{err}");
    assert!(
        out.contains(r#""Delete the staging database?":"Delete it""#),
        "{out}\n{err}"
    );
    let answered: Vec<&String> = all
        .iter()
        .filter(|(_, tried)| tried.iter().any(|(n, c)| n == "answer" && *c == 0))
        .map(|(who, _)| who)
        .collect();
    assert_eq!(answered.len(), 1, "exactly one helper won: {all:?}");
    let reached = all
        .iter()
        .any(|(_, tried)| tried.iter().any(|(n, c)| n == "abstract" && *c == 0));
    assert!(reached, "unconfined, the abstract socket answers: {all:?}");
    let runs = crate::run::runs(&daemon);
    assert_eq!(runs[0]["confinement"], json!({"state": "off"}));
    let listing = stdout(&hark(&daemon.sandbox, &["runs"]));
    assert!(listing.contains("not confined (turned off)"), "{listing}");
}

#[test]
fn a_confined_agent_sees_its_own_socket_and_private_temp_and_still_asks() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    // Another run's directory in the shared temp dir.
    let other = sandbox.path("tmp").join("hark-run-1-other");
    std::fs::create_dir_all(&other).unwrap();
    let log = sandbox.path("fake.log");
    let probe = r#"SHELL (ls "$TMPDIR"; echo "display=$DISPLAY bus=$DBUS_SESSION_BUS_ADDRESS confined=$HARK_CONFINED"; ls "$(dirname "$HARK_ASK_SOCK")") > "$HOME/probe.txt" 2>&1"#;
    let out = hark_run(
        sandbox,
        &log,
        &[
            "--session",
            "seen",
            "--",
            &format!("{probe}\n{}", ask_line()),
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout(&out).contains(r#"{"answers":{"Which database?":"SQLite"}}"#));
    let run = &invocations(&log)[0];
    assert_eq!(run["env"]["HARK_CONFINED"], "bubblewrap");
    let text = std::fs::read_to_string(sandbox.path("home/probe.txt")).unwrap();
    assert!(
        !text.contains("hark-run-1-other"),
        "another run's directory is hidden: {text}"
    );
    assert!(
        text.contains("ask.sock"),
        "the run's own socket is there: {text}"
    );
    assert!(text.contains("display= bus= confined=bubblewrap"), "{text}");
}

/// What a confined agent's tool tries for the operator's secrets: it walks
/// every file it can read under `/` (but the system's and toolchains'
/// trees, and FIFOs, which would block), its agent's environment, command
/// line and open files, for the canary the test planted in each secret;
/// and it writes what would run as the operator later. The canary is
/// passed in two halves, so that no command line carries it whole.
const CANARY_WALK: &str = r##"
canary="$CANARY_A$CANARY_B"
out="$HOME/walk"
: > "$out.found"
grep -rl -D skip -e "$canary" \
  --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr \
  --exclude-dir=target --exclude-dir=.rustup --exclude-dir=.cargo --exclude-dir=.git \
  --exclude-dir=node_modules --exclude-dir=.mirror --exclude-dir=.pyenv --exclude-dir=.cache \
  / >> "$out.found" 2>/dev/null
agent=$PPID
for f in /proc/$agent/environ /proc/$agent/cmdline /proc/$$/environ; do
  tr '\0' '\n' < "$f" | grep -q -e "$canary" && echo "$f" >> "$out.found"
done
for f in /proc/$agent/fd/* /proc/$$/fd/*; do
  [ -f "$f" ] && grep -q -e "$canary" "$f" 2>/dev/null && echo "$f -> $(readlink "$f")" >> "$out.found"
done
try() { name=$1; shift; "$@" > "$out.$name" 2>&1; echo "$name $?" >> "$out.status"; }
try bashrc sh -c 'echo "echo pwned" >> "$HOME/.bashrc"'
try hook sh -c 'echo "#!/bin/sh" > "$REPO/.git/hooks/post-commit"'
try gitconfig sh -c 'printf "[core]\n\thooksPath = /tmp\n" >> "$REPO/.git/config"'
try pathdir sh -c 'echo "#!/bin/sh" > "$HOME/.local/bin/git"'
try agentconfig sh -c 'printf "strict_defaults = false\n" >> "$HARK_CONFIG"'
echo done >> "$out.status"
"##;

#[test]
fn no_secret_of_the_operators_is_readable_inside_and_nothing_written_runs_later() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    let home = sandbox.path("home");
    let canary = format!("hark-canary-{}", uuid::Uuid::new_v4().simple());
    let (a, b) = canary.split_at(canary.len() / 2);
    // A secret in each place hark holds or reads one: the config's inline
    // push topic and token, the hub's nkey beside the config, a `.creds`
    // in the data directory, the web surface's TLS key elsewhere.
    let nkey = sandbox.path("alice.nk");
    let creds = sandbox.data_dir().join("hub.creds");
    let tls_key = sandbox.path("tls/key.pem");
    std::fs::create_dir_all(tls_key.parent().unwrap()).unwrap();
    for (file, what) in [(&nkey, "nkey"), (&creds, "creds"), (&tls_key, "tls")] {
        std::fs::write(file, format!("{canary}-{what}\n")).unwrap();
    }
    std::fs::write(
        sandbox.config(),
        format!(
            "strict_defaults = false\n\
             [web]\ntls_cert = \"{cert}\"\ntls_key = \"{key}\"\n\
             [push]\nntfy = {{ server = \"http://127.0.0.1:9\", topic = \"{canary}-topic\", token = \"{canary}-token\" }}\n\
             [hub]\nurl = \"nats://127.0.0.1:9\"\nnkey = \"{nkey}\"\ncreds = \"{creds}\"\n",
            cert = sandbox.path("tls/cert.pem").display(),
            key = tls_key.display(),
            nkey = nkey.display(),
            creds = creds.display(),
        ),
    )
    .unwrap();
    // What the walk must find, to show that it walks: a file the agent may
    // read.
    std::fs::write(home.join("visible.txt"), format!("{canary}-visible\n")).unwrap();
    // What runs as the operator later: a shell startup file, a repository's
    // hooks and config, a directory on PATH in $HOME.
    std::fs::write(home.join(".bashrc"), "# the operator's\n").unwrap();
    let repo = sandbox.path("proj");
    std::fs::create_dir_all(repo.join(".git/hooks")).unwrap();
    std::fs::write(repo.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(home.join(".local/bin")).unwrap();
    std::fs::write(home.join("canary.sh"), CANARY_WALK).unwrap();
    let path = format!(
        "{}:{}",
        home.join(".local/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = sandbox.path("fake.log");
    let mut run = sandbox.hark(["run", "--agent"]);
    run.arg(fake_claude())
        .args(["--cwd"])
        .arg(&repo)
        .args(["--session", "canary", "--"])
        .arg(format!("SHELL sh \"$HOME/canary.sh\"\n{}", ask_line()))
        .env("FAKE_CLAUDE_LOG", &log)
        .env("CANARY_A", a)
        .env("CANARY_B", b)
        .env("REPO", &repo)
        .env("PATH", path);
    let out = output_with_stdin(&mut run, "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("the secret files it names do not exist"),
        "{err}"
    );
    // The agent's side of hark still reads its part of the config.
    assert!(
        stdout(&out).contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "{err}"
    );
    let status = std::fs::read_to_string(home.join("walk.status")).unwrap();
    assert!(
        status.ends_with("done\n"),
        "the walk ran to its end: {status}"
    );
    let found = std::fs::read_to_string(home.join("walk.found")).unwrap();
    let found: Vec<&str> = found.lines().collect();
    let visible = home.join("visible.txt");
    assert!(
        found.contains(&visible.to_str().unwrap()),
        "the walk finds what the agent may read: {found:?}"
    );
    let leaked: Vec<&&str> = found
        .iter()
        .filter(|f| **f != visible.to_str().unwrap())
        .collect();
    assert!(leaked.is_empty(), "secrets readable inside: {leaked:?}");
    // Nothing it wrote runs as the operator later.
    for line in status.lines().filter(|l| *l != "done") {
        let (name, code) = line.split_once(' ').unwrap();
        assert_ne!(code, "0", "the agent's {name} write succeeded");
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".bashrc")).unwrap(),
        "# the operator's\n"
    );
    assert!(!repo.join(".git/hooks/post-commit").exists());
    assert_eq!(
        std::fs::read_to_string(repo.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!home.join(".local/bin/git").exists());
}

#[test]
fn a_stopped_confined_agent_is_told_to_stop_before_it_is_killed() {
    let daemon = serve(json!({}));
    let sandbox = &daemon.sandbox;
    let home = sandbox.path("home");
    let told = Lines::follow("the agent", crate::tree::fifo(&home.join("told")));
    // An agent that says when it listens, and what it was told: its own
    // shutdown, as Claude Code's saves its session.
    let agent = home.join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\ntrap 'echo TERM > \"$HOME/told\"; exit 0' TERM\n\
         echo ready > \"$HOME/told\"\nwhile :; do sleep 0.05; done\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut run = sandbox
        .hark([
            "run",
            "--session",
            "stopped",
            "--agent-kind",
            "claude",
            "--agent",
        ])
        .arg(&agent)
        .args(["--", "work"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    told.wait_for("the agent listening", |l| l == "ready");
    hark_core::platform::ask_to_end(run.id());
    told.wait_for("the agent told to stop", |l| l == "TERM");
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15));
}

#[test]
fn an_agent_reached_through_a_link_in_the_private_temp_dir_starts() {
    let daemon = serve(json!({"Which database?": "SQLite"}));
    let sandbox = &daemon.sandbox;
    // npm's layout: `.bin/claude` links to the package's own program.
    let modules = sandbox.path("tmp/npm/node_modules");
    let package = modules.join("@anthropic-ai/claude-code/bin");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::create_dir_all(modules.join(".bin")).unwrap();
    std::fs::copy(fake_claude(), package.join("claude.exe")).unwrap();
    let link = modules.join(".bin/claude");
    std::os::unix::fs::symlink("../@anthropic-ai/claude-code/bin/claude.exe", &link).unwrap();
    let mut run = sandbox.hark(["run", "--agent"]);
    run.arg(&link)
        .args(["--session", "linked", "--", &ask_line()]);
    let out = output_with_stdin(&mut run, "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("confined by bubblewrap"), "{err}");
    assert!(
        stdout(&out).contains(r#"{"answers":{"Which database?":"SQLite"}}"#),
        "{err}"
    );
}
