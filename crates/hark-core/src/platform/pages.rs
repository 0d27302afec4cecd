//! Giving back clean file pages a process has mapped but does not need
//! (Linux). A page of a program or library the process touched once (at
//! start, or to show a window since gone) stays in its page tables, and in
//! its resident set, until it exits; the kernel maps up to 16 neighbours of
//! every page it faults in besides (fault-around), so a few hundred
//! scattered functions run once keep megabytes resident. Dropping a clean
//! mapping's pages (`MADV_DONTNEED`) loses nothing: they stay in the page
//! cache, and what runs again faults back from it, unchanged.
//!
//! A mapping that is writable, or holds a page of its own (a library's
//! relocated data, copied on the loader's write), is never touched:
//! dropping its pages would lose what was written.

use std::path::Path;

/// Which of the process's clean file mappings to drop.
#[derive(Debug, Clone, Copy)]
pub enum Mappings<'a> {
    /// Those of this one file: for a process with other threads, the
    /// program itself (`/proc/self/exe`), which is never unmapped while it
    /// runs, so no other thread can map anything else into its ranges
    /// between the read of `smaps` and the drop.
    Of(&'a Path),
    /// Those of the program and every library loaded, with the loader's
    /// list of them held (glibc): safe beside other threads, for no
    /// library can be unloaded, nor anything mapped in its place, until
    /// the drop is done. Elsewhere, as [`Mappings::Of`] the program.
    Loaded,
}

/// Drops the chosen clean, unwritable file mappings from this process's
/// page tables; the bytes dropped (0 when `smaps` cannot be read).
pub fn drop_clean(which: Mappings) -> usize {
    match which {
        Mappings::Loaded => loaded::held(|objects| drop_clean_within(which, Some(objects))),
        _ => drop_clean_within(which, None),
    }
}

/// Drops `which`'s clean mappings; with `objects`, only those that lie
/// within one of these address ranges.
fn drop_clean_within(which: Mappings, objects: Option<&[(usize, usize)]>) -> usize {
    let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
        return 0;
    };
    let within = |(start, end): (usize, usize)| {
        objects.is_none_or(|objects| objects.iter().any(|&(s, e)| s <= start && end <= e))
    };
    let mut dropped = 0;
    for (start, end) in clean_file_mappings(&smaps, which)
        .into_iter()
        .filter(|&range| within(range))
    {
        let len = end - start;
        // SAFETY: the range is one of this process's own mappings, of a
        // file, not writable and with no dirty page, and (by `Mappings`)
        // nothing else can be mapped into it before the call: dropping its
        // pages loses nothing (they are read again from the file,
        // unchanged), and a thread running code in it faults it back in.
        #[allow(unsafe_code)]
        let done =
            unsafe { rustix::mm::madvise(start as *mut _, len, rustix::mm::Advice::LinuxDontNeed) };
        if done.is_ok() {
            dropped += len;
        }
    }
    dropped
}

/// The loaded objects, held loaded.
mod loaded {
    /// Runs `f` with the address ranges of the program and every library
    /// loaded (each from its first to its last segment), while none of
    /// them can be unloaded: glibc's `dl_iterate_phdr` holds the loader's
    /// lock across its callbacks, and `dlclose` takes the object off the
    /// list under that lock before it unmaps it (the lock is recursive,
    /// so the list is read again inside). Elsewhere, only the program's
    /// own mapping, which is never unmapped.
    #[cfg(target_env = "gnu")]
    pub fn held<F: FnOnce(&[(usize, usize)]) -> usize>(f: F) -> usize {
        use std::ffi::{c_int, c_void};

        #[allow(unsafe_code)]
        unsafe extern "C" fn collect(
            info: *mut libc::dl_phdr_info,
            _size: libc::size_t,
            data: *mut c_void,
        ) -> c_int {
            // SAFETY: `data` is the Vec below and `info` the loader's,
            // valid for this call; its headers are `dlpi_phnum` long.
            #[allow(unsafe_code)]
            unsafe {
                let ranges = &mut *data.cast::<Vec<(usize, usize)>>();
                let info = &*info;
                let headers =
                    std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
                let loads = headers.iter().filter(|h| h.p_type == libc::PT_LOAD);
                let base = info.dlpi_addr as usize;
                let start = loads.clone().map(|h| base + h.p_vaddr as usize).min();
                let end = loads.map(|h| base + (h.p_vaddr + h.p_memsz) as usize).max();
                if let (Some(start), Some(end)) = (start, end) {
                    ranges.push((start, end));
                }
            }
            0
        }

        struct Held<F> {
            f: Option<F>,
            dropped: usize,
        }

        #[allow(unsafe_code)]
        unsafe extern "C" fn first<F: FnOnce(&[(usize, usize)]) -> usize>(
            _info: *mut libc::dl_phdr_info,
            _size: libc::size_t,
            data: *mut c_void,
        ) -> c_int {
            let mut ranges: Vec<(usize, usize)> = Vec::new();
            // SAFETY: `data` is the `Held` below; the nested call runs
            // `collect` on the list this thread holds (the lock is
            // recursive).
            #[allow(unsafe_code)]
            unsafe {
                let held = &mut *data.cast::<Held<F>>();
                libc::dl_iterate_phdr(Some(collect), (&raw mut ranges).cast());
                if let Some(f) = held.f.take() {
                    held.dropped = f(&ranges);
                }
            }
            1
        }

        let mut held = Held {
            f: Some(f),
            dropped: 0,
        };
        // SAFETY: `first` only reads the loader's list and runs `f`.
        #[allow(unsafe_code)]
        unsafe {
            libc::dl_iterate_phdr(Some(first::<F>), (&raw mut held).cast());
        }
        held.dropped
    }

