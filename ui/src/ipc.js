// @ts-check
// The pages' one bridge to hark, whichever carries it: Tauri's IPC in the
// desktop app (ipc-tauri.js), the daemon's HTTP API and its SSE stream in a
// browser (ipc-web.js). Chosen once, when the page loads; the pages call the
// same functions either way, and hide what `can` says is not there.
import { choose } from './transport.js';

/** @typedef {import('./bindings').InboxView} InboxView */
/** @typedef {import('./bindings').WireReply} WireReply */
/** @typedef {import('./bindings').Outcome} Outcome */
/** @typedef {import('./bindings').IpcError} IpcError */
/** @typedef {import('./bindings').DispatchRequest} DispatchRequest */
/** @typedef {import('./bindings').Dispatched} Dispatched */
/** @typedef {import('./ipc-web.js').Transport} Transport */

const transport = choose(window);

/** What this transport can do beyond answering (the pages hide the rest). */
export const can = transport.can;

/** This browser's paired device; null in the app. */
export const device = transport.device;

/** The inbox; `pendingOnly` leaves out the history and the runs. @param {boolean} [pendingOnly] @returns {Promise<InboxView>} */
export function inbox(pendingOnly = false) {
  return transport.inbox(pendingOnly);
}

/** @param {string} id @param {WireReply} reply @returns {Promise<Outcome>} */
export function reply(id, reply) {
  return transport.reply(id, reply);
}

/** A verdict on an approval, by the picked option's label. @param {string} id @param {string} label @returns {Promise<Outcome>} */
export function verdict(id, label) {
  return transport.verdict(id, label);
}

/** Tells the app the modal has drawn this item. @param {string} id @returns {Promise<void>} */
export function shown(id) {
  return transport.shown(id);
}

/** @param {string} id @returns {Promise<void>} */
export function dismiss(id) {
  return transport.dismiss(id);
}

/** Opens the modal on this item. @param {string} id @returns {Promise<void>} */
export function openItem(id) {
  return transport.openItem(id);
}

/** Starts a run the app owns. @param {DispatchRequest} request @returns {Promise<Dispatched>} */
export function dispatch(request) {
  return transport.dispatch(request);
}

/** The operator's word on the tray's Quit: quit, cancelling what waits, or keep running. @param {boolean} confirmed @returns {Promise<void>} */
export function quit(confirmed) {
  return transport.quit(confirmed);
}

/** Agents' Markdown texts as sanitized HTML, in order. @param {string[]} texts @returns {Promise<string[]>} */
export function markdown(texts) {
  return transport.markdown(texts);
}

/** What a run the app started printed. @param {string} id @returns {Promise<string>} */
export function runOutput(id) {
  return transport.runOutput(id);
}

/** The paired browsers (the web's Devices section). @returns {Promise<import('./ipc-web.js').DeviceView[]>} */
export function devices() {
  return transport.devices();
}

/** Revokes a paired browser: its sessions end at once. @param {string} id @returns {Promise<void>} */
export function revoke(id) {
  return transport.revoke(id);
}

/** Calls `fn` with the view the window switched to. @param {(view: import('./bindings').View) => void} fn */
export function onViewChanged(fn) {
  transport.onViewChanged(fn);
}

/** Calls `fn` whenever items are added or settled. @param {() => void} fn */
export function onInboxChanged(fn) {
  transport.onInboxChanged(fn);
}

/** @param {unknown} e @returns {string} */
export function errorText(e) {
  const err = /** @type {IpcError} */ (e);
  return err && err.message ? `${err.message} (${err.code})` : String(e);
}
