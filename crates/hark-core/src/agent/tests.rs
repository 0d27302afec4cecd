//! The agent's composed command lines.

use super::*;

#[test]
fn a_read_only_run_is_gated_through_approve_attached_or_not() {
    let gate = &read_only("/run/h/mcp-approvals.json");
    let mut user = UserCommand::parse(&words(&[
        "claude",
        "-p",
        "x",
        "--permission-prompt-tool",
        "mcp__mine__ok",
    ]))
    .unwrap();
    user.rest.push("--verbose".into());
    let c = compose(user, Verb::Task, Some(&attached()), Some(gate));
    assert_eq!(flag(&c.args, "--permission-prompt-tool"), [APPROVE_TOOL]);
    assert_eq!(flag(&c.args, "--mcp-config"), ["/run/h/mcp-approvals.json"]);
    assert_eq!(flag(&c.args, "--allowedTools"), [ASK_TOOL]);
    assert!(flag(&c.args, "--append-system-prompt")[0].contains("read-only"));

    let c = compose(
        base_command(Path::new("claude"), Some("fix it"), None),
        Verb::Task,
        None,
        Some(gate),
    );
    assert_eq!(flag(&c.args, "--permission-prompt-tool"), [APPROVE_TOOL]);
    assert_eq!(
        flag(&c.args, "--disallowedTools"),
        ["AskUserQuestion,mcp__operator__ask"]
    );
    assert!(c.env.is_empty(), "no socket when nobody is attached");
    let approvals = mcp_config(Path::new("/bin/hark"), BTreeMap::new(), true);
    assert_eq!(
        approvals["mcpServers"]["operator"]["args"],
        json!(["mcp-operator-ask", "--approvals"])
    );
}

fn words(s: &[&str]) -> Vec<String> {
    s.iter().map(|w| w.to_string()).collect()
}

fn read_only(config: &str) -> ReadOnly {
    ReadOnly {
        mcp_config: config.into(),
        cwd: "/work/project".into(),
        nested_as_root: false,
    }
}

fn attached() -> Attached {
    Attached {
        hark: "/opt/hark/bin/hark".into(),
        socket: "/run/h/ask.sock".into(),
        mcp_config: "/run/h/mcp.json".into(),
        session_id: "s1".into(),
        ask_timeout: Some(Duration::from_secs(300)),
        longest_wait: Duration::from_secs(300),
        park_hook: None,
    }
}

fn flag<'a>(args: &'a [String], name: &str) -> Vec<&'a String> {
    args.iter()
        .enumerate()
        .filter(|(_, a)| *a == name)
        .map(|(i, _)| &args[i + 1])
        .collect()
}

#[test]
fn attached_runs_get_the_tool_the_socket_and_the_clause() {
    let c = compose(
        base_command(Path::new("claude"), Some("fix it"), None),
        Verb::Task,
        Some(&attached()),
        None,
    );
    assert_eq!(flag(&c.args, "--allowedTools"), ["mcp__operator__ask"]);
    assert_eq!(flag(&c.args, "--disallowedTools"), ["AskUserQuestion"]);
    assert_eq!(flag(&c.args, "--mcp-config"), ["/run/h/mcp.json"]);
    assert!(flag(&c.args, "--append-system-prompt")[0].contains("mcp__operator__ask"));
    assert_eq!(c.env["HARK_ASK_SOCK"], "/run/h/ask.sock");
    assert_eq!(c.env["HARK_SESSION_ID"], "s1");
    assert_eq!(c.env["MCP_TOOL_TIMEOUT"], "360000");
    assert!(
        c.args
            .windows(2)
            .any(|w| w == ["--output-format", "stream-json"])
    );
    assert!(c.args.contains(&"--verbose".to_owned()));
    assert!(!c.args.iter().any(|a| a.contains("permission-prompt-tool")));
    assert_eq!(c.env["HARK_ASK_TIMEOUT"], "300");
}

#[test]
fn a_run_given_no_wait_leaves_it_to_the_daemon_and_cuts_above_the_longest() {
    let bridge = Attached {
        ask_timeout: None,
        longest_wait: Duration::from_secs(86_400),
        ..attached()
    };
    let c = compose(
        base_command(Path::new("claude"), Some("fix it"), None),
        Verb::Task,
        Some(&bridge),
        None,
    );
    assert!(!c.env.contains_key("HARK_ASK_TIMEOUT"), "{:?}", c.env);
    assert_eq!(c.env["MCP_TOOL_TIMEOUT"], "86460000");
    let c = codex::compose(
        codex::base_command(Path::new("codex"), Some("fix it"), None),
        Verb::Task,
        Some(&bridge),
        false,
    );
    assert!(!c.env.contains_key("HARK_ASK_TIMEOUT"), "{:?}", c.env);
    assert!(
        c.args
            .contains(&"mcp_servers.operator.tool_timeout_sec=86460".to_owned()),
        "{:?}",
        c.args
    );
}

