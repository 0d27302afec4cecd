//! `hark-window`: the desktop app's window (the modal and the inbox),
//! started by `hark-app` when there is something to show; it inherits the
//! app's rendering settings (`hark_app::rendering`).

fn main() -> std::process::ExitCode {
    hark_window::run()
}
