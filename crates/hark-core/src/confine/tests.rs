use std::path::{Path, PathBuf};

use super::bwrap::{self, Kind};
use super::*;

fn session() -> Session {
    Session {
        socket: Some("/run/user/1000/hark/hark.sock".into()),
        store: Some("/home/op/.local/share/hark/hark.db".into()),
        config: Some(("/home/op/.config/hark/config.toml".into(), true)),
        home: Some("/home/op".into()),
        runtime_dir: Some("/run/user/1000".into()),
        temp_dir: "/tmp".into(),
        bus: Some("unix:path=/run/user/1000/bus,guid=1".into()),
        xauthority: Some("/run/user/1000/gdm/Xauthority".into()),
        ssh_agent: Some("/tmp/ssh-x/agent.1".into()),
        programs: vec!["/tmp/build/target/debug".into()],
        secrets: vec!["/home/op/nats/alice.creds".into()],
        path: Vec::new(),
    }
}

fn places(options: &Options) -> Places {
    Places::of(
        &session(),
        Path::new("/home/op/src/api"),
        &[Path::new("/tmp/hark-run-1-ab")],
        options,
    )
}

#[test]
fn hark_s_own_directories_the_config_and_the_secrets_it_names_are_hidden() {
    let places = places(&Options::default());
    for hidden in [
        "/run/user/1000/hark",
        "/home/op/.local/share/hark",
        "/run/user/1000/bus",
        "/run/user/1000/systemd",
        "/run/user/1000/at-spi",
        "/run/user/1000/gdm/Xauthority",
    ] {
        assert!(
            places.hide.contains(&PathBuf::from(hidden)),
            "{hidden}: {places:?}"
        );
    }
    assert!(
        places
            .hide
            .contains(&PathBuf::from("/home/op/.config/hark"))
    );
    assert!(
        places
            .hide
            .contains(&PathBuf::from("/home/op/nats/alice.creds"))
    );
    assert_eq!(
        places.read_only,
        [PathBuf::from("/tmp/hark-run-1-ab/config.toml")],
        "the run's own copy of what the agent reads of the config"
    );
    assert_eq!(
        places.own_dirs,
        [
            "/run/user/1000/hark",
            "/home/op/.local/share/hark",
            "/home/op/.config/hark"
        ]
        .map(PathBuf::from)
    );
    assert!(places.keep.contains(&PathBuf::from("/tmp/hark-run-1-ab")));
    assert!(places.keep.contains(&PathBuf::from("/tmp/ssh-x/agent.1")));
    assert!(
        places
            .keep
            .contains(&PathBuf::from("/tmp/build/target/debug"))
    );
    assert_eq!(places.private, [PathBuf::from("/tmp")]);
    for var in [
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "XAUTHORITY",
        "DBUS_SESSION_BUS_ADDRESS",
    ] {
        assert!(places.unset.contains(&var), "{var}");
    }
}

#[test]
fn the_display_and_the_bus_stay_only_when_the_operator_opts_in() {
    let places = places(&Options {
        display: true,
        session_bus: true,
        ..Options::default()
    });
    assert!(places.unset.is_empty(), "{:?}", places.unset);
    assert!(!places.hide.contains(&PathBuf::from("/run/user/1000/bus")));
    assert!(!places.hide.iter().any(|p| p.ends_with("Xauthority")));
    // Never the operator's side, nor systemd's or the accessibility bus.
    assert!(places.hide.contains(&PathBuf::from("/run/user/1000/hark")));
    assert!(
        places
            .hide
            .contains(&PathBuf::from("/run/user/1000/systemd"))
    );
}

#[test]
fn a_socket_named_in_a_directory_the_agent_needs_is_hidden_alone() {
    let mut session = session();
    session.socket = Some("/home/op/hark.sock".into());
    let places = Places::of(&session, Path::new("/home/op"), &[], &Options::default());
    assert!(places.hide.contains(&PathBuf::from("/home/op/hark.sock")));
    assert!(!places.hide.contains(&PathBuf::from("/home/op")));
}