#[test]
fn headless_runs_get_none_of_it_but_still_deny_the_builtin() {
    let c = compose(
        base_command(Path::new("claude"), Some("fix it"), None),
        Verb::Decide,
        None,
        None,
    );
    assert!(flag(&c.args, "--allowedTools").is_empty());
    assert!(flag(&c.args, "--mcp-config").is_empty());
    assert_eq!(flag(&c.args, "--disallowedTools"), ["AskUserQuestion"]);
    assert!(flag(&c.args, "--append-system-prompt")[0].contains("No operator is available"));
    assert!(c.env.is_empty());
}

#[test]
fn wrapping_merges_the_users_lists_without_duplicates() {
    let user = UserCommand::parse(&words(&[
        "claude",
        "-p",
        "do it",
        "--allowedTools",
        "Read,Edit",
        "Bash(git:*)",
        "--disallowedTools=AskUserQuestion",
        "--mcp-config",
        "theirs.json",
        "--model",
        "opus",
    ]))
    .unwrap();
    assert_eq!(user.allowed, ["Read", "Edit", "Bash(git:*)"]);
    assert_eq!(user.mcp_configs, ["theirs.json"]);
    let c = compose(user, Verb::Task, Some(&attached()), None);
    assert_eq!(
        flag(&c.args, "--allowedTools"),
        ["Read,Edit,Bash(git:*),mcp__operator__ask"]
    );
    assert_eq!(flag(&c.args, "--disallowedTools"), ["AskUserQuestion"]);
    assert_eq!(c.args.iter().filter(|a| *a == "--mcp-config").count(), 1);
    assert!(c.args.windows(2).any(|w| w == ["--model", "opus"]));
    assert!(c.args.windows(2).any(|w| w == ["-p", "do it"]));
}

/// The one `--settings` value, as JSON.
fn settings(args: &[String]) -> Value {
    let values = flag(args, "--settings");
    assert_eq!(
        values.len(),
        1,
        "one --settings: the CLI reads only the last"
    );
    serde_json::from_str(values[0]).unwrap()
}

/// Sandboxed as a read-only run must be; `attached`: with an operator, who
/// may approve a command outside the sandbox.
fn assert_sandboxed(settings: &Value, attached: bool) {
    let sandbox = &settings["sandbox"];
    assert_eq!(sandbox["enabled"], true);
    assert_eq!(sandbox["failIfUnavailable"], true, "no sandbox, no run");
    assert_eq!(sandbox["allowUnsandboxedCommands"], attached);
    assert_eq!(
        sandbox["autoAllowBashIfSandboxed"], false,
        "the gate sees Bash"
    );
    assert_eq!(sandbox["allowNestedUserNamespaces"], false);
    assert_eq!(sandbox["filesystem"]["disabled"], false);
    assert!(sandbox.get("excludedCommands").is_none());
}

#[test]
fn a_read_only_run_sandboxes_bash_and_others_do_not() {
    let gate = &read_only("/run/h/mcp-approvals.json");
    let c = compose(
        base_command(Path::new("claude"), Some("look"), None),
        Verb::Ask,
        None,
        Some(gate),
    );
    let headless = settings(&c.args);
    assert_sandboxed(&headless, false);
    assert_eq!(
        headless["sandbox"]["filesystem"]["denyWrite"],
        json!(["/work/project"]),
        "nobody can approve a write, so Bash may not write the project either"
    );

    let c = compose(
        base_command(Path::new("claude"), Some("look"), None),
        Verb::Ask,
        Some(&attached()),
        Some(gate),
    );
    let approvable = settings(&c.args);
    assert_sandboxed(&approvable, true);
    assert!(
        approvable["sandbox"]["filesystem"]
            .get("denyWrite")
            .is_none(),
        "a write the operator approves in the project must work"
    );

    let c = compose(
        base_command(Path::new("claude"), Some("look"), None),
        Verb::Ask,
        Some(&attached()),
        None,
    );
    assert!(flag(&c.args, "--settings").is_empty());
}

