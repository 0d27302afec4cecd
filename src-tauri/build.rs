//! Generates the per-command permissions (`allow-inbox`, `allow-reply`, …)
//! that the window's capability file grants.

fn main() {
    let commands = &[
        "inbox",
        "reply",
        "verdict",
        "dismiss",
        "open_item",
        "shown",
        "dispatch",
        "run_output",
    ];
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(commands)),
    )
    .expect("tauri build script failed");
}
