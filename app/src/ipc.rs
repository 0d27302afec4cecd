//! The commands the window's page calls, passed on by the window process.
//! They convert and delegate to the core; errors cross as `{code, message}`.
//! They are listed once, in [`crate::ipc_commands`]: the window's capability
//! (its `build.rs`) and the names the page calls them by come from that list.

use hark_core::bridge::views::{
    DeviceRef, DeviceView, InboxView, ItemState, ItemView, RunView, SessionView, View,
};
use hark_core::bridge::wire::{DispatchRequest, Dispatched};
use hark_core::bridge::wire::{ErrorCode, WireError, WireReply};
use hark_core::daemon::operator;
use hark_core::model::ids::{DeviceId, ItemId, RunId, SessionId};
use hark_core::model::item::{Outcome, Surface};
use hark_core::model::run::RunStatus;
use hark_core::registry::{ReplyError, StoreHealth};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::App;
use crate::shell::Shell;

/// An error as the UI sees it: a stable code to branch on, a message to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS, thiserror::Error)]
#[error("{code}: {message}")]
pub struct IpcError {
    pub code: String,
    pub message: String,
}

impl IpcError {
    fn new(code: ErrorCode, message: impl Into<String>) -> IpcError {
        let code = serde_json::to_value(code)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "unavailable".into());
        IpcError {
            code,
            message: message.into(),
        }
    }
}

impl From<WireError> for IpcError {
    fn from(wire: WireError) -> Self {
        let mut message = wire.message;
        if !wire.issues.is_empty() {
            message = hark_core::model::validate::describe(&wire.issues);
        }
        IpcError::new(wire.code, message)
    }
}

impl From<hark_core::daemon::dispatcher::DispatchError> for IpcError {
    fn from(e: hark_core::daemon::dispatcher::DispatchError) -> Self {
        WireError::from(e).into()
    }
}

impl From<ReplyError> for IpcError {
    fn from(e: ReplyError) -> Self {
        WireError::from(e).into()
    }
}

/// Runs the page's call `command` with its arguments (as the page names
/// them, camelCase) and returns what the page's promise resolves with.
/// The window process passes every call on: the names it may call are
/// those of [`crate::ipc_commands`] (its capability grants no other).
pub async fn call(app: &App, command: &str, args: Value) -> Result<Value, IpcError> {
    fn args_of<T: DeserializeOwned>(command: &str, args: Value) -> Result<T, IpcError> {
        serde_json::from_value(args)
            .map_err(|e| IpcError::new(ErrorCode::Invalid, format!("{command}'s arguments: {e}")))
    }
    fn done<T: Serialize>(value: T) -> Result<Value, IpcError> {
        serde_json::to_value(value)
            .map_err(|e| IpcError::new(ErrorCode::Unavailable, e.to_string()))
    }
    let shell = &app.shell;
    match command {
        "inbox" => {
            let Inbox { pending_only } = args_of(command, args)?;
            done(inbox(app, pending_only.unwrap_or(false))?)
        }
        "reply" => {
            let Reply { id, reply } = args_of(command, args)?;
            done(
                shell
                    .registry
                    .reply(id, reply.into(), Surface::Desktop)
                    .await?,
            )
        }
        "verdict" => {
            let Verdict { id, label } = args_of(command, args)?;
            done(verdict(shell, id, &label).await?)
        }
        "dismiss" => {
            let Id { id } = args_of(command, args)?;
            done(dismiss(shell, id)?)
        }
        "open_item" => {
            let Id { id } = args_of(command, args)?;
            done(open_item(app, id)?)
        }
        "quit" => {
            let Quit { confirmed } = args_of(command, args)?;
            quit(app, confirmed);
            done(())
        }
        "dispatch" => {
            let Dispatch { mut request } = args_of(command, args)?;
            // The page names neither the program to run nor its environment:
            // the run starts the configured agent.
            request.options.agent = None;
            request.env = None;
            done(shell.dispatcher.start(request)?)
        }
        "markdown" => {
            let Markdown { texts } = args_of(command, args)?;
            done(
                hark_web::markdown::render_all(&texts)
                    .map_err(|e| IpcError::new(ErrorCode::Invalid, e.to_string()))?,
            )
        }
        "run_output" => {
            let RunOutput { id } = args_of(command, args)?;
            done(shell.dispatcher.output(&id)?)
        }
        "shown" => {
            let Id { id } = args_of(command, args)?;
            shown(shell, id);
            done(())
        }
        other => Err(IpcError::new(
            ErrorCode::Invalid,
            format!("{other:?} is not a command of the app"),
        )),
    }
}

