//! `hark doctor`'s line for the team's hub, when `[hub]` is configured:
//! whether the server answers this host's credential and has the team's
//! buckets. It binds them as an agent host does, so it makes nothing.

use hark_core::config::Config;
use hark_hub::{Hub, HubError, HubOptions, Role};

use super::{Finding, Verdict};

/// The hub's finding, or none without a `[hub]`.
pub(super) fn check(config: &Config, rt: &tokio::runtime::Runtime) -> Option<Finding> {
    let what = "team hub";
    config.hub.as_ref()?;
    let Some(options) = HubOptions::from_config(config.hub.as_ref(), None, Role::Agent) else {
        return Some(Finding::not(
            Verdict::Problem,
            what,
            "[hub] names no server",
            "set [hub] url = \"nats://host:4222\" (or tls://…)",
        ));
    };
    let (url, host, operator) = (
        options.url.clone(),
        options.host.clone(),
        options.operator.clone(),
    );
    let credential = match (&options.nkey, &options.creds) {
        (Some(path), _) | (None, Some(path)) => path.display().to_string(),
        (None, None) => "no credential".to_owned(),
    };
    Some(match rt.block_on(Hub::connect(options)) {
        Ok(_) => Finding::ok(
            what,
            format!("{url} answers {credential}; this host is {host}, answering as {operator}"),
        ),
        Err(e @ HubError::Buckets(_)) => Finding::not(
            Verdict::Note,
            what,
            e.to_string(),
            "start an operator's `hark serve --hub` or `hark app --hub` once",
        ),
        Err(e @ HubError::Credential { .. }) => Finding::not(
            Verdict::Problem,
            what,
            e.to_string(),
            "make one with `hark hub credential --role operator|agent` and add its entry to the server's users",
        ),
        Err(e) => Finding::not(
            Verdict::Problem,
            what,
            e.to_string(),
            "check [hub] url, and that the server's users list this host's public key",
        ),
    })
}
