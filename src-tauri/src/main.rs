//! `hark-app`: the desktop shell. Started by `hark app` (or plain `hark`).

#[allow(unsafe_code)]
fn main() -> std::process::ExitCode {
    // SAFETY: nothing has started a thread yet; this is main's first step.
    unsafe { hark_app::rendering::draw_on_the_cpu() };
    hark_app::run()
}
