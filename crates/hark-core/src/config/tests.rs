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
    assert_eq!(push.ntfy.server, "https://ntfy.sh");
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
