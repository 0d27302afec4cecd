//! The Windows build under Wine: where it is, a sandbox whose paths are
//! given to it as Windows paths (`Z:\…`, Wine's drive for `/`), `hark.exe`
//! run to its end or followed, `hark.exe serve` with a scripted operator,
//! and Wine's processes found from Linux (each is a Linux process whose
//! command line is the Windows one).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

pub use hark_harness::{Lines, Sandbox};
use serde_json::{Value, json};

/// The built `hark.exe` (and its siblings `fake-claude.exe`,
/// `fake-codex.exe`) and Wine, when this tier runs.
#[derive(Debug, Clone)]
pub struct Wine {
    /// `wine64` (Debian puts it in /usr/lib/wine).
    pub wine: PathBuf,
    /// The directory of `hark.exe`.
    pub bin: PathBuf,
}

/// The tier is on when `HARK_WINE_EXE` names the built `hark.exe`
/// (scripts/test-wine sets it, with `WINEPREFIX`); off, each case returns
/// at once. On, anything missing fails the case: the tier never passes
/// by not running.
pub fn wine() -> Option<Wine> {
    let Some(exe) = std::env::var_os("HARK_WINE_EXE").map(PathBuf::from) else {
        eprintln!("not run: HARK_WINE_EXE is unset (scripts/test-wine runs this tier)");
        return None;
    };
    assert!(
        exe.is_file(),
        "HARK_WINE_EXE={} is not a file",
        exe.display()
    );
    let prefix = std::env::var_os("WINEPREFIX").map(PathBuf::from);
    let prefix = prefix.expect("WINEPREFIX is unset: scripts/test-wine prepares one");
    assert!(
        prefix
            .join("drive_c/windows/system32/bcryptprimitives.dll")
            .is_file(),
        "the Wine prefix {} has no bcryptprimitives.dll shim (scripts/test-wine puts it there)",
        prefix.display()
    );
    let wine = std::env::var_os("HARK_WINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/wine/wine64"));
    assert!(
        wine.is_file(),
        "{} is missing: install wine64 (scripts/setup --tests)",
        wine.display()
    );
    let bin = exe.parent().expect("hark.exe is in a directory").to_owned();
    Some(Wine { wine, bin })
}