/// A host where the listed paths are directories, files end in an
/// extension, and the rest is missing.
fn host(dirs: &'static [&'static str]) -> impl Fn(&Path) -> Kind {
    move |path: &Path| {
        let text = path.to_string_lossy();
        if dirs.contains(&text.as_ref()) || path.parent() == Some(Path::new("/")) {
            Kind::Dir
        } else if text.ends_with(".toml") || text.ends_with("/bus") || text.ends_with(".1") {
            Kind::File
        } else {
            Kind::Missing
        }
    }
}

/// The mounts after `--proc /proc`, as (flag, path) pairs.
fn mounts(args: &[std::ffi::OsString]) -> Vec<(String, String)> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let start = args.iter().position(|a| a == "--proc").unwrap() + 2;
    let mut out = Vec::new();
    let mut i = start;
    while i < args.len() {
        match args[i].as_str() {
            "--tmpfs" => {
                out.push(("tmpfs".into(), args[i + 1].clone()));
                i += 2;
            }
            "--bind" | "--ro-bind" => {
                let flag = match (args[i].as_str(), args[i + 1].as_str()) {
                    (_, empty) if empty.ends_with("/empty") => "null",
                    ("--bind", _) => "bind",
                    _ => "ro",
                };
                out.push((flag.into(), args[i + 2].clone()));
                i += 3;
            }
            _ => break,
        }
    }
    out
}

#[test]
fn the_command_line_hides_pins_and_keeps_in_order() {
    let places = places(&Options::default());
    let kind = host(&[
        "/run/user/1000/hark",
        "/home/op/.local/share/hark",
        "/home/op/.config/hark",
        "/tmp/hark-run-1-ab",
        "/run/user/1000/systemd",
    ]);
    let args = bwrap::args(&places, Path::new("/home/op/src/api"), kind);
    let text: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    for flag in [
        "--unshare-user",
        "--unshare-pid",
        "--die-with-parent",
        "--new-session",
    ] {
        assert!(text.contains(&flag.to_owned()), "{flag}");
    }
    assert_eq!(text.last().map(String::as_str), Some("--"));
    assert!(
        text.windows(2)
            .any(|w| w[0] == "--cap-drop" && w[1] == "ALL")
    );
    assert!(
        !text
            .windows(2)
            .any(|w| w[0] == "--dev-bind" && w[1] == "/proc")
    );
    let pos = |flag: &str, path: &str| {
        mounts(&args)
            .iter()
            .position(|(f, p)| f == flag && p == path)
            .unwrap_or_else(|| panic!("no {flag} {path} in {:?}", mounts(&args)))
    };
    // The private /tmp, then the run's own directory bound back into it.
    assert!(pos("tmpfs", "/tmp") < pos("bind", "/tmp/hark-run-1-ab"));
    // hark's directories replaced; every directory above them pinned first.
    assert!(pos("bind", "/home/op/.local") < pos("bind", "/home/op/.local/share"));
    assert!(pos("bind", "/home/op/.local/share") < pos("tmpfs", "/home/op/.local/share/hark"));
    pos("tmpfs", "/run/user/1000/hark");
    pos("bind", "/run/user/1000");
    pos("tmpfs", "/home/op/.config/hark");
    assert!(pos("bind", "/tmp/hark-run-1-ab") < pos("ro", "/tmp/hark-run-1-ab/config.toml"));
    pos("bind", "/home/op/.config");
    pos("null", "/run/user/1000/bus");
    pos("tmpfs", "/run/user/1000/systemd");
    // The ssh agent, in /tmp, is kept; missing places are left alone.
    pos("bind", "/tmp/ssh-x/agent.1");
    assert!(!mounts(&args).iter().any(|(_, p)| p.contains("at-spi")));
    let chdir = text.iter().position(|a| a == "--chdir").unwrap();
    assert_eq!(text[chdir + 1], "/home/op/src/api");
}

