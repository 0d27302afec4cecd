//! `hark-app`: the desktop app's resident part. Started by `hark app` (or
//! plain `hark`); it starts `hark-window` when there is something to show.

#[allow(unsafe_code)]
fn main() -> std::process::ExitCode {
    // SAFETY: nothing has started a thread yet; this is main's first step.
    unsafe { hark_app::rendering::set_environment() };
    hark_app::run()
}
