//! A window process started ahead of time (Linux): the app starts it
//! while nothing is shown, so that when something is, the ~170 libraries
//! WebKit brings are loaded, relocated and initialised already (measured:
//! most of the ~125 ms the process took before WebKit's own processes
//! started). It waits on its channel before it builds anything; while it
//! waits it gives back its clean file pages (they stay in the page cache
//! and fault back when it wakes), so it costs the idle app only what the
//! loader wrote (~10 MB).

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
        let dropped = drop_clean_pages();
        tracing::debug!(
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

/// Drops this process's clean, unwritable file mappings from its page
/// tables (`MADV_DONTNEED`); what they held stays in the page cache. A
/// mapping with a dirty page (a library's relocated data) is left alone.
/// The bytes dropped.
fn drop_clean_pages() -> usize {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let mut dropped = 0;
    for (start, end) in clean_file_mappings(&smaps) {
        let len = end - start;
        // SAFETY: the range is one of this process's own mappings, of a
        // file, not writable and with no dirty page: dropping its pages
        // loses nothing (they are read again from the file, unchanged),
        // and nothing here holds a reference into it across the call.
        #[allow(unsafe_code)]
        let done =
            unsafe { rustix::mm::madvise(start as *mut _, len, rustix::mm::Advice::LinuxDontNeed) };
        if done.is_ok() {
            dropped += len;
        }
    }
    dropped
}

/// The address ranges of `smaps`'s mappings of a file that are neither
/// writable nor dirty.
fn clean_file_mappings(smaps: &str) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    // The last mapping read is the last found, until a dirty page drops it.
    let mut last_found = false;
    for line in smaps.lines() {
        if let Some(range) = mapping(line) {
            last_found = range.is_some();
            found.extend(range);
        } else if last_found
            && let Some(kib) = line
                .strip_prefix("Private_Dirty:")
                .or_else(|| line.strip_prefix("Shared_Dirty:"))
            && kib.trim().trim_end_matches("kB").trim() != "0"
        {
            found.pop();
            last_found = false;
        }
    }
    found
}

/// A mapping's header line: `Some(range)` when it maps a file, unwritable;
/// `Some(None)` for another mapping; `None` for a field line.
fn mapping(line: &str) -> Option<Option<(usize, usize)>> {
    let mut words = line.split_whitespace();
    let (start, end) = words.next()?.split_once('-')?;
    let (start, end) = (
        usize::from_str_radix(start, 16).ok()?,
        usize::from_str_radix(end, 16).ok()?,
    );
    let perms = words.next()?;
    let path = words.nth(3);
    let clean = !perms.contains('w') && path.is_some_and(|p| p.starts_with('/'));
    Some(clean.then_some((start, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unwritable_file_mappings_with_no_dirty_page_are_dropped() {
        let smaps = "\
5600000000-5600001000 r--p 00000000 fe:01 12 /usr/bin/x
Size:                  4 kB
Private_Dirty:         0 kB
Shared_Dirty:          0 kB
5600001000-5600003000 r-xp 00001000 fe:01 12 /usr/bin/x
Private_Dirty:         0 kB
5600003000-5600004000 r--p 00003000 fe:01 12 /usr/bin/x
Private_Dirty:         4 kB
5600004000-5600005000 rw-p 00004000 fe:01 12 /usr/bin/x
Private_Dirty:         0 kB
7f00000000-7f00001000 r--p 00000000 00:00 0
Private_Dirty:         0 kB
7ffd000000-7ffd001000 r-xp 00000000 00:00 0 [vdso]
Private_Dirty:         0 kB
";
        assert_eq!(
            clean_file_mappings(smaps),
            [(0x5600000000, 0x5600001000), (0x5600001000, 0x5600003000)]
        );
    }
}
