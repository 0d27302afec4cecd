//! `bare-ask-server`: the baseline `hark-bench` compares `hark
//! mcp-operator-ask` against. It is the least an rmcp 3.x stdio MCP server
//! with one `ask` tool can be, written the idiomatic way
//! (`#[tool_router(server_handler)]`), served like hark on a current-thread
//! runtime over `stdio_pipes()`. No config, no logging, no socket: whatever
//! hark spends on top of this at startup is hark's own.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServiceExt, schemars, tool, tool_router};
use serde::Deserialize;

/// The `ask` tool's input: AskUserQuestion's `questions`, taken as-is.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct AskArgs {
    /// The questions to ask (1-4).
    #[allow(dead_code)]
    questions: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Copy)]
struct BareAskServer;

#[tool_router(server_handler)]
impl BareAskServer {
    #[tool(description = "Ask the operator; this baseline always answers the same.")]
    fn ask(&self, Parameters(_args): Parameters<AskArgs>) -> String {
        r#"{"answers":{}}"#.to_string()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let service = BareAskServer
                .serve(rmcp::transport::io::stdio_pipes())
                .await?;
            service.waiting().await?;
            Ok(())
        })
}
