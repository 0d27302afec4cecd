//! How the page is drawn: on the CPU, with no GL in the app's processes.
//!
//! The page is plain forms, which gains nothing from a GPU, while GL costs
//! the app a good part of its footprint: with no GPU driver (Xvfb, a VM, a
//! remote desktop) every process that starts EGL or GLX loads Mesa's
//! software GL and LLVM (44 MB resident). WebKitGTK and GTK are told so
//! through their environment, set here before GTK starts and inherited by
//! the window process (measured with `bench/desktop`):
//!
//! | variable | what it saves |
//! | --- | --- |
//! | `WEBKIT_DISABLE_COMPOSITING_MODE=1` | a GL compositor in the web process and in the app (~70 MB) |
//! | `WEBKIT_DISABLE_DMABUF_RENDERER=1` | GPU buffers to hand frames over in; they go through shared memory (~4 MB) |
//! | `WEBKIT_WEB_RENDER_DEVICE_FILE=/dev/null` | the app starting EGL only to learn the GPU's render node, which a page drawn on the CPU never uses (~10 MB) |
//! | `GDK_GL=disable` | GTK's own GL: in the window (~1 MB), and in this resident process, whose GDK otherwise loads Mesa and LLVM at start (44 MB) |
//!
//! The web process still starts EGL (WebKit will not run without a display
//! for it), so Mesa stays there.
//!
//! A variable the user has already set is left as it is, so any of these
//! can be overridden. The runs the app dispatches do not inherit the ones
//! the app set: [`set_by_the_app`] names them for the dispatcher to take out.
//! Other platforms draw through their system webview and are left alone.

use std::sync::OnceLock;

/// The variables, and the value each gets when unset.
#[cfg(target_os = "linux")]
const SETTINGS: &[(&str, &str)] = &[
    ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
    ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
    ("WEBKIT_WEB_RENDER_DEVICE_FILE", "/dev/null"),
    ("GDK_GL", "disable"),
];
#[cfg(not(target_os = "linux"))]
const SETTINGS: &[(&str, &str)] = &[];

static SET_BY_THE_APP: OnceLock<Vec<&'static str>> = OnceLock::new();

/// Sets each of [`SETTINGS`] the environment does not already have.
///
/// # Safety
/// It writes the process environment, so it must run before any other
/// thread exists (first thing in `main`).
#[allow(unsafe_code)]
pub unsafe fn draw_on_the_cpu() {
    let mut set = Vec::new();
    for (name, value) in SETTINGS {
        if std::env::var_os(name).is_none() {
            // SAFETY: the caller guarantees this process has one thread.
            unsafe { std::env::set_var(name, value) };
            set.push(*name);
        }
    }
    let _ = SET_BY_THE_APP.set(set);
}

/// The variables [`draw_on_the_cpu`] set (not the user's own).
pub fn set_by_the_app() -> Vec<&'static str> {
    SET_BY_THE_APP.get().cloned().unwrap_or_default()
}