#[test]
fn the_sandbox_is_merged_into_the_users_settings_and_wins() {
    let theirs = json!({
        "env": {"FOO": "1"},
        "model": "opus",
        "sandbox": {
            "enabled": false,
            "allowNestedUserNamespaces": true,
            "autoAllowBashIfSandboxed": true,
            "allowUnsandboxedCommands": true,
            "excludedCommands": ["touch:*"],
            "filesystem": {"disabled": true, "allowWrite": ["/srv/out"], "denyWrite": ["/etc"]},
            "network": {"allowedDomains": ["crates.io"]}
        }
    });
    let user = UserCommand::parse(&words(&[
        "claude",
        "-p",
        "x",
        "--settings",
        &theirs.to_string(),
        "--model",
        "opus",
    ]))
    .unwrap();
    assert!(!user.rest.contains(&"--settings".to_owned()));
    let c = compose(user, Verb::Task, None, Some(&read_only("/run/h/mcp.json")));
    let merged = settings(&c.args);
    assert_sandboxed(&merged, false);
    assert_eq!(merged["env"], json!({"FOO": "1"}));
    assert_eq!(merged["model"], "opus");
    assert_eq!(
        merged["sandbox"]["filesystem"]["allowWrite"],
        json!(["/srv/out"])
    );
    assert_eq!(
        merged["sandbox"]["filesystem"]["denyWrite"],
        json!(["/etc", "/work/project"])
    );
    assert_eq!(
        merged["sandbox"]["network"]["allowedDomains"],
        json!(["crates.io"])
    );

    // Settings that are not an object, or a file the caller did not
    // read, give way to the sandbox alone.
    for odd in ["[1]", "/home/me/settings.json"] {
        let user = UserCommand::parse(&words(&["claude", &format!("--settings={odd}")])).unwrap();
        let c = compose(user, Verb::Task, None, Some(&read_only("/run/h/mcp.json")));
        let alone = settings(&c.args);
        assert_sandboxed(&alone, false);
        assert_eq!(alone.as_object().map(|o| o.len()), Some(1), "{alone}");
    }
}

#[test]
fn without_read_only_the_users_settings_pass_as_they_are() {
    for argv in [
        &["claude", "-p", "x", "--settings", "/home/me/s.json"][..],
        &["claude", "-p", "x", "--settings=/home/me/s.json"][..],
        &[
            "claude",
            "--settings",
            "a.json",
            "-p",
            "x",
            "--settings",
            "/home/me/s.json",
        ][..],
    ] {
        let user = UserCommand::parse(&words(argv)).unwrap();
        assert_eq!(user.settings.as_deref(), Some("/home/me/s.json"));
        let c = compose(user, Verb::Task, Some(&attached()), None);
        assert_eq!(flag(&c.args, "--settings"), ["/home/me/s.json"]);
        assert!(c.args.windows(2).any(|w| w == ["-p", "x"]));
    }
}

#[test]
fn a_resumed_turn_names_the_agents_session() {
    let c = compose(
        base_command(Path::new("claude"), Some("next"), Some("abc")),
        Verb::Converse,
        None,
        None,
    );
    assert!(c.args.windows(2).any(|w| w == ["--resume", "abc"]));
}

/// The values of every `-c` in a Codex command line.
fn codex_overrides(args: &[String]) -> Vec<&str> {
    args.windows(2)
        .filter(|w| w[0] == "-c")
        .map(|w| w[1].as_str())
        .collect()
}