/// The arguments of each command, as the page names them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Inbox {
    pending_only: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Reply {
    id: ItemId,
    reply: WireReply,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Verdict {
    id: ItemId,
    label: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Id {
    id: ItemId,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Quit {
    confirmed: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Dispatch {
    request: DispatchRequest,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Markdown {
    texts: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunOutput {
    id: String,
}

/// The inbox; with `pending_only` (the modal's) without history, runs and
/// sessions. The core builds it as the web does; the app adds what only it
/// knows.
fn inbox(app: &App, pending_only: bool) -> Result<InboxView, IpcError> {
    let shell = &app.shell;
    let mut view = operator::inbox_view(&shell.registry, pending_only)
        .map_err(|e| IpcError::new(ErrorCode::Unavailable, e.to_string()))?;
    view.focus = shell.focus();
    view.view = app.windows.view().map(Into::into);
    view.do_not_disturb = shell.do_not_disturb();
    view.quit_asked = shell.quit_asked();
    Ok(view)
}

/// A verdict on a write-mode approval, by the option the operator picked
/// in the modal (the label-to-verdict mapping stays in the core).
async fn verdict(shell: &Shell, id: ItemId, label: &str) -> Result<Outcome, IpcError> {
    let reply = match hark_core::model::approval::Approval::verdict_of(label) {
        Some(verdict) => hark_core::registry::Reply::from(verdict),
        None => {
            return Err(IpcError::new(
                ErrorCode::Invalid,
                format!("{label:?} is not one of the approval's options"),
            ));
        }
    };
    Ok(shell.registry.reply(id, reply, Surface::Desktop).await?)
}

fn dismiss(shell: &Shell, id: ItemId) -> Result<(), IpcError> {
    let store = shell
        .registry
        .store()
        .ok_or_else(|| IpcError::new(ErrorCode::Unavailable, "there is no store"))?;
    match store.dismiss(id) {
        Ok(true) => Ok(()),
        Ok(false) => Err(IpcError::new(
            ErrorCode::NotPending,
            "only a settled item can be dismissed",
        )),
        Err(e) => Err(IpcError::new(ErrorCode::Unavailable, e.to_string())),
    }
}

/// Opens the modal on a pending item (from the inbox window).
fn open_item(app: &App, id: ItemId) -> Result<(), IpcError> {
    if app.shell.registry.get(id).is_none() {
        return Err(IpcError::new(
            ErrorCode::NotPending,
            "that item is no longer pending",
        ));
    }
    app.shell.open_item(app, id);
    Ok(())
}

/// The operator's word on the tray's Quit, given in the inbox: quit (every
/// pending item is cancelled) or keep running.
fn quit(app: &App, confirmed: bool) {
    if confirmed {
        app.shell.quit(app);
    } else {
        app.shell.keep_running();
        app.inbox_changed();
    }
}

/// The modal reports that it has drawn an item's options: the moment the
/// operator can answer (`modal.shown`, measured by the desktop benchmark).
fn shown(shell: &Shell, id: ItemId) {
    if let Some(item) = shell.registry.get(id) {
        let waited = std::time::SystemTime::now()
            .duration_since(item.created_at)
            .unwrap_or_default();
        tracing::info!(question_id = %id, since_asked_ms = waited.as_millis() as u64, "modal.shown");
    }
}

/// The TypeScript declarations of every type that crosses to the UI, as
/// committed in `ui/src/bindings.ts`.
pub fn typescript() -> String {
    use hark_core::agent::{AgentKind, Verb};
    use hark_core::model::approval::{Approval, Scope};
    use hark_core::model::attribution::Attribution;
    use hark_core::model::item::{Asker, SubAgent};
    use hark_core::model::resolve::{Annotation, Pick, Resolution};
    use hark_core::model::schema::{AnswerValue, AskRequest, Question, QuestionOption};
    use hark_core::model::validate::Issue;
    let cfg = ts_rs::Config::new().with_large_int("number");
    let decls = [
        ItemId::decl(&cfg),
        RunId::decl(&cfg),
        SessionId::decl(&cfg),
        DeviceId::decl(&cfg),
        DeviceRef::decl(&cfg),
        hark_core::model::item::Remote::decl(&cfg),
        DeviceView::decl(&cfg),
        Asker::decl(&cfg),
        SubAgent::decl(&cfg),
        Attribution::decl(&cfg),
        QuestionOption::decl(&cfg),
        AnswerValue::decl(&cfg),
        Question::decl(&cfg),
        AskRequest::decl(&cfg),
        Annotation::decl(&cfg),
        Resolution::decl(&cfg),
        Scope::decl(&cfg),
        Approval::decl(&cfg),
        Outcome::decl(&cfg),
        ItemState::decl(&cfg),
        ItemView::decl(&cfg),
        RunStatus::decl(&cfg),
        hark_core::model::run::Confinement::decl(&cfg),
        RunView::decl(&cfg),
        SessionView::decl(&cfg),
        Pick::decl(&cfg),
        WireReply::decl(&cfg),
        Issue::decl(&cfg),
        IpcError::decl(&cfg),
        View::decl(&cfg),
        StoreHealth::decl(&cfg),
        InboxView::decl(&cfg),
        Verb::decl(&cfg),
        AgentKind::decl(&cfg),
        DispatchRequest::decl(&cfg),
        Dispatched::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from the Rust types by `cargo test -p hark-app` (HARK_WRITE_BINDINGS=1 rewrites it).\n// Do not edit by hand.\n\n",
    );
    for decl in decls {
        out.push_str("export ");
        out.push_str(&decl);
        out.push_str("\n\n");
    }
    out.trim_end().to_owned() + "\n"
}

/// The names the page calls the commands and events by, as committed in
/// `ui/src/ipc-names.js`: the page loads it, so it is JavaScript, typed for
/// the checker.
pub fn ipc_names() -> String {
    let entry = |key: &str, value: &str| format!("  {key}: {},\n", serde_json::json!(value));
    let commands: String = crate::ipc_commands::IPC_COMMANDS
        .iter()
        .map(|c| entry(c, c))
        .collect();
    let events: String = [
        ("INBOX_CHANGED", hark_core::bridge::window::INBOX_CHANGED),
        ("VIEW_CHANGED", hark_core::bridge::window::VIEW_CHANGED),
    ]
    .iter()
    .map(|(key, name)| entry(key, name))
    .collect();
    format!(
        "// Generated from src-tauri/src/ipc_commands.rs and the app's event names by\n\
         // `cargo test -p hark-app` (HARK_WRITE_BINDINGS=1 rewrites it). Do not edit by hand.\n\
         // @ts-check\n\n\
         /** The commands the page may call. */\n\
         export const commands = /** @type {{const}} */ ({{\n{commands}}});\n\n\
         /** The events the app emits to the page. */\n\
         export const events = /** @type {{const}} */ ({{\n{events}}});\n\n\
         /** @typedef {{keyof typeof commands}} Command */\n\
         /** @typedef {{(typeof events)[keyof typeof events]}} AppEvent */\n"
    )
}

#[cfg(test)]
mod tests {
    /// The committed file matches what Rust generates; `HARK_WRITE_BINDINGS=1` rewrites it.
    fn has_not_drifted(file: &str, fresh: String) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../ui/src")
            .join(file);
        if std::env::var_os("HARK_WRITE_BINDINGS").is_some() {
            std::fs::write(&path, &fresh).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "ui/src/{file} is out of date: run `HARK_WRITE_BINDINGS=1 cargo test -p hark-app typescript`"
        );
    }

    #[test]
    fn typescript_bindings_have_not_drifted() {
        has_not_drifted("bindings.ts", super::typescript());
    }

    #[test]
    fn typescript_ipc_names_have_not_drifted() {
        has_not_drifted("ipc-names.js", super::ipc_names());
    }
}
