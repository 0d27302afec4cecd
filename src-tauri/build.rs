//! Generates, from the one list of IPC commands (`app/src/ipc_commands.rs`), the
//! per-command permissions (`allow-inbox`, `allow-reply`, …) and the window's
//! capability, which grants exactly those and the event listener.

use std::path::PathBuf;

include!("../app/src/ipc_commands.rs");

/// The label of the app's one window (`windows::LABEL`).
const WINDOW: &str = "main";

/// The core permissions the page needs besides the commands: it listens
/// for `inbox-changed` and `view-changed`, and zooms (Ctrl+= and Ctrl+-,
/// Tauri's zoom keys, call `set_webview_zoom`).
const CORE_PERMISSIONS: &[&str] = &[
    "core:event:allow-listen",
    "core:event:allow-unlisten",
    "core:webview:allow-set-webview-zoom",
];

/// The window's capability, as Tauri reads a capability file.
fn capability() -> String {
    let permissions: Vec<String> = CORE_PERMISSIONS
        .iter()
        .map(|p| p.to_string())
        .chain(
            IPC_COMMANDS
                .iter()
                .map(|c| format!("allow-{}", c.replace('_', "-"))),
        )
        .map(|p| format!("\"{p}\""))
        .collect();
    format!(
        r#"{{
  "identifier": "main",
  "description": "The app's one window (the question modal and the inbox): every command in app/src/ipc_commands.rs, and listening to the app's events.",
  "windows": ["{WINDOW}"],
  "permissions": [{}]
}}
"#,
        permissions.join(", ")
    )
}

fn main() {
    println!("cargo:rerun-if-changed=../app/src/ipc_commands.rs");
    let dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("capabilities");
    std::fs::create_dir_all(&dir).expect("create the capabilities directory");
    let file = dir.join("main.json");
    std::fs::write(&file, capability()).expect("write the window's capability");
    // tauri-build takes the pattern for the whole build: leaking it is fine.
    let pattern: &'static str = file.to_string_lossy().into_owned().leak();
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .capabilities_path_pattern(pattern)
            .app_manifest(tauri_build::AppManifest::new().commands(IPC_COMMANDS)),
    )
    .expect("tauri build script failed");
}
