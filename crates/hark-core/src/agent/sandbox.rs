//! Claude Code's own Bash sandbox, as a read-only run turns it on: defence
//! in depth under the write-mode gate, so that a command the gate passes
//! unasked (a misclassification) still cannot write outside the working
//! directory or reach the network.

use std::path::Path;

use serde_json::{Map, Value, json};

/// The sandbox a read-only run pins, whatever the user's settings say.
/// Measured with Claude Code 2.1.332 on Linux (bubblewrap 0.8, socat):
/// - `enabled`: Bash runs under bubblewrap: the working directory and
///   `$TMPDIR` (`/tmp/claude-UID`) are writable, the rest of the filesystem is
///   read-only, and the network is reached only through a proxy that refuses
///   every host no setting allows (in `-p` nobody is asked).
/// - `failIfUnavailable`: with bwrap or socat missing the CLI refuses to start
///   (exit 1, no model call); without it, it warns and runs Bash unsandboxed.
/// - `allowUnsandboxedCommands` (set by [`read_only_settings`], not here):
///   with `false` the Bash tool's `dangerouslyDisableSandbox` is ignored;
///   with `true` such a call goes to the gate and, allowed, runs outside the
///   sandbox.
/// - `autoAllowBashIfSandboxed: false`: every Bash call still goes through
///   the permission flow, so the gate sees it; with `true` a sandboxed write
///   in the working directory runs without calling `approve`.
/// - `allowNestedUserNamespaces`, `filesystem.disabled`: each would undo the
///   filesystem isolation (a `--settings` with `filesystem.disabled: true`
///   let a write to `/tmp` through).
///
/// A `--settings` value wins over user, project and local settings for these
/// keys; of two `--settings` flags only the last counts, so hark passes one.
pub const READ_ONLY_SANDBOX: [(&str, bool); 4] = [
    ("enabled", true),
    ("failIfUnavailable", true),
    ("autoAllowBashIfSandboxed", false),
    ("allowNestedUserNamespaces", false),
];

/// The programs Claude Code's Bash sandbox needs on `PATH` here: on Linux
/// bubblewrap and socat (its network proxy); macOS's sandbox is the
/// system's own. With [`READ_ONLY_SANDBOX`]'s `failIfUnavailable` the CLI
/// refuses to start without them ("sandbox required but unavailable"), so
/// a read-only run checks for them first.
pub const NEEDS: &[&str] = if cfg!(target_os = "linux") {
    &["bwrap", "socat"]
} else {
    &[]
};

/// Those of [`NEEDS`] that are not on `PATH`.
pub fn missing() -> Vec<&'static str> {
    NEEDS
        .iter()
        .copied()
        .filter(|program| crate::platform::find_program(Path::new(program)).is_none())
        .collect()
}

/// The `--settings` of a read-only run: the user's own settings (`{}` when
/// they gave none) with [`READ_ONLY_SANDBOX`] pinned over theirs, the
/// filesystem isolation kept on, and no `excludedCommands` (nothing leaves
/// the sandbox unasked). Whatever else they set (`filesystem.allowWrite`,
/// `network.allowedDomains`, keys outside `sandbox`) is kept: it is theirs.
///
/// With an operator `attached`, the model may ask to run a command outside
/// the sandbox (`allowUnsandboxedCommands`): a push or a write outside the
/// project that the operator approves must work, and the gate asks for
/// every such call, whatever the command (see `gate::policy`). With nobody
/// attached nothing can be approved: no command leaves the sandbox, and
/// the working directory `cwd` (absolute) is read-only too.
pub fn read_only_settings(user: Value, cwd: &Path, attached: bool) -> Value {
    let mut settings = match user {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let sandbox = object_at(&mut settings, "sandbox");
    for (key, value) in READ_ONLY_SANDBOX {
        sandbox.insert(key.to_owned(), Value::Bool(value));
    }
    sandbox.insert("allowUnsandboxedCommands".to_owned(), Value::Bool(attached));
    sandbox.remove("excludedCommands");
    let filesystem = object_at(sandbox, "filesystem");
    filesystem.insert("disabled".to_owned(), Value::Bool(false));
    if !attached {
        let path = Value::String(cwd.display().to_string());
        match filesystem.entry("denyWrite").or_insert_with(|| json!([])) {
            Value::Array(paths) => paths.push(path),
            other => *other = json!([path]),
        }
    }
    Value::Object(settings)
}

/// Inside hark's confinement, as root: Claude Code's sandbox reuses the
/// run's procfs (`enableWeakerNestedSandbox`) instead of mounting its own,
/// which the kernel refuses there because bubblewrap, for root, covers
/// `/proc/irq` and `/proc/bus` with read-only mounts (measured: every Bash
/// call failed with "Can't mount proc on /newroot/proc"). What that procfs
/// shows is hark's sandbox alone, the run's own processes; measured, every
/// `/proc/PID/root` outside Claude Code's sandbox was "Permission denied".
pub fn nest_as_root(settings: &mut Value) {
    if let Value::Object(map) = settings {
        object_at(map, "sandbox").insert("enableWeakerNestedSandbox".to_owned(), Value::Bool(true));
    }
}

/// The object under `key`, made an empty one if it is missing or not one.
pub(super) fn object_at<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let slot = map.entry(key).or_insert_with(|| json!({}));
    if !slot.is_object() {
        *slot = json!({});
    }
    match slot {
        Value::Object(object) => object,
        _ => unreachable!("made an object just above"),
    }
}
