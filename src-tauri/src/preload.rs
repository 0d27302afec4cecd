//! WebKit's processes started faster (Linux, glibc): their dynamic loader
//! spends most of its time finding symbols, and most of those lookups are
//! one library's references to itself.
//!
//! WebKitGTK (2.44 on) links flite for speech synthesis, and flite's
//! "time" voice (`libflite_cmu_time_awb`) is tables of pointers relocated
//! by name: 31,288 of the 71,752 symbols bound when a WebKit process
//! starts (`LD_DEBUG=bindings`, WebKitGTK 2.50 on Debian 12). The loader
//! looks each up from the front of the process's list of libraries, where
//! this one sits 57th of 169, and every library before it is searched in
//! vain first. Preloaded, it sits second, right after the program; it is
//! loaded either way, and every symbol binds to the same library as
//! before (the bindings of a web process, with and without, diffed equal).
//! Measured: a bare `WebKitWebProcess` start 93 → 72 ms median; the web
//! process starts at each show, the network process beside it.
//!
//! Set in this process's environment, which WebKit's processes inherit
//! (this process spawns nothing else), and only when the library is one
//! this process loaded (WebKit links it here too), by the path it was
//! loaded from. The user's own `LD_PRELOAD` follows it.

use std::ffi::OsString;
use std::path::PathBuf;

use hark_core::platform::pages;

/// The library's file name, up to its version.
const VOICE: &str = "libflite_cmu_time_awb.so";

/// Puts the voice library in front of `LD_PRELOAD` for the processes this
/// one starts; the path preloaded, if it did.
///
/// # Safety
/// It writes the process environment, so it must run before any other
/// thread exists (first thing in `main`).
#[allow(unsafe_code)]
pub unsafe fn for_webkit() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let voice = loaded(&maps, VOICE)?;
    let mut preload = OsString::from(&voice);
    if let Some(theirs) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(theirs);
    }
    // SAFETY: the caller guarantees this process has one thread.
    unsafe { std::env::set_var("LD_PRELOAD", preload) };
    Some(voice)
}

/// The path of the mapped file named `name` up to its version, in the
/// text of `/proc/self/maps`. A path with a colon or a space is left out:
/// `LD_PRELOAD` cannot hold it.
fn loaded(maps: &str, name: &str) -> Option<PathBuf> {
    maps.lines()
        .filter_map(pages::mapped_path)
        .filter(|path| path.starts_with('/') && !path.contains([':', ' ']))
        .find(|path| pages::named_up_to_version(path, name))
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 fe:01 123 /usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/WebKitWebProcess
7f0000000000-7f0000100000 r--p 00000000 fe:01 456 /usr/lib/x86_64-linux-gnu/libflite_cmu_time_awb.so.2.2
7f0000200000-7f0000300000 rw-p 00000000 00:00 0
7f0000400000-7f0000500000 r--p 00000000 fe:01 789 /usr/lib/x86_64-linux-gnu/libflite.so.1
";

    #[test]
    fn finds_the_voice_by_the_path_it_was_loaded_from() {
        assert_eq!(
            loaded(MAPS, VOICE),
            Some(PathBuf::from(
                "/usr/lib/x86_64-linux-gnu/libflite_cmu_time_awb.so.2.2"
            ))
        );
    }

    #[test]
    fn a_process_without_it_preloads_nothing() {
        let without: String = MAPS.lines().filter(|l| !l.contains("awb")).collect();
        assert_eq!(loaded(&without, VOICE), None);
    }

    #[test]
    fn a_path_ld_preload_cannot_hold_is_left_out() {
        for odd in [
            "7f00-7f01 r--p 0 fe:01 1 /opt/a:b/libflite_cmu_time_awb.so.1\n",
            "7f00-7f01 r--p 0 fe:01 1 /opt/a b/libflite_cmu_time_awb.so.1\n",
            "7f00-7f01 r--p 0 fe:01 1 /usr/lib/libflite_cmu_time_awb.so.1 (deleted)\n",
        ] {
            assert_eq!(loaded(odd, VOICE), None, "{odd}");
        }
    }
}
