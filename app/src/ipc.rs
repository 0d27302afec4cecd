//! The commands the window's page calls, passed on by the window process:
//! each call is parsed into one [`Request`] (its command and typed
//! arguments), run by delegating to the core, and its errors cross as
//! `{code, message}` ([`IpcError`], the wire's codes). Their names are
//! listed once more, in [`crate::ipc_commands`], for the window's
//! capability (its `build.rs`, which cannot name this crate's types) and
//! the names the page calls them by; a test checks the two agree.

use hark_core::bridge::views::{
    DeviceRef, DeviceView, InboxView, ItemState, ItemView, RunView, SessionView, View,
};
use hark_core::bridge::wire::{DispatchRequest, Dispatched};
use hark_core::bridge::wire::{ErrorCode, WireError, WireReply};
use hark_core::daemon::operator;
use hark_core::model::ids::{DeviceId, ItemId, RunId, SessionId};
use hark_core::model::item::{Outcome, Surface};
use hark_core::model::run::RunStatus;
use hark_core::registry::{NotAVerdict, ReplyError, StoreHealth};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::App;
use crate::shell::Shell;

/// An error as the UI sees it: a stable code to branch on, a message to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS, thiserror::Error)]
#[error("{}: {message}", code_name(*.code))]
pub struct IpcError {
    /// One of the wire's codes. The page's own errors (the web page's
    /// `unreachable`, `app_only`…) add codes of their own, so the page
    /// types it as a string.
    #[ts(type = "string")]
    pub code: ErrorCode,
    pub message: String,
}

