//! `hark web pair|devices|revoke`: the web surface's paired devices,
//! through the daemon (which owns the store) over its socket.

use std::time::SystemTime;

use hark_core::bridge::wire::{ClientFrame, ServerFrame};
use hark_core::store::unix_ms;

use crate::cli::WebCommand;
use crate::commands::query::{print_json, query, refused};
use crate::exit::ExitStatus;

pub async fn run(command: WebCommand) -> ExitStatus {
    match command {
        WebCommand::Pair { json } => pair(json).await,
        WebCommand::Devices { json } => devices(json).await,
        WebCommand::Revoke { id } => match query(&ClientFrame::RevokeDevice { id }).await {
            Ok(ServerFrame::Revoked { id }) => {
                eprintln!("hark: device {id} is revoked; its sessions have ended");
                ExitStatus::Success
            }
            Ok(other) => refused(other),
            Err(status) => status,
        },
    }
}

async fn pair(json: bool) -> ExitStatus {
    let (code, expires_ms, url) = match query(&ClientFrame::PairWeb).await {
        Ok(ServerFrame::Pairing {
            code,
            expires_ms,
            url,
        }) => (code, expires_ms, url),
        Ok(other) => return refused(other),
        Err(status) => return status,
    };
    if json {
        let out = serde_json::json!({"code": code, "expires_ms": expires_ms, "url": url});
        println!("{out}");
        return ExitStatus::Success;
    }
    println!("{code}");
    match &url {
        Some(url) => println!("{url}"),
        None => eprintln!(
            "hint: the daemon does not serve the web surface; start it with `hark serve --web 127.0.0.1:8787` or `[web]` in the config"
        ),
    }
    let left = expires_ms.saturating_sub(unix_ms(SystemTime::now())) / 1000;
    eprintln!(
        "hark: the code pairs one device, once, within {} min {} s",
        left / 60,
        left % 60
    );
    ExitStatus::Success
}

async fn devices(json: bool) -> ExitStatus {
    let devices = match query(&ClientFrame::ListDevices).await {
        Ok(ServerFrame::Devices { devices }) => devices,
        Ok(other) => return refused(other),
        Err(status) => return status,
    };
    if json {
        return print_json(&devices);
    }
    if devices.is_empty() {
        println!("no paired devices");
    }
    let now = unix_ms(SystemTime::now());
    let ago = |ms: u64| {
        let secs = now.saturating_sub(ms) / 1000;
        match secs {
            0..60 => format!("{secs} s ago"),
            60..3600 => format!("{} min ago", secs / 60),
            3600..86400 => format!("{} h ago", secs / 3600),
            _ => format!("{} d ago", secs / 86400),
        }
    };
    for device in devices {
        let seen = device
            .last_seen_ms
            .map(|ms| format!(", seen {}", ago(ms)))
            .unwrap_or_default();
        println!(
            "{}  {}  (paired {}{seen})",
            device.id,
            hark_core::text::visible(&device.name),
            ago(device.paired_ms)
        );
    }
    ExitStatus::Success
}
