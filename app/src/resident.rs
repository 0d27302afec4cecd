//! What the resident process gives back each time it settles into idle
//! (started, or its window released; Linux): all day it holds only what
//! it uses while it waits.
//!
//! - The heap's free pages (glibc's `malloc_trim`, which also returns free
//!   pages inside the heap): what the window's work here freed goes back,
//!   rather than staying resident all day.
//! - The clean pages of its program and libraries that it mapped at start
//!   or while the window was up ([`hark_core::platform::pages`]): this
//!   process's code and read-only data, most of them mapped around the few
//!   functions start-up ran once. What runs again faults back from the page
//!   cache. Only what the loader loaded, with its list held: this process
//!   has other threads, and none can unload a library under the drop.

/// How long the work around settling into idle goes on once it starts:
/// at start, the tray registered with the desktop's watcher and its menu
/// drawn; at a release, the tray and the notifications brought up to date
/// (~0.1 s here). Not the window process's telling it waits, tried: at
/// start that comes ~0.1 s in, and an XEmbed tray draws the icon ~35 ms
/// later, faulting ~14 MB of GTK's and cairo's pages back (`bench/desktop`
/// idle before any question: 41.4 MB against 27.1).
const SETTLES: std::time::Duration = std::time::Duration::from_millis(500);

/// Gives back once that work has settled: one timer, not a poll. Measured
/// (`bench/desktop`), the app holds 11 MB resident before any question
/// where a give-back at once held 24 (the settling work faults its pages
/// back), and after a release the same.
pub fn give_back_once_settled(runtime: &tokio::runtime::Handle) {
    runtime.spawn(async {
        tokio::time::sleep(SETTLES).await;
        give_back();
    });
}

/// Gives back what this process holds but does not use while idle.
fn give_back() {
    #[cfg(target_os = "linux")]
    {
        #[cfg(target_env = "gnu")]
        // SAFETY: malloc_trim only takes the allocator's own lock.
        #[allow(unsafe_code)]
        unsafe {
            libc::malloc_trim(0);
        }
        let dropped =
            hark_core::platform::pages::drop_clean(hark_core::platform::pages::Mappings::Loaded);
        tracing::info!(dropped_kib = dropped / 1024, "idle: pages given back");
    }
}
