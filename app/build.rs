//! On Windows, gives `hark-app.exe` the app's icon (the Start-menu shortcut
//! and the taskbar show it), as tauri-build does for `hark-window.exe`.

fn main() {
    println!("cargo:rerun-if-changed=../icons/icon.ico");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("windows") {
        let mut resource = tauri_winres::WindowsResource::new();
        resource.set_icon("../icons/icon.ico");
        resource
            .compile()
            .expect("cannot compile hark-app.exe's resources (the icon)");
    }
}