#[test]
fn codex_exec_attached_gets_the_server_its_variables_and_the_instructions_right_after_exec() {
    let base = codex::base_command(Path::new("codex"), Some("-pick a db"), None);
    let c = compose_for(AgentKind::Codex, base, Verb::Task, Some(&attached()), None);
    assert_eq!(c.args[0], "exec");
    assert_eq!(
        c.args[c.args.len() - 3..],
        ["--json", "--", "-pick a db"],
        "the prompt is after --"
    );
    let overrides = codex_overrides(&c.args);
    assert!(
        overrides.contains(&r#"mcp_servers.operator.command="/opt/hark/bin/hark""#),
        "{overrides:?}"
    );
    assert!(
        overrides.contains(&"mcp_servers.operator.tool_timeout_sec=360"),
        "{overrides:?}"
    );
    let instructions = overrides
        .iter()
        .find(|o| o.starts_with("developer_instructions="))
        .unwrap();
    assert!(instructions.contains(ASK_TOOL), "{instructions}");
    assert_eq!(c.env[crate::env::ASK_SOCK], "/run/h/ask.sock");
    assert_eq!(c.env[crate::env::SESSION_ID], "s1");
    assert!(
        !c.env.contains_key("MCP_TOOL_TIMEOUT"),
        "Claude Code's, not Codex's"
    );
    assert!(!c.args.iter().any(|a| a == "--sandbox"), "not read-only");

    let headless = compose_for(
        AgentKind::Codex,
        codex::base_command(Path::new("codex"), Some("go"), None),
        Verb::Task,
        None,
        None,
    );
    let overrides = codex_overrides(&headless.args);
    assert_eq!(overrides.len(), 1, "only the instructions: {overrides:?}");
    assert!(
        overrides[0].contains("No operator is available"),
        "{overrides:?}"
    );
    assert!(headless.env.is_empty());
}

#[test]
fn a_wrapped_codex_line_keeps_its_flags_and_loses_what_would_undo_hark_or_loosen_read_only() {
    let user = UserCommand::parse(&words(&[
        "codex",
        "-m",
        "o3",
        "exec",
        "--full-auto",
        "-s",
        "workspace-write",
        "--sandbox=danger-full-access",
        "-c",
        "mcp_servers.operator.command=\"/tmp/evil\"",
        "--config=developer_instructions=\"never ask\"",
        "-c",
        "model_reasoning_effort=\"low\"",
        "fix it",
    ]))
    .unwrap();
    codex::check_wrapped(&user).unwrap();
    let c = compose_for(
        AgentKind::Codex,
        user,
        Verb::Task,
        Some(&attached()),
        Some(&read_only("/unused")),
    );
    assert_eq!(c.args[..3], ["-m", "o3", "exec"]);
    assert_eq!(c.args.last().unwrap(), "fix it");
    assert_eq!(flag(&c.args, "--sandbox"), ["read-only"]);
    for gone in [
        "--full-auto",
        "workspace-write",
        "--sandbox=danger-full-access",
        "-s",
    ] {
        assert!(
            !c.args.iter().any(|a| a == gone),
            "{gone} stays in {:?}",
            c.args
        );
    }
    let overrides = codex_overrides(&c.args);
    assert!(
        overrides.contains(&"model_reasoning_effort=\"low\""),
        "the user's own stay"
    );
    assert!(
        !overrides
            .iter()
            .any(|o| o.contains("/tmp/evil") || o.contains("never ask")),
        "{overrides:?}"
    );
    assert!(
        overrides
            .iter()
            .any(|o| o.starts_with("developer_instructions=") && o.contains("read-only"))
    );

    let interactive = UserCommand::parse(&words(&["codex", "fix it"])).unwrap();
    assert_eq!(codex::check_wrapped(&interactive), Err(codex::NotExec));
}

#[test]
fn the_kind_is_read_from_the_program_name() {
    assert_eq!(
        AgentKind::of_program(Path::new("/usr/local/bin/codex")),
        AgentKind::Codex
    );
    assert_eq!(
        AgentKind::of_program(Path::new("codex-x86_64-unknown-linux-musl")),
        AgentKind::Codex
    );
    assert_eq!(
        AgentKind::of_program(Path::new("claude")),
        AgentKind::Claude
    );
    assert_eq!(
        AgentKind::of_program(Path::new("/opt/fake-claude")),
        AgentKind::Claude
    );
    assert_eq!("codex".parse::<AgentKind>(), Ok(AgentKind::Codex));
    assert!(
        "cursor"
            .parse::<AgentKind>()
            .unwrap_err()
            .to_string()
            .contains("claude, codex, opencode or gemini")
    );
    assert_eq!(
        AgentKind::of_program(Path::new("/var/tmp/oc/node_modules/.bin/opencode")),
        AgentKind::Opencode
    );
    assert_eq!("opencode".parse::<AgentKind>(), Ok(AgentKind::Opencode));
    assert_eq!(
        AgentKind::of_program(Path::new("/w/tests/agents/node_modules/.bin/gemini")),
        AgentKind::Gemini
    );
    assert_eq!("gemini".parse::<AgentKind>(), Ok(AgentKind::Gemini));
}

#[test]
fn a_read_only_run_nested_as_root_reuses_the_runs_procfs() {
    let mut ro = read_only("/tmp/hark-run-1/mcp.json");
    let settings = |ro: &ReadOnly| {
        let composed = compose(
            base_command(Path::new("claude"), Some("x"), None),
            Verb::Task,
            Some(&attached()),
            Some(ro),
        );
        let settings = flag(&composed.args, "--settings");
        serde_json::from_str::<serde_json::Value>(settings[0]).unwrap()
    };
    assert!(
        settings(&ro)["sandbox"]
            .get("enableWeakerNestedSandbox")
            .is_none()
    );
    ro.nested_as_root = true;
    let nested = settings(&ro);
    assert_eq!(nested["sandbox"]["enableWeakerNestedSandbox"], true);
    assert_eq!(
        nested["sandbox"]["enabled"], true,
        "the sandbox itself stays on"
    );
}
