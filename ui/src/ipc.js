// @ts-check
// The typed bridge to the Rust commands. Types come from bindings.ts and the
// command and event names from ipc-names.js, both generated from Rust.
import { commands, events } from './ipc-names.js';

/** @typedef {import('./bindings').InboxView} InboxView */
/** @typedef {import('./bindings').WireReply} WireReply */
/** @typedef {import('./bindings').Outcome} Outcome */
/** @typedef {import('./bindings').IpcError} IpcError */
/** @typedef {import('./bindings').DispatchRequest} DispatchRequest */
/** @typedef {import('./bindings').Dispatched} Dispatched */

// Injected by Tauri (withGlobalTauri); its type is in tauri.d.ts.
const tauri = window.__TAURI__;

/** The inbox; `pendingOnly` leaves out the history and the runs. @param {boolean} [pendingOnly] @returns {Promise<InboxView>} */
export function inbox(pendingOnly = false) {
  return tauri.core.invoke(commands.inbox, { pendingOnly });
}

/** @param {string} id @param {WireReply} reply @returns {Promise<Outcome>} */
export function reply(id, reply) {
  return tauri.core.invoke(commands.reply, { id, reply });
}

/** A verdict on an approval, by the picked option's label. @param {string} id @param {string} label @returns {Promise<Outcome>} */
export function verdict(id, label) {
  return tauri.core.invoke(commands.verdict, { id, label });
}

/** Tells the app the modal has drawn this item. @param {string} id @returns {Promise<void>} */
export function shown(id) {
  return tauri.core.invoke(commands.shown, { id });
}

/** @param {string} id @returns {Promise<void>} */
export function dismiss(id) {
  return tauri.core.invoke(commands.dismiss, { id });
}

/** @param {string} id @returns {Promise<void>} */
export function openItem(id) {
  return tauri.core.invoke(commands.open_item, { id });
}

/** Starts a run the app owns. @param {DispatchRequest} request @returns {Promise<Dispatched>} */
export function dispatch(request) {
  return tauri.core.invoke(commands.dispatch, { request });
}

/** The operator's word on the tray's Quit: quit, cancelling what waits, or keep running. @param {boolean} confirmed @returns {Promise<void>} */
export function quit(confirmed) {
  return tauri.core.invoke(commands.quit, { confirmed });
}

/** Agents' Markdown texts as sanitized HTML, in order. @param {string[]} texts @returns {Promise<string[]>} */
export function markdown(texts) {
  return tauri.core.invoke(commands.markdown, { texts });
}

/** What a run the app started printed. @param {string} id @returns {Promise<string>} */
export function runOutput(id) {
  return tauri.core.invoke(commands.run_output, { id });
}

/** Calls `fn` with the view the window switched to. @param {(view: import('./bindings').View) => void} fn */
export function onViewChanged(fn) {
  return tauri.event.listen(events.VIEW_CHANGED, (/** @type {{payload: import('./bindings').View}} */ e) => fn(e.payload));
}

/** Calls `fn` whenever items are added or settled. @param {() => void} fn */
export function onInboxChanged(fn) {
  return tauri.event.listen(events.INBOX_CHANGED, fn);
}

/** @param {unknown} e @returns {string} */
export function errorText(e) {
  const err = /** @type {IpcError} */ (e);
  return err && err.message ? `${err.message} (${err.code})` : String(e);
}
