//! `hark serve`: the headless daemon. It owns the app socket, the registry
//! and a terminal or scripted prompter, until SIGINT/SIGTERM.

use std::sync::Arc;

use hark_core::daemon::{listener, serve};
use hark_core::prompter::OperatorPrompter;
use hark_core::prompter::script::ScriptedPrompter;
use hark_core::trace::LogFormat;
use tracing::level_filters::LevelFilter;

use crate::cli::{LogFormatArg, PrompterChoice, ServeArgs};
use crate::commands::{Failed, runtime};
use crate::exit::ExitStatus;
use crate::terminal::TerminalPrompter;

/// Runs the daemon until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> Result<ExitStatus, Failed> {
    let format = match args.log_format {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    };
    hark_core::trace::init_logging(format, LevelFilter::INFO);
    let options = serve::ServeOptions {
        socket: args.socket,
        ask_timeout: args.ask_timeout,
        strict_defaults: args.strict_defaults,
        ..Default::default()
    };
    let runtime = runtime()?;
    let served = runtime.block_on(async {
        // The terminal prompter reads stdin on the runtime.
        let prompter: Arc<dyn OperatorPrompter> = match &args.prompter {
            PrompterChoice::Terminal => Arc::new(TerminalPrompter::new()),
            PrompterChoice::Script(path) => Arc::new(ScriptedPrompter::load(path)?),
        };
        // Before it says it serves, so a stop that follows at once is heard.
        let shutdown = serve::shutdown_signal();
        let surfaces = hark_daemon::Surfaces {
            web: hark_daemon::Web::Configured {
                listen: args.web,
                insecure_http: args.insecure_http,
            },
            hub: Some(hark_daemon::HubJoin {
                url: args.hub.clone(),
                role: hark_hub::Role::Operator,
                required: false,
            }),
        };
        let assembled = hark_daemon::assemble(prompter, options, surfaces).await?;
        if let Some(web) = &assembled.web {
            eprintln!("hark: the web surface is on {}", web.url);
        }
        if let Some(hub) = &assembled.hub {
            eprintln!(
                "hark: on the team's hub at {} as {} on {}",
                hub.options.url, hub.options.operator, hub.options.host
            );
        }
        let prepared = assembled.prepared;
        eprintln!(
            "hark: serving on {} — agents started with `--mcp-config \"$(hark mcp-config)\"` ask here",
            prepared.socket_file.path().display()
        );
        listener::run(prepared.listener, prepared.daemon, shutdown).await;
        // The web surface's last answers (it drains for `hark_web::DRAIN`
        // at most), before the runtime is dropped under it.
        if let Some(web) = assembled.web {
            let _ = web.stopped.await;
        }
        drop(prepared.socket_file);
        drop(assembled.hub);
        Ok(ExitStatus::Success)
    });
    // The terminal prompter reads stdin on a blocking thread that no signal
    // wakes; waiting for it would keep a stopped daemon up until a line is
    // typed. Everything that matters has ended by now.
    runtime.shutdown_background();
    served
}
