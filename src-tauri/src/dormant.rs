//! A window process started ahead of time (Linux): the app starts it
//! while nothing is shown, so that when something is, the ~170 libraries
//! WebKit brings are loaded, relocated and initialised already (measured:
//! most of the ~125 ms the process took before WebKit's own processes
//! started), GTK and Tauri are set up (~20 ms more), and GTK has made its
//! first window once (~30 ms more on this 2-core machine). It waits on its
//! channel before it builds the window (whose webview starts WebKit's
//! processes); while it waits it gives back its libraries' clean pages
//! (they stay in the page cache and fault back when it wakes), so it costs
//! the idle app only what the loader and GTK wrote.

use hark_core::platform::pages::{self, Mappings};
use rustix::event::{PollFd, PollFlags, Timespec};

/// How the wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Woken {
    /// The app sent something: build the window.
    Needed,
    /// The app let go of it (released, or quitting) before it was needed.
    LetGo,
}

/// Waits until the app sends something on the channel (stdin) or ends it;
/// reads nothing (the channel's reader takes what came).
pub fn wait() -> Woken {
    let stdin = std::io::stdin();
    if !ready(&stdin, Some(&Timespec::default())) {
        warm_gtk();
        // GTK is up and may have threads of its own: what the loader
        // loaded, with its list held.
        let dropped = pages::drop_clean(Mappings::Loaded);
        tracing::info!(
            dropped_kib = dropped / 1024,
            "window process: waiting to be needed"
        );
        ready(&stdin, None);
    }
    // Ready with nothing to read: the channel's end, the app letting go.
    match rustix::io::ioctl_fionread(&stdin) {
        Ok(0) => Woken::LetGo,
        _ => Woken::Needed,
    }
}

/// Whether the channel has something to read (or its end) within `timeout`.
fn ready(stdin: &std::io::Stdin, timeout: Option<&Timespec>) -> bool {
    let fds = &mut [PollFd::new(stdin, PollFlags::IN)];
    matches!(rustix::event::poll(fds, timeout), Ok(n) if n > 0)
}

/// Has GTK do, while nothing waits, what its first window does once: parse
/// the theme, start Pango's fonts (fontconfig reads its configuration and
/// caches), realize an X window. Measured: the window built in ~25 ms of a
/// show instead of ~55 (this machine, `bench/desktop`); what it leaves is
/// the theme and the font list (the pages it touched are given back).
fn warm_gtk() {
    use gtk::prelude::*;
    let window = gtk::Window::new(gtk::WindowType::Toplevel);
    let label = gtk::Label::new(Some("hark"));
    window.add(&label);
    window.realize();
    // Lays the text out: Pango's font map and fontconfig come up.
    let _ = label.preferred_width();
    // SAFETY: this window is ours alone, never shown, and no reference to
    // it outlives the call.
    #[allow(unsafe_code)]
    unsafe {
        window.destroy();
    }
}
