//! `hark`: the one command users and agents type. This file only parses the
//! command line and calls into `hark_core`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use hark_core::trace::LogFormat;
use tracing::level_filters::LevelFilter;

#[derive(Debug, Parser)]
#[command(
    name = "hark",
    version,
    about = "An operator console for headless AI agents: their questions reach you, your answers reach them."
)]
struct Cli {
    /// What to do; with none, start the desktop app.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the desktop app: notifications, the question modal, the tray inbox.
    App,
    /// Run the headless daemon: agents' questions are asked on this terminal
    /// or answered by a script.
    Serve {
        /// Who answers: `terminal`, or `script:PATH` (a JSON map of question → answer).
        #[arg(long, default_value = "terminal")]
        prompter: hark_core::serve::PrompterChoice,
        /// Seconds the operator has to answer (default: the config's, else 300).
        #[arg(long, value_name = "SECS")]
        ask_timeout: Option<f64>,
        /// The socket to serve (default: $HARK_SOCKET, else $XDG_RUNTIME_DIR/hark/hark.sock).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
        /// Require a pre-picked default on every question.
        #[arg(long)]
        strict_defaults: bool,
        /// How logs (and trace events) are written to stderr.
        #[arg(long, value_enum, default_value = "text")]
        log_format: LogFormatArg,
    },
    /// The MCP stdio server an agent spawns (server `operator`, tool `ask`).
    McpOperatorAsk {
        /// Also serve `approve`, the write-mode gate of a read-only agent
        /// (`--permission-prompt-tool mcp__operator__approve`).
        #[arg(long)]
        approvals: bool,
    },
    /// Ask the operator from a script; prints `{"outcome":…}` as JSON.
    /// Exit 0 answered, 2 invalid input, 3 not answered.
    Ask {
        /// The questions, `{"questions":[…]}` as AskUserQuestion takes them (`-` for stdin).
        #[arg(long, value_name = "Q.json")]
        file: PathBuf,
        /// Seconds to wait for the answer.
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// Return `not_answered` at once when no operator is attached.
        #[arg(long)]
        no_wait: bool,
        /// The session to file the question under.
        #[arg(long)]
        session: Option<String>,
    },
    /// Run an agent (`claude -p` by default) with the bridge attached when an
    /// operator is: `hark run [--verb task|ask|decide|converse] -- PROMPT…`,
    /// or `hark run --wrap -- claude -p "…" [their flags]`. Exits with the agent's status.
    Run {
        /// What kind of run: task, ask, decide, or converse (turn after turn).
        #[arg(long, default_value = "task")]
        verb: hark_core::dispatch::Verb,
        /// The agent's working directory.
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// The session its questions are filed under.
        #[arg(long)]
        session: Option<String>,
        /// Seconds the operator has for each of its questions.
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// The agent command (default: the config's `agent_command`, else `claude`).
        #[arg(long, value_name = "PATH")]
        agent: Option<PathBuf>,
        /// Attach the bridge to your own agent command line (after --).
        #[arg(long)]
        wrap: bool,
        /// Run the agent read-only: each write (Edit, Write, Bash outside a
        /// read-only allowlist, …) asks the operator, who may allow it once,
        /// for the run or for the session; with nobody attached it is denied.
        #[arg(long)]
        read_only: bool,
        /// Authored questions to ask before the agent starts (JSON:
        /// {preamble, questions:[{id, prompt, options:[{value,label}],
        /// defaults, multi}], when: "thread-start"|"every-turn"}); their
        /// answers go into the prompt. Unanswered, the agent does not start.
        #[arg(long, value_name = "FILE")]
        intake: Option<PathBuf>,
        /// An intake answer given here instead of asked (repeat it).
        #[arg(long = "answer", value_name = "ID=VALUE")]
        answers: Vec<String>,
        /// Hand the run to the app (or `hark serve`): it goes on when this
        /// terminal closes, its output goes to a log, `hark runs` follows
        /// it. Prints the run id.
        #[arg(long)]
        detach: bool,
        /// The prompt, or with --wrap the agent command line.
        #[arg(last = true, required = true, value_name = "PROMPT…")]
        words: Vec<String>,
    },
    /// List the items waiting for you (and, with --all, the history).
    Inbox {
        /// Settled items too: answered, skipped, timed out, cancelled.
        #[arg(long)]
        all: bool,
        /// Keep following: print each item as it arrives or settles.
        #[arg(long)]
        watch: bool,
        /// One JSON value per line, for scripts.
        #[arg(long)]
        json: bool,
        /// At most this many items.
        #[arg(long)]
        limit: Option<u32>,
        /// Delete the settled history.
        #[arg(long, conflicts_with_all = ["watch", "all"])]
        clear_settled: bool,
    },
    /// The runs `hark run` dispatched: running, waiting on you, finished or
    /// failed, with the items each asked.
    Runs {
        /// At most this many (the newest; default 100).
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// The agent sessions that asked: waiting on you, active or ended (their
    /// agent's process), with how many items each asked and how the last ended.
    Sessions {
        /// At most this many (waiting ones first, then the latest to ask; default 100).
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long)]
        json: bool,
    },
    /// Answer a pending item. Questions you leave out take their defaults.
    Answer {
        /// The item's id, or a unique prefix of it (see `hark inbox`).
        id: String,
        /// Pick an option by label (repeat for multi-select); `QUESTION=LABEL`
        /// when several questions share the label.
        #[arg(long = "pick", value_name = "LABEL", num_args = 1..)]
        picks: Vec<String>,
        /// Free text instead of an option (`QUESTION=TEXT` when there are several questions).
        #[arg(long)]
        text: Option<String>,
        /// Confirm the pre-picked defaults.
        #[arg(long, conflicts_with_all = ["picks", "text"])]
        defaults: bool,
        #[arg(long)]
        json: bool,
    },
    /// Skip a pending item: the agent proceeds without confirmed answers.
    Skip {
        /// The item's id, or a unique prefix of it.
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Allow a pending write-mode approval: for the rest of the run (`turn`),
    /// this action only, or the rest of the session. Without --scope: turn,
    /// or the action alone for an external effect (a push, a PR).
    Approve {
        /// The item's id, or a unique prefix of it.
        id: String,
        #[arg(long, value_enum)]
        scope: Option<ScopeArg>,
        #[arg(long)]
        json: bool,
    },
    /// Deny a pending write-mode approval: the agent stays read-only.
    Deny {
        /// The item's id, or a unique prefix of it.
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Print the MCP config that points an agent at this hark:
    /// `claude -p … --mcp-config "$(hark mcp-config)" --allowedTools mcp__operator__ask`.
    McpConfig,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ScopeArg {
    Turn,
    Action,
    Session,
}

impl From<ScopeArg> for hark_core::approval::Scope {
    fn from(scope: ScopeArg) -> Self {
        use hark_core::approval::Scope;
        match scope {
            ScopeArg::Turn => Scope::Turn,
            ScopeArg::Action => Scope::Action,
            ScopeArg::Session => Scope::Session,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormatArg {
    Text,
    Json,
}

fn seconds(s: Option<f64>) -> Result<Option<Duration>, String> {
    match s {
        Some(s) if !(s.is_finite() && s > 0.0) => Err(format!(
            "a timeout must be a positive number of seconds, got {s}"
        )),
        Some(s) => Ok(Some(Duration::from_secs_f64(s))),
        None => Ok(None),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command.unwrap_or(Command::App)) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("hark: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<ExitCode, String> {
    match command {
        Command::App => launch_app(),
        Command::Serve {
            prompter,
            ask_timeout,
            socket,
            strict_defaults,
            log_format,
        } => {
            let format = match log_format {
                LogFormatArg::Text => LogFormat::Text,
                LogFormatArg::Json => LogFormat::Json,
            };
            hark_core::trace::init_logging(format, LevelFilter::INFO);
            let options = hark_core::serve::ServeOptions {
                prompter,
                socket,
                ask_timeout: seconds(ask_timeout)?,
                strict_defaults,
            };
            multi_thread()?
                .block_on(hark_core::serve::serve(options))
                .map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::McpOperatorAsk { approvals } => {
            hark_core::trace::init_logging(LogFormat::Text, LevelFilter::WARN);
            let config = hark_core::config::Config::load().map_err(|e| e.to_string())?;
            let settings =
                hark_mcp::McpSettings::from_env(&config, approvals).map_err(|e| e.to_string())?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime
                .block_on(hark_mcp::OperatorServer::new(settings).serve_stdio())
                .map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Ask {
            file,
            timeout,
            no_wait,
            session,
        } => {
            let options = hark_core::ask::AskOptions {
                file,
                timeout: seconds(timeout)?,
                no_wait,
                session_id: session,
            };
            exit(multi_thread()?.block_on(hark_core::ask::run(options)))
        }
        Command::Run {
            verb,
            cwd,
            session,
            timeout,
            agent,
            wrap,
            read_only,
            intake,
            answers,
            detach,
            words,
        } => {
            let options = hark_core::run_cli::RunOptions {
                verb,
                cwd,
                session,
                timeout: seconds(timeout)?,
                agent,
                wrap,
                read_only,
                intake,
                answers,
                detach,
                words,
            };
            exit(multi_thread()?.block_on(hark_core::run_cli::run(options)))
        }
        Command::Inbox {
            all,
            watch,
            json,
            limit,
            clear_settled,
        } => {
            let options = hark_core::inbox_cli::InboxOptions {
                json,
                all,
                watch,
                clear_settled,
                limit,
            };
            exit(multi_thread()?.block_on(hark_core::inbox_cli::inbox(options)))
        }
        Command::Runs { limit, json } => {
            exit(multi_thread()?.block_on(hark_core::inbox_cli::runs(limit, json)))
        }
        Command::Sessions { limit, json } => {
            exit(multi_thread()?.block_on(hark_core::inbox_cli::sessions(limit, json)))
        }
        Command::Answer {
            id,
            picks,
            text,
            defaults,
            json,
        } => {
            let options = hark_core::inbox_cli::AnswerOptions {
                id,
                picks,
                text,
                defaults,
                json,
            };
            exit(multi_thread()?.block_on(hark_core::inbox_cli::answer(options)))
        }
        Command::Approve { id, scope, json } => exit(multi_thread()?.block_on(
            hark_core::inbox_cli::verdict(&id, Some(scope.map(Into::into)), json),
        )),
        Command::Deny { id, json } => {
            exit(multi_thread()?.block_on(hark_core::inbox_cli::verdict(&id, None, json)))
        }
        Command::Skip { id, json } => {
            exit(multi_thread()?.block_on(hark_core::inbox_cli::skip(&id, json)))
        }
        Command::McpConfig => {
            let hark = std::env::current_exe()
                .map_err(|e| format!("cannot find this hark's path: {e}"))?;
            let hark = hark.canonicalize().unwrap_or(hark);
            println!(
                "{}",
                hark_core::dispatch::mcp_config(&hark, Default::default(), false)
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Replaces this process with the desktop app installed next to `hark`, so
/// the `hark` that serves MCP never loads GTK or WebKit.
fn launch_app() -> Result<ExitCode, String> {
    use std::os::unix::process::CommandExt;
    let here = std::env::current_exe().map_err(|e| format!("cannot find this hark's path: {e}"))?;
    let app = here.with_file_name("hark-app");
    if !app.exists() {
        return Err(format!(
            "the desktop app is not installed next to hark ({} is missing)\nhint: build it with `cargo build --release -p hark-app`, or run `hark serve --prompter terminal`",
            app.display()
        ));
    }
    let error = std::process::Command::new(&app).exec();
    Err(format!("cannot start {}: {error}", app.display()))
}

fn exit(code: i32) -> Result<ExitCode, String> {
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

fn multi_thread() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}