    #[cfg(not(target_env = "gnu"))]
    pub fn held(_: impl FnOnce(&[(usize, usize)]) -> usize) -> usize {
        match std::fs::read_link("/proc/self/exe") {
            Ok(program) => super::drop_clean_within(super::Mappings::Of(&program), None),
            Err(_) => 0,
        }
    }
}

/// The address ranges of `smaps`'s mappings of a file (of the one file
/// `which` names, if it does) that are not writable and hold no page of
/// their own (`Anonymous`: a private mapping's page once written, such as
/// relocated data). A page the file's cache holds dirty (a program just
/// built) is the file's, not the mapping's: it stays in the cache.
fn clean_file_mappings(smaps: &str, which: Mappings) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    // The last mapping read is the last found, until a page of its own
    // drops it.
    let mut last_found = false;
    for line in smaps.lines() {
        if let Some(range) = mapping(line, which) {
            last_found = range.is_some();
            found.extend(range);
        } else if last_found
            && let Some(kib) = line.strip_prefix("Anonymous:")
            && kib.trim().trim_end_matches("kB").trim() != "0"
        {
            found.pop();
            last_found = false;
        }
    }
    found
}

/// A mapping's header line: `Some(range)` when it maps a file (the one
/// `which` names, if it does), unwritable; `Some(None)` for another
/// mapping; `None` for a field line.
fn mapping(line: &str, which: Mappings) -> Option<Option<(usize, usize)>> {
    let mut words = line.split_whitespace();
    let (start, end) = words.next()?.split_once('-')?;
    let (start, end) = (
        usize::from_str_radix(start, 16).ok()?,
        usize::from_str_radix(end, 16).ok()?,
    );
    let perms = words.next()?;
    let path = mapped_path(line)?;
    let chosen = path.starts_with('/')
        && match which {
            // Any file here; those outside the loaded objects are left
            // out by `drop_clean_within`.
            Mappings::Loaded => true,
            Mappings::Of(file) => Path::new(path) == file,
        };
    Some((chosen && !perms.contains('w')).then_some((start, end)))
}

/// The path of a mapping's line of `/proc/PID/maps` or `smaps`: what
/// follows its fifth field, the inode (it may hold spaces, and a
/// ` (deleted)`); `None` for a field line, which has no such fields.
pub fn mapped_path(line: &str) -> Option<&str> {
    let mut path = line;
    for _ in 0..5 {
        path = path.trim_start().split_once(char::is_whitespace)?.1;
    }
    Some(path.trim())
}