#[test]
fn what_lies_in_a_private_temp_dir_needs_no_hiding_unless_it_is_kept() {
    // The tests' layout: everything under one directory in /tmp.
    let session = Session {
        socket: Some("/tmp/t/run/hark.sock".into()),
        store: Some("/tmp/t/data/hark.db".into()),
        config: Some(("/tmp/t/no-config.toml".into(), false)),
        home: Some("/tmp/t/home".into()),
        runtime_dir: None,
        temp_dir: "/tmp/t/tmp".into(),
        bus: None,
        xauthority: None,
        ssh_agent: None,
        programs: Vec::new(),
        secrets: Vec::new(),
        path: Vec::new(),
    };
    let places = Places::of(
        &session,
        Path::new("/tmp/t"),
        &[Path::new("/tmp/t/tmp/hark-run-1-ab")],
        &Options::default(),
    );
    let kind = host(&[
        "/tmp/t",
        "/tmp/t/home",
        "/tmp/t/run",
        "/tmp/t/data",
        "/tmp/t/tmp",
        "/tmp/t/tmp/hark-run-1-ab",
    ]);
    let found = mounts(&bwrap::args(&places, Path::new("/tmp/t"), kind));
    let expected: Vec<(String, String)> = [
        ("tmpfs", "/tmp"),
        ("bind", "/tmp/t"),
        ("tmpfs", "/tmp/t/tmp"),
        ("tmpfs", "/tmp/t/run"),
        ("tmpfs", "/tmp/t/data"),
        ("null", "/tmp/t/no-config.toml"),
        ("bind", "/tmp/t/tmp/hark-run-1-ab"),
        ("ro", "/tmp/t/tmp/hark-run-1-ab/config.toml"),
    ]
    .iter()
    .map(|(f, p)| (f.to_string(), p.to_string()))
    .collect();
    // The home is inside the kept directory: no mount of its own needed,
    // but it is bound all the same (harmless); compare the rest.
    let found: Vec<_> = found
        .into_iter()
        .filter(|(_, p)| p != "/tmp/t/home")
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn the_seatbelt_profile_denies_hark_s_places_and_other_runs() {
    let places = places(&Options::default());
    let profile = seatbelt::profile(
        &places,
        Path::new("/var/folders/x/T"),
        &[Path::new("/var/folders/x/T/hark-run-1-ab")],
    );
    assert!(profile.starts_with("(version 1)\n(allow default)\n"));
    assert!(
        profile.contains("(deny file-read* file-write* (subpath \"/home/op/.local/share/hark\"))")
    );
    assert!(profile.contains(
        "(deny network-outbound (remote unix-socket (subpath \"/run/user/1000/hark\")))"
    ));
    assert!(profile.contains("(deny file-read* file-write* (subpath \"/home/op/.config/hark\"))"));
    let run_config = profile
        .find("(deny file-write* (subpath \"/tmp/hark-run-1-ab/config.toml\"))")
        .unwrap();
    assert!(profile.contains(r#"(regex #"^/var/folders/x/T/hark-run-")"#));
    let deny = profile.find("(deny file-read* file-write* (regex").unwrap();
    let allow = profile
        .find("(allow file-read* file-write* (subpath \"/var/folders/x/T/hark-run-1-ab\"))")
        .unwrap();
    assert!(
        deny < allow,
        "the run's own directory is allowed after the others are denied"
    );
    assert!(
        allow < run_config,
        "and its copy of the config is read-only"
    );
    // A quote in a path cannot end the literal.
    let mut odd = Places::default();
    odd.hide.push(PathBuf::from("/home/a\"b"));
    assert!(seatbelt::profile(&odd, Path::new("/tmp"), &[]).contains(r#"(subpath "/home/a\"b")"#));
}
