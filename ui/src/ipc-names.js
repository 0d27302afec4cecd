// Generated from src-tauri/src/ipc_commands.rs and the app's event names by
// `cargo test -p hark-app` (HARK_WRITE_BINDINGS=1 rewrites it). Do not edit by hand.
// @ts-check

/** The commands the page may call. */
export const commands = /** @type {const} */ ({
  inbox: "inbox",
  reply: "reply",
  verdict: "verdict",
  dismiss: "dismiss",
  open_item: "open_item",
  shown: "shown",
  dispatch: "dispatch",
  run_output: "run_output",
  markdown: "markdown",
  quit: "quit",
});

/** The events the app emits to the page. */
export const events = /** @type {const} */ ({
  INBOX_CHANGED: "inbox-changed",
  VIEW_CHANGED: "view-changed",
});

/** @typedef {keyof typeof commands} Command */
/** @typedef {(typeof events)[keyof typeof events]} AppEvent */
