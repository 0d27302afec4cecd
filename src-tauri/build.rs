//! Generates the per-command permissions (`allow-inbox`, `allow-reply`, …)
//! that the capability files grant window by window.

fn main() {
    let commands = &[
        "inbox",
        "reply",
        "verdict",
        "dismiss",
        "open_item",
        "shown",
        "dispatch",
    ];
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .app_manifest(tauri_build::AppManifest::new().commands(commands)),
    )
    .expect("tauri build script failed");
}
