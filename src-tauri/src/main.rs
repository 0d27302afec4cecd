//! `hark-app`: the desktop shell. Started by `hark app` (or plain `hark`).

fn main() -> std::process::ExitCode {
    hark_app::run()
}
