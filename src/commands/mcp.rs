//! `hark mcp-operator-ask`, the MCP server an agent spawns, and `hark
//! mcp-config`, which prints the config that names it.

use hark_core::config::Config;
use hark_core::trace::LogFormat;
use tracing::level_filters::LevelFilter;

use crate::cli::McpArgs;
use crate::commands::{Failed, this_hark};
use crate::exit::ExitStatus;

/// Serves MCP on stdin/stdout until the agent closes it.
pub fn operator_ask(args: McpArgs) -> Result<ExitStatus, Failed> {
    hark_core::trace::init_logging(LogFormat::Text, LevelFilter::WARN);
    let config = Config::load()?;
    let settings = hark_mcp::McpSettings::from_env(&config, args.approvals)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Failed::Runtime)?;
    runtime
        .block_on(hark_mcp::OperatorServer::new(settings).serve_stdio())
        .map_err(Failed::Mcp)?;
    Ok(ExitStatus::Success)
}

/// Prints `{"mcpServers":{"operator":{…}}}` naming this `hark`.
pub fn config() -> Result<ExitStatus, Failed> {
    let hark = this_hark()?;
    println!(
        "{}",
        hark_core::agent::mcp_config(&hark, Default::default(), false)
    );
    Ok(ExitStatus::Success)
}