/// Whether the file at `path` is named `name` up to its version (a
/// library's `libx.so` for `libx.so.1.2`).
pub fn named_up_to_version(path: &str, name: &str) -> bool {
    path.rsplit('/')
        .next()
        .is_some_and(|file| file.starts_with(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
5600000000-5600001000 r--p 00000000 fe:01 12 /usr/bin/x
Size:                  4 kB
Private_Dirty:         0 kB
Anonymous:             0 kB
5600001000-5600003000 r-xp 00001000 fe:01 12 /usr/bin/x
Shared_Dirty:          8 kB
Anonymous:             0 kB
5600003000-5600004000 r--p 00003000 fe:01 12 /usr/bin/x
Private_Dirty:         4 kB
Anonymous:             4 kB
5600004000-5600005000 rw-p 00004000 fe:01 12 /usr/bin/x
Anonymous:             0 kB
7e00000000-7e00001000 r-xp 00000000 fe:01 13 /usr/lib/my lib.so
Anonymous:             0 kB
7f00000000-7f00001000 r--p 00000000 00:00 0
Anonymous:             0 kB
7ffd000000-7ffd001000 r-xp 00000000 00:00 0                          [vdso]
Anonymous:             0 kB
";

    #[test]
    fn a_mapping_line_gives_its_whole_path_and_a_field_line_none() {
        let paths: Vec<_> = SMAPS.lines().filter_map(mapped_path).collect();
        assert_eq!(paths[0], "/usr/bin/x");
        assert!(paths.contains(&"/usr/lib/my lib.so"));
        assert!(paths.contains(&"[vdso]"));
        assert_eq!(mapped_path("Anonymous:             0 kB"), None);
        assert!(named_up_to_version("/usr/lib/my lib.so", "my lib"));
        assert!(!named_up_to_version("/usr/lib/my lib.so", "lib"));
    }

    #[test]
    fn only_unwritable_file_mappings_with_no_page_of_their_own_are_dropped() {
        assert_eq!(
            clean_file_mappings(SMAPS, Mappings::Loaded),
            [
                (0x5600000000, 0x5600001000),
                (0x5600001000, 0x5600003000),
                (0x7e00000000, 0x7e00001000)
            ]
        );
    }

    #[test]
    fn one_file_is_only_that_file() {
        assert_eq!(
            clean_file_mappings(SMAPS, Mappings::Of(Path::new("/usr/bin/x"))),
            [(0x5600000000, 0x5600001000), (0x5600001000, 0x5600003000)]
        );
        assert_eq!(
            clean_file_mappings(SMAPS, Mappings::Of(Path::new("/usr/lib/my lib.so"))),
            [(0x7e00000000, 0x7e00001000)]
        );
        assert!(clean_file_mappings(SMAPS, Mappings::Of(Path::new("/usr/bin/y"))).is_empty());
    }

    /// The resident kB of this process's mappings of `file`.
    fn resident_kib(file: &Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut ours = false;
        let mut kib = 0;
        for line in smaps.lines() {
            if let Some(range) = mapping(line, Mappings::Loaded) {
                ours = range.is_some() && line.trim_end().ends_with(file.to_str().unwrap());
            } else if ours && let Some(rss) = line.strip_prefix("Rss:") {
                kib += rss
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap();
            }
        }
        kib
    }

    /// Beside other threads, only what the loader loaded is dropped: a
    /// file another part of the process mapped (and could unmap, and map
    /// something else in its place) is left as it is.
    #[test]
    fn loaded_objects_are_given_back_and_no_other_file_mapping() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, &[7u8; 64 * 1024]).unwrap();
        // SAFETY: a fresh read-only private mapping of a file this test
        // owns, unmapped below.
        #[allow(unsafe_code)]
        let mapped = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                64 * 1024,
                rustix::mm::ProtFlags::READ,
                rustix::mm::MapFlags::PRIVATE,
                file.as_file(),
                0,
            )
        }
        .unwrap();
        // SAFETY: within the mapping just made.
        #[allow(unsafe_code)]
        let sum: u64 = (0..16)
            .map(|page| u64::from(unsafe { *mapped.cast::<u8>().add(page * 4096) }))
            .sum();
        assert_eq!(sum, 16 * 7);
        let ours = file.path().to_owned();
        assert!(resident_kib(&ours) > 0, "the file's pages were read");

        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let before = resident_kib(&exe);
        let dropped = drop_clean(Mappings::Loaded);
        assert!(
            dropped > 0,
            "the loaded objects' clean mappings were dropped"
        );
        assert!(resident_kib(&exe) < before, "the program's among them");
        assert!(resident_kib(&ours) > 0, "the file mapped apart was left");
        // SAFETY: the mapping made above, used no more.
        #[allow(unsafe_code)]
        unsafe {
            rustix::mm::munmap(mapped, 64 * 1024).unwrap();
        }
    }

    #[test]
    fn the_programs_own_pages_are_given_back_and_its_code_runs_on() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let before = resident_kib(&exe);
        assert!(before > 0, "the test binary's code is resident");
        let dropped = drop_clean(Mappings::Of(&exe));
        assert!(dropped > 0, "its clean mappings were dropped");
        // The code dropped runs again (it faults back from the page cache),
        // and what was resident of it is less than before.
        let after = resident_kib(&exe);
        assert!(after < before, "resident {before} kB, then {after} kB");
        assert_eq!(
            clean_file_mappings(SMAPS, Mappings::Loaded).len(),
            3,
            "the parser still runs"
        );
    }
}
