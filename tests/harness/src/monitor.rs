//! Reading `dbus-monitor`'s output: each message is a header line
//! (`method call time=1700000000.123456 sender=… -> destination=… serial=…
//! path=…; interface=…; member=Notify`) followed by indented argument lines.

use std::time::SystemTime;

use crate::clock::monitor_time;
use crate::lines::Line;

fn is_header(line: &str) -> bool {
    ["method call ", "method return ", "signal ", "error "]
        .iter()
        .any(|kind| line.starts_with(kind))
}

/// The arguments of the message whose header is at `at`.
fn arguments(lines: &[Line], at: usize) -> impl Iterator<Item = &Line> {
    lines[at + 1..].iter().take_while(|l| !is_header(&l.text))
}

/// The first `Notify` call from index `from` on whose arguments include the
/// string `text`: its index and the bus time the monitor stamped on it.
pub fn find_notify(lines: &[Line], from: usize, text: &str) -> Option<(usize, SystemTime)> {
    let wanted = format!("string {text:?}");
    lines
        .iter()
        .enumerate()
        .skip(from)
        .filter(|(_, l)| l.text.starts_with("method call ") && l.text.ends_with("member=Notify"))
        .find(|(at, _)| arguments(lines, *at).any(|a| a.text.trim() == wanted))
        .and_then(|(at, l)| Some((at, monitor_time(&l.text)?)))
}

/// How many messages of `member` there are in `lines`.
pub fn count(lines: &[Line], member: &str) -> usize {
    let suffix = format!("member={member}");
    lines
        .iter()
        .filter(|l| is_header(&l.text) && l.text.ends_with(&suffix))
        .count()
}

/// Whether the name `name` has got an owner (a `NameOwnerChanged` whose
/// first argument is `name` and whose new owner is not empty).
pub fn name_owned(lines: &[Line], name: &str) -> bool {
    let wanted = format!("string {name:?}");
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.text.starts_with("signal ") && l.text.ends_with("member=NameOwnerChanged")
        })
        .any(|(at, _)| {
            let args: Vec<&str> = arguments(lines, at).map(|a| a.text.trim()).collect();
            args.len() == 3 && args[0] == wanted && args[2] != "string \"\""
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<Line> {
        text.lines()
            .map(|t| Line {
                at: SystemTime::UNIX_EPOCH,
                text: t.to_owned(),
            })
            .collect()
    }

    const SAMPLE: &str = r#"signal time=1700000000.000001 sender=org.freedesktop.DBus -> destination=(null destination) serial=4 path=/org/freedesktop/DBus; interface=org.freedesktop.DBus; member=NameOwnerChanged
   string "org.freedesktop.Notifications"
   string ""
   string ":1.2"
method call time=1700000000.500000 sender=:1.7 -> destination=org.freedesktop.Notifications serial=3 path=/org/freedesktop/Notifications; interface=org.freedesktop.Notifications; member=Notify
   string "hark"
   uint32 0
   string ""
   string "Bench — an agent asks (session desktop-)"
   string "Benchmark question 1?"
   array [
      string "default"
      string "Open"
   ]
   array [
   ]
   int32 -1
method call time=1700000000.750000 sender=:1.8 -> destination=org.freedesktop.Notifications serial=3 path=/org/freedesktop/Notifications; interface=org.freedesktop.Notifications; member=Notify
   string "hark"
   string "Benchmark question 10?"
signal time=1700000001.000000 sender=:1.2 -> destination=:1.7 serial=9 path=/org/freedesktop/Notifications; interface=org.freedesktop.Notifications; member=NotificationClosed
   uint32 1
   uint32 1
"#;

    #[test]
    fn finds_the_notify_call_carrying_a_text() {
        let l = lines(SAMPLE);
        let at = |micros| SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(micros);
        assert_eq!(
            find_notify(&l, 0, "Benchmark question 1?"),
            Some((4, at(1_700_000_000_500_000)))
        );
        assert_eq!(
            find_notify(&l, 0, "Benchmark question 10?"),
            Some((17, at(1_700_000_000_750_000)))
        );
        assert_eq!(find_notify(&l, 5, "Benchmark question 1?"), None);
        assert_eq!(count(&l, "NotificationClosed"), 1);
        assert!(name_owned(&l, "org.freedesktop.Notifications"));
        assert!(!name_owned(&l[1..], "org.freedesktop.Notifications"));
    }
}
