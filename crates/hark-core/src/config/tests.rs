use super::*;

#[test]
fn the_agents_part_keeps_the_rules_and_the_gate_and_no_secret() {
    let text = "strict_defaults = true\nagent_command = \"claude\"\n\
                [approvals]\nexternal_effects = [\"make deploy\"]\n\
                [push]\nntfy = { topic = \"canary-topic\", token = \"tk_canary\" }\n\
                [hub]\nurl = \"nats://h:4222\"\nnkey = \"/secret/alice.nk\"\n";
    let part = agent_part_of(text).unwrap();
    for secret in ["canary-topic", "tk_canary", "alice.nk", "nats://", "claude"] {
        assert!(!part.contains(secret), "{secret} in {part}");
    }
    let read: Config = toml::from_str(&part).unwrap();
    let whole: Config = toml::from_str(text).unwrap();
    assert_eq!(read.rules(), whole.rules());
    assert_eq!(read.approvals, whole.approvals);
    assert!(agent_part_of("nonsense = 1").is_err());
}

#[test]
fn push_secrets_come_from_the_data_dir_and_inline_ones_are_noted() {
    let kept = || {
        Ok(Some(PushSecrets {
            topic: "kept-topic".into(),
            token: Some("kept-token".into()),
        }))
    };
    let ntfy_of = |c: &Config| c.push.as_ref().unwrap().ntfy.with_kept(kept).unwrap();
    let c: Config = toml::from_str("[push]\nntfy = { server = \"https://n\" }").unwrap();
    let ntfy = ntfy_of(&c);
    assert_eq!(
        (ntfy.topic.as_str(), ntfy.token.as_deref()),
        ("kept-topic", Some("kept-token"))
    );
    assert!(c.inline_secrets().is_empty());
    let c: Config = toml::from_str("[push]\nntfy = { topic = \"mine\" }").unwrap();
    let ntfy = ntfy_of(&c);
    assert_eq!(
        (ntfy.topic.as_str(), ntfy.token.as_deref()),
        ("mine", Some("kept-token"))
    );
    assert_eq!(c.inline_secrets(), ["[push] ntfy.topic"]);
    let whole: Config = toml::from_str("[push]\nntfy = { topic = \"t\", token = \"k\" }").unwrap();
    whole
        .push
        .unwrap()
        .ntfy
        .with_kept(|| panic!("not read with both given"))
        .unwrap();
    assert!(Config::default().inline_secrets().is_empty());
}

#[test]
fn secret_files_are_the_tls_key_and_the_hubs_credential() {
    let c: Config = toml::from_str(
        "[web]\ntls_cert = \"/c.pem\"\ntls_key = \"/k.pem\"\n\
         [hub]\nurl = \"nats://h\"\ncreds = \"/x.creds\"\n",
    )
    .unwrap();
    assert_eq!(
        c.secret_files(),
        [PathBuf::from("/k.pem"), "/x.creds".into()]
    );
    assert!(Config::default().secret_files().is_empty());
}

#[test]
fn fields_are_optional_and_unknown_ones_are_refused() {
    let c: Config = toml::from_str("strict_defaults = true").unwrap();
    assert_eq!(c.ask_timeout_secs, 300);
    assert!(c.rules().strict_defaults);
    assert!(toml::from_str::<Config>("ask_timeout = 5").is_err());
    let c: Config = toml::from_str("[approvals]\nexternal_effects = [\"make deploy\"]").unwrap();
    assert!(
        c.approvals
            .external_effects
            .contains(&"make deploy".to_owned())
    );
    assert!(
        c.approvals
            .external_effects
            .contains(&"git push".to_owned()),
        "it adds"
    );
    assert!(c.approvals.read_only_tools.contains(&"Read".to_owned()));
    let c: Config = toml::from_str("[notifications]\nurgency = \"critical\"").unwrap();
    assert_eq!(c.notifications.urgency.level(), 2);
    assert!(c.notifications.buttons, "the others keep their defaults");
    assert!(toml::from_str::<Config>("[notifications]\nurgency = \"loud\"").is_err());
    assert_eq!(Config::default().theme, Theme::System);
    let c: Config = toml::from_str("theme = \"dark\"").unwrap();
    assert_eq!(c.theme, Theme::Dark);
    assert!(toml::from_str::<Config>("theme = \"sepia\"").is_err());
    let c: Config = toml::from_str("[push]\nntfy = { topic = \"t\" }").unwrap();
    let push = c.push.unwrap();
    assert_eq!(push.ntfy.server.to_string(), "https://ntfy.sh/");
    assert_eq!(
        push.detail,
        PushDetail::TitleOnly,
        "no question text by default"
    );
    let c: Config =
        toml::from_str("[push]\nntfy = { topic = \"t\", token = \"k\" }\ndetail = \"full\"")
            .unwrap();
    assert_eq!(c.push.unwrap().detail, PushDetail::Full);
    assert!(
        toml::from_str::<Config>("[push]\nntfy = { topic = \"t\" }\ndetail = \"all\"").is_err()
    );
}

