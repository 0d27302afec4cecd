//! Where one process's resident memory is: `/proc/PID/smaps` summed by
//! what each mapping maps (a library by its file name, `[heap]`, anonymous
//! memory, a stack), largest first — the table the idle figure is read
//! from.

use std::collections::HashMap;

/// What one kind of mapping holds resident.
#[derive(Debug, Clone)]
pub struct Mapped {
    pub name: String,
    pub rss_kib: u64,
    /// Of that, pages that belong to no file (heap, written copies of a
    /// library's data).
    pub anonymous_kib: u64,
}

/// A process's resident memory by mapping.
#[derive(Debug, Clone, Default)]
pub struct Breakdown {
    pub rss_kib: u64,
    pub anonymous_kib: u64,
    /// Largest first.
    pub by: Vec<Mapped>,
}

impl Breakdown {
    /// Reads `pid`'s smaps; empty when the process is gone or unreadable.
    pub fn of(pid: u32) -> Breakdown {
        std::fs::read_to_string(format!("/proc/{pid}/smaps"))
            .map(|text| Breakdown::parse(&text))
            .unwrap_or_default()
    }

    fn parse(text: &str) -> Breakdown {
        let mut sums: HashMap<String, (u64, u64)> = HashMap::new();
        let mut current = String::from("[anon]");
        for line in text.lines() {
            if let Some(name) = header(line) {
                current = name;
                continue;
            }
            let sum = sums.entry(current.clone()).or_default();
            if let Some(kib) = field(line, "Rss:") {
                sum.0 += kib;
            } else if let Some(kib) = field(line, "Anonymous:") {
                sum.1 += kib;
            }
        }
        let mut by: Vec<Mapped> = sums
            .into_iter()
            .map(|(name, (rss_kib, anonymous_kib))| Mapped {
                name,
                rss_kib,
                anonymous_kib,
            })
            .collect();
        by.sort_by(|a, b| b.rss_kib.cmp(&a.rss_kib).then(a.name.cmp(&b.name)));
        Breakdown {
            rss_kib: by.iter().map(|m| m.rss_kib).sum(),
            anonymous_kib: by.iter().map(|m| m.anonymous_kib).sum(),
            by,
        }
    }
}

/// How many kinds of mapping the table shows (the rest summed).
const SHOWN: usize = 14;

/// Prints `breakdown` as a table headed `what`, in MB (10^6 bytes).
pub fn print(what: &str, breakdown: &Breakdown) {
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    println!(
        "where the memory is: {what}: VmRSS {:.1} MB, of it anonymous {:.1} MB",
        mb(breakdown.rss_kib),
        mb(breakdown.anonymous_kib)
    );
    println!("  {:<40} {:>9} {:>11}", "mapping", "RSS MB", "anon MB");
    for m in breakdown.by.iter().take(SHOWN) {
        println!(
            "  {:<40} {:>9.1} {:>11.1}",
            m.name,
            mb(m.rss_kib),
            mb(m.anonymous_kib)
        );
    }
    let rest = &breakdown.by[breakdown.by.len().min(SHOWN)..];
    println!(
        "  {:<40} {:>9.1} {:>11.1}",
        format!("the other {} mappings", rest.len()),
        mb(rest.iter().map(|m| m.rss_kib).sum()),
        mb(rest.iter().map(|m| m.anonymous_kib).sum())
    );
    println!();
}

/// A mapping's header line (`start-end perms offset dev inode [path]`):
/// what it maps, named by the path's file name.
fn header(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let range = words.next()?;
    let (start, end) = range.split_once('-')?;
    if !start.bytes().all(|b| b.is_ascii_hexdigit()) || !end.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return None;
    }
    let path: Vec<&str> = words.skip(4).collect();
    Some(match path.join(" ") {
        p if p.is_empty() => "[anon]".to_owned(),
        p if p.starts_with('[') => p,
        p => p.rsplit('/').next().unwrap_or(&p).to_owned(),
    })
}

/// `Key:   123 kB` → 123.
fn field(line: &str, key: &str) -> Option<u64> {
    line.strip_prefix(key)?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_are_summed_by_what_they_map() {
        let text = "\
55d0c0000000-55d0c0100000 r-xp 00000000 08:01 1234 /usr/lib/libfoo.so.1
Rss:                 100 kB
Anonymous:             0 kB
55d0c0100000-55d0c0200000 rw-p 00100000 08:01 1234 /usr/lib/libfoo.so.1
Rss:                  20 kB
Anonymous:            20 kB
55d0c1000000-55d0c2000000 rw-p 00000000 00:00 0 [heap]
Rss:                 300 kB
Anonymous:           300 kB
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
Rss:                  50 kB
Anonymous:            50 kB
";
        let b = Breakdown::parse(text);
        assert_eq!((b.rss_kib, b.anonymous_kib), (470, 370));
        let names: Vec<(&str, u64)> = b.by.iter().map(|m| (m.name.as_str(), m.rss_kib)).collect();
        assert_eq!(
            names,
            [("[heap]", 300), ("libfoo.so.1", 120), ("[anon]", 50)]
        );
    }
}