/// A code as it crosses: `not_pending`.
fn code_name(code: ErrorCode) -> String {
    serde_json::to_value(code)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl IpcError {
    fn new(code: ErrorCode, message: impl Into<String>) -> IpcError {
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

impl From<NotAVerdict> for IpcError {
    fn from(e: NotAVerdict) -> Self {
        WireError::from(e).into()
    }
}

/// A call of the page: the command, as the page names it (one of
/// [`crate::ipc_commands`]: the window's capability grants no other; a
/// test checks the two lists agree), with its arguments (camelCase).
#[derive(Debug, Deserialize)]
#[serde(
    tag = "command",
    content = "args",
    rename_all = "snake_case",
    deny_unknown_fields
)]
pub enum Request {
    /// The inbox; `pendingOnly` (the modal's): without history, runs and sessions.
    #[serde(rename_all = "camelCase")]
    Inbox { pending_only: Option<bool> },
    /// A reply to a pending item.
    Reply { id: ItemId, reply: WireReply },
    /// A verdict on an approval, by the label of the option picked.
    Verdict { id: ItemId, label: String },
    /// Drop a settled item from the history.
    Dismiss { id: ItemId },
    /// Open the modal on a pending item.
    OpenItem { id: ItemId },
    /// The modal has drawn the item's options.
    Shown { id: ItemId },
    /// Start a run of the configured agent.
    Dispatch { request: DispatchRequest },
    /// A run's output so far.
    RunOutput { id: String },
    /// Agents' texts as sanitized HTML.
    Markdown { texts: Vec<String> },
    /// The operator's word on the tray's Quit.
    Quit { confirmed: bool },
}

impl Request {
    /// The call `command` with `args`, as the window process passes it on.
    pub fn parse(command: &str, args: Value) -> Result<Request, IpcError> {
        let call = serde_json::json!({ "command": command, "args": args });
        serde_json::from_value(call)
            .map_err(|e| IpcError::new(ErrorCode::Invalid, format!("the call {command:?}: {e}")))
    }
}

/// Runs the page's call `command` with its arguments and returns what the
/// page's promise resolves with.
pub async fn call(app: &App, command: &str, args: Value) -> Result<Value, IpcError> {
    run(app, Request::parse(command, args)?).await
}

/// Runs one request of the page.
async fn run(app: &App, request: Request) -> Result<Value, IpcError> {
    fn done<T: Serialize>(value: T) -> Result<Value, IpcError> {
        serde_json::to_value(value)
            .map_err(|e| IpcError::new(ErrorCode::Unavailable, e.to_string()))
    }
    let shell = &app.shell;
    match request {
        Request::Inbox { pending_only } => done(inbox(app, pending_only.unwrap_or(false))?),
        Request::Reply { id, reply } => done(
            shell
                .registry
                .reply(id, reply.into(), Surface::Desktop)
                .await?,
        ),
        Request::Verdict { id, label } => {
            let reply = hark_core::registry::Reply::verdict(&label)?;
            done(shell.registry.reply(id, reply, Surface::Desktop).await?)
        }
        Request::Dismiss { id } => done(dismiss(shell, id)?),
        Request::OpenItem { id } => done(open_item(app, id)?),
        Request::Quit { confirmed } => {
            quit(app, confirmed);
            done(())
        }
        Request::Dispatch { mut request } => {
            // The page names neither the program to run nor its environment:
            // the run starts the configured agent.
            request.options.agent = None;
            request.env = None;
            done(shell.dispatcher.start(request)?)
        }
        Request::Markdown { texts } => done(
            hark_web::markdown::render_all(&texts)
                .map_err(|e| IpcError::new(ErrorCode::Invalid, e.to_string()))?,
        ),
        Request::RunOutput { id } => done(shell.dispatcher.output(&id)?),
        Request::Shown { id } => {
            shown(shell, id);
            done(())
        }
    }
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

    use super::{IpcError, Request};
    use hark_core::bridge::wire::ErrorCode;
    use serde_json::json;

    /// The commands a request can be are those the capability lists
    /// (`crate::ipc_commands`), no fewer and no more: serde names every
    /// variant when it refuses an unknown one.
    #[test]
    fn the_requests_are_the_listed_commands() {
        let refused = Request::parse("no_such_command", json!({})).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Invalid);
        let (_, expected) = refused
            .message
            .split_once("expected one of ")
            .unwrap_or_else(|| panic!("serde lists the variants: {}", refused.message));
        let mut variants: Vec<&str> = expected.split(", ").map(|v| v.trim_matches('`')).collect();
        let mut listed = crate::ipc_commands::IPC_COMMANDS.to_vec();
        variants.sort_unstable();
        listed.sort_unstable();
        assert_eq!(variants, listed);
        for command in crate::ipc_commands::IPC_COMMANDS {
            let error = Request::parse(command, json!({"no_such_field": 1})).unwrap_err();
            assert!(
                !error.message.contains("unknown variant"),
                "{command}: {}",
                error.message
            );
        }
    }

    #[test]
    fn a_call_s_arguments_are_typed_and_nothing_else_is_taken() {
        let inbox = Request::parse("inbox", json!({"pendingOnly": true})).unwrap();
        assert!(matches!(
            inbox,
            Request::Inbox {
                pending_only: Some(true)
            }
        ));
        let inbox = Request::parse("inbox", json!({})).unwrap();
        assert!(matches!(inbox, Request::Inbox { pending_only: None }));
        for (command, args) in [
            ("inbox", json!({"pending_only": true})),
            ("quit", json!({})),
            ("quit", json!({"confirmed": "yes"})),
            ("verdict", json!({"id": "not an id", "label": "Allow"})),
            ("dismiss", json!({"id": 1, "extra": 2})),
        ] {
            let error = Request::parse(command, args.clone()).unwrap_err();
            assert_eq!(error.code, ErrorCode::Invalid, "{command} {args}");
            assert!(error.message.contains(command), "{}", error.message);
        }
    }

    #[test]
    fn an_error_crosses_as_its_code_and_message() {
        let error = IpcError::new(ErrorCode::NotPending, "gone");
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"code": "not_pending", "message": "gone"})
        );
        assert_eq!(error.to_string(), "not_pending: gone");
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