fn bash(c: &Config, command: &str) -> bool {
    let input = serde_json::json!({ "command": command });
    c.approvals.classify("Bash", &input) == crate::gate::policy::Class::ReadOnly
}

#[test]
fn read_only_commands_are_added_as_command_and_flags() {
    let c: Config = toml::from_str(
        "[[approvals.read_only_commands]]\n\
         command = \"hg log\"\n\
         flags = [\"-v\", \"-p\"]\n\
         value_flags = [\"--limit\"]\n\
         max_operands = 1\n",
    )
    .unwrap();
    assert!(bash(&c, "hg log -vp --limit=5 tip"));
    assert!(bash(&c, "git status"), "the defaults stay");
    assert!(!bash(&c, "hg log -e"), "a flag it does not list asks");
    assert!(!bash(&c, "hg log a b"), "one operand too many asks");
    assert!(!bash(&Config::default(), "hg log -vp"));
}

#[test]
fn entries_that_would_let_writes_pass_are_refused_by_name() {
    let refused = |toml: &str| toml::from_str::<Config>(toml).unwrap_err().to_string();
    let entry =
        |command: &str| format!("[[approvals.read_only_commands]]\ncommand = \"{command}\"\n");
    let hark = refused(&entry("hark approve"));
    assert!(
        hark.contains("\"hark approve\"") && hark.contains("hark itself never passes"),
        "{hark}"
    );
    let path = refused(&entry("/usr/bin/sort"));
    assert!(
        path.contains("\"/usr/bin/sort\"") && path.contains("bare words"),
        "{path}"
    );
    let flag = refused(&format!("{}flags = [\"o\"]\n", entry("sort")));
    assert!(
        flag.contains("\"sort\"") && flag.contains("\"o\""),
        "{flag}"
    );
    assert!(refused(&entry(" ")).contains("names no command"));
    let unknown = refused(&format!("{}writes = false\n", entry("sort")));
    assert!(unknown.contains("writes"), "{unknown}");
    let tool = refused("[approvals]\nread_only_tools = [\"Bash\"]");
    assert!(
        tool.contains("\"Bash\"") && tool.contains("writes"),
        "{tool}"
    );
}

#[test]
fn the_urls_are_parsed_when_the_config_loads_and_a_bad_one_is_named() {
    let c: Config = toml::from_str(
        "[web]\norigins = [\"https://Box.ts.net\", \"http://[::1]:8080\"]\n\
         public_url = \"https://box.ts.net:8443/hark\"\n\
         [push]\nntfy = { server = \"https://push.example/ntfy\" }\n\
         [hub]\nurl = \"nats://a:4222, tls://b:4222\"\n",
    )
    .unwrap();
    let web = c.web.unwrap();
    let origins: Vec<String> = web.origins.iter().map(ToString::to_string).collect();
    assert_eq!(origins, ["https://box.ts.net", "http://[::1]:8080"]);
    let public = web.public_url.unwrap();
    assert_eq!(
        public.at(&["api", "push", "t"], None).as_str(),
        "https://box.ts.net:8443/hark/api/push/t"
    );
    assert_eq!(
        public.at(&[""], Some("item/1")).as_str(),
        "https://box.ts.net:8443/hark/#item/1"
    );
    assert_eq!(
        public.origin().ascii_serialization(),
        "https://box.ts.net:8443"
    );
    let server = c.push.unwrap().ntfy.server;
    assert_eq!(
        server.at(&[""], None).as_str(),
        "https://push.example/ntfy/"
    );
    assert_eq!(
        c.hub.unwrap().url.unwrap().to_string(),
        "nats://a:4222,tls://b:4222"
    );

    // Each bad value is refused when the config loads, with its key, its
    // value and why.
    for (toml, says) in [
        ("[web]\npublic_url = \"box.ts.net\"", "not a URL"),
        (
            "[web]\npublic_url = \"ftp://box.ts.net\"",
            "not an http:// or https:// URL",
        ),
        ("[web]\norigins = [\"box.ts.net\"]", "not a URL"),
        (
            "[web]\norigins = [\"https://box.ts.net/hark\"]",
            "not an origin",
        ),
        (
            "[web]\norigins = [\"https://a@box.ts.net\"]",
            "not an origin",
        ),
        ("[web]\norigins = [\"null\"]", "not a URL"),
        ("[push]\nntfy = { server = \"ntfy.sh\" }", "not a URL"),
        (
            "[hub]\nurl = \"https://hub:4222\"",
            "not a hub server's URL",
        ),
        (
            "[hub]\nurl = \"nats://a:4222,hub:4222\"",
            "not a hub server's URL",
        ),
        ("[hub]\nurl = \" , \"", "no URL given"),
    ] {
        let error = ConfigError::Parse {
            path: PathBuf::from("/c/config.toml"),
            source: toml::from_str::<Config>(toml).unwrap_err(),
        }
        .to_string();
        let key = toml.lines().nth(1).unwrap().split(" = ").next().unwrap();
        assert!(
            error.contains("the config /c/config.toml is not valid")
                && error.contains(key)
                && error.contains(says),
            "{toml}: {error}"
        );
    }
    assert_eq!(Ntfy::default_server().to_string(), "https://ntfy.sh/");
}