/// `path` as a Windows program under Wine names it: `Z:\…`.
pub fn win(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// A sandbox for the Windows build: its socket, store and config given as
/// Windows paths, and the fake agent's log.
#[derive(Debug, Clone)]
pub struct Box {
    pub wine: Wine,
    pub sandbox: Sandbox,
}

impl Box {
    pub fn new(wine: &Wine) -> Box {
        let sandbox = Sandbox::new("hark-wine-", &wine.bin)
            .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
        Box {
            wine: wine.clone(),
            sandbox,
        }
    }

    /// The fake agent's log, as Linux reads it.
    pub fn log(&self) -> PathBuf {
        self.sandbox.path("fake.log")
    }

    /// The socket path, as hark.exe is given it.
    pub fn socket(&self) -> String {
        win(&self.sandbox.socket())
    }

    /// A program of the build (`fake-claude.exe`), as hark.exe names it.
    pub fn exe(&self, name: &str) -> String {
        win(&self.wine.bin.join(name))
    }

    /// `wine64 PROGRAM.exe ARGS`, in the sandbox (its root the working
    /// directory, so that Wine's current drive is `Z:`).
    pub fn command<I, S>(&self, program: &str, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = self.sandbox.command(&self.wine.wine);
        command
            .arg(self.wine.bin.join(program))
            .args(args)
            .current_dir(self.sandbox.root())
            .env("WINEDEBUG", "-all")
            .env("HARK_SOCKET", self.socket())
            .env("HARK_DATA_DIR", win(&self.sandbox.data_dir()))
            .env("HARK_CONFIG", win(&self.sandbox.config()))
            .env("FAKE_CLAUDE_LOG", win(&self.log()));
        command
    }

    /// `hark.exe ARGS`.
    pub fn hark<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command("hark.exe", args)
    }

    /// `hark.exe ARGS` to its end.
    pub fn output(&self, args: &[&str]) -> Output {
        self.hark(args)
            .stdin(Stdio::null())
            .output()
            .expect("wine runs hark.exe")
    }

    /// `hark.exe inbox --all --json`, which must succeed, parsed.
    pub fn inbox(&self) -> Vec<Value> {
        let out = self.output(&["inbox", "--all", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `hark.exe run --agent fake-claude.exe -- PROMPT`, followed.
    pub fn run(&self, args: &[&str], prompt: &str) -> Followed {
        let mut command = self.hark(["run"]);
        command
            .args(args)
            .arg("--agent")
            .arg(self.exe("fake-claude.exe"))
            .args(["--", prompt]);
        Followed::spawn("hark.exe run", command)
    }

    /// The fake agent's log lines.
    pub fn logged(&self) -> Vec<Value> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// A process whose stdout and stderr are followed; killed when dropped.
#[derive(Debug)]
pub struct Followed {
    pub child: Child,
    pub stdout: Lines,
    pub stderr: Lines,
}

impl Followed {
    pub fn spawn(name: &'static str, mut command: Command) -> Followed {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wine starts");
        let stdout = Lines::follow(name, child.stdout.take().unwrap());
        let stderr = Lines::follow(name, child.stderr.take().unwrap());
        Followed {
            child,
            stdout,
            stderr,
        }
    }

    /// Its exit code, waited for (killed past [`PATIENCE`]).
    pub fn exit_code(&mut self) -> Option<i32> {
        hark_harness::process::wait_or_kill(&mut self.child, PATIENCE)
            .unwrap_or_else(|| {
                panic!(
                    "it did not exit: {}\nWindows processes alive:\n{}",
                    self.stderr.tail(20),
                    windows_processes().join("\n")
                )
            })
            .code()
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// How long a case waits for a Windows process to end.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// `hark.exe serve --prompter script:…` on the box's socket and store.
pub fn serve(hbox: &Box, script: Value) -> Followed {
    let script_path = hbox.sandbox.path("script.json");
    std::fs::write(&script_path, script.to_string()).unwrap();
    let mut command = hbox.hark(["serve", "--log-format", "json", "--prompter"]);
    command
        .arg(format!("script:{}", win(&script_path)))
        .arg("--socket")
        .arg(hbox.socket());
    let daemon = Followed::spawn("hark.exe serve", command);
    daemon.stderr.wait_for("hark serving the operator", |l| {
        l.contains("hark is serving the operator")
    });
    daemon
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The question most cases ask.
pub fn db() -> Value {
    json!({"questions": [{
        "question": "Which database?", "header": "Database", "multiSelect": false,
        "options": [
            {"label": "Postgres (Recommended)", "description": "Postgres"},
            {"label": "SQLite", "description": "SQLite"}
        ]
    }]})
}

/// Every Wine process's pid and command line (the Windows one), for a
/// case's failure.
pub fn windows_processes() -> Vec<String> {
    processes_with(".exe")
        .into_iter()
        .filter_map(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            Some(format!("  {pid}: {}", line.trim()))
        })
        .collect()
}

/// The Linux pids of Wine's processes whose command line holds `mark`.
pub fn processes_with(mark: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(mark))
        })
        .collect()
}

/// The fake's background process (`BACKGROUND`: `fake-claude.exe
/// --fake-sleep 600 LOG`) as a Linux pid. The agent's script follows it
/// with a `SHELL` line, whose tool use `hark run` shows (`→ Bash`): by
/// then it has been started and logged.
pub fn background(hbox: &Box, run: &Followed) -> u32 {
    run.stderr
        .wait_for("the agent's next tool", |l| l.contains("→ Bash"));
    assert!(
        hbox.logged()
            .iter()
            .any(|l| l.get("background_pid").is_some()),
        "the background process was started: {:?}",
        hbox.logged()
    );
    let found: Vec<u32> = processes_with(&win(&hbox.log()))
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--fake-sleep"))
        })
        .collect();
    assert_eq!(found.len(), 1, "one background process: {found:?}");
    found[0]
}
