//! What the window's processes run with: the page drawn on the CPU, with no
//! GL in the app's processes, its scripts interpreted, and one malloc arena.
//!
//! The page is plain forms, which gains nothing from a GPU or a JIT, while
//! both cost the app a good part of its footprint: with no GPU driver (Xvfb,
//! a VM, a remote desktop) every process that starts EGL or GLX loads Mesa's
//! software GL and LLVM (44 MB resident). WebKitGTK, JavaScriptCore, GTK,
//! Mesa and glibc are told so through their environment, set here before
//! anything starts and inherited by the window process (measured with
//! `bench/desktop`, the window shown):
//!
//! | variable | what it saves |
//! | --- | --- |
//! | `WEBKIT_DISABLE_COMPOSITING_MODE=1` | a GL compositor in the web process and in the app (~70 MB) |
//! | `WEBKIT_DISABLE_DMABUF_RENDERER=1` | GPU buffers to hand frames over in; they go through shared memory (~4 MB) |
//! | `WEBKIT_WEB_RENDER_DEVICE_FILE=/dev/null` | the app starting EGL only to learn the GPU's render node, which a page drawn on the CPU never uses (~10 MB) |
//! | `GDK_GL=disable` | GTK's own GL: in the window (~1 MB), and in this resident process, whose GDK otherwise loads Mesa and LLVM at start (44 MB) |
//! | `JSC_useJIT=false` | JavaScriptCore's JIT in the window and the web process (~7 MB); the page's few handlers run in its interpreter, as fast to the eye (ask → modal median unchanged), and neither process holds its 1 GB writable *and* executable region while it shows what agents wrote |
//! | `GALLIUM_DRIVER=softpipe` | llvmpipe's start (LLVM's code generator) when Mesa's software GL comes up in the web process, which draws nothing with it (~1 MB); a GPU's own driver is not affected |
//! | `MESA_SHADER_CACHE_DISABLE=true` | the web process opening Mesa's shader cache and its thread, for shaders it never compiles |
//! | `MALLOC_ARENA_MAX=1` | glibc's arena per thread (up to 8 a core) in the window's processes, each keeping what its thread freed (~1 MB); this process sets its own with `mallopt` |
//!
//! The web process still starts EGL (WebKit 2.50 creates an EGL display for
//! every page and aborts without one), so Mesa and LLVM stay there.
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
    ("JSC_useJIT", "false"),
    ("GALLIUM_DRIVER", "softpipe"),
    ("MESA_SHADER_CACHE_DISABLE", "true"),
    ("MALLOC_ARENA_MAX", "1"),
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
pub unsafe fn set_environment() {
    let mut set = Vec::new();
    for (name, value) in SETTINGS {
        if std::env::var_os(name).is_none() {
            // SAFETY: the caller guarantees this process has one thread.
            unsafe { std::env::set_var(name, value) };
            set.push(*name);
            // SAFETY: as above; mallopt only tunes the allocator.
            unsafe { apply_here(name, value) };
        }
    }
    let _ = SET_BY_THE_APP.set(set);
}

/// What a setting does to this process too: glibc read `MALLOC_ARENA_MAX`
/// before `main`, so the arena count the window's processes get is this
/// process's by `mallopt` (which applies before a second thread allocates).
#[allow(unsafe_code)]
unsafe fn apply_here(name: &str, value: &str) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if name == "MALLOC_ARENA_MAX"
        && let Ok(arenas) = value.parse()
    {
        // SAFETY: the caller guarantees this process has one thread.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) };
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = (name, value);
}

/// The variables [`set_environment`] set (not the user's own).
pub fn set_by_the_app() -> Vec<&'static str> {
    SET_BY_THE_APP.get().cloned().unwrap_or_default()
}
