// The IPC commands the page calls, named once. `build.rs` includes this file
// for their permissions and the window's capability; the app uses it for its
// invoke handler and for the names the page calls them by
// (`ui/src/ipc-names.js`). Only items here: `include!` takes no `//!` docs.

/// Calls `$then!(inbox, reply, …)` with every command the page may call:
/// the variants of [`crate::ipc::Request`], by their names (a test there
/// checks they agree).
macro_rules! with_ipc_commands {
    ($then:ident) => {
        $then!(
            inbox, reply, verdict, dismiss, open_item, shown, dispatch, run_output, markdown, quit
        )
    };
}

/// The names of the commands it is given, as strings.
macro_rules! command_names {
    ($($command:ident),*) => {
        &[$(stringify!($command)),*]
    };
}

/// Every IPC command the page may call, by name.
pub const IPC_COMMANDS: &[&str] = with_ipc_commands!(command_names);
