// @ts-check
// The transport in the desktop app: the Rust commands over Tauri's IPC, and
// the app's events. Types come from bindings.ts and the command and event
// names from ipc-names.js, both generated from Rust.
import { commands, events } from './ipc-names.js';

/** @typedef {import('./ipc-web.js').Transport} Transport */

/**
 * The transport over Tauri's IPC as every page of the app has it
 * (`__TAURI_INTERNALS__`), without Tauri's global API (`withGlobalTauri`,
 * a 41 KB script every page start would evaluate, for the two calls below).
 * @param {TauriInternals} tauri @returns {Transport}
 */
export function tauriTransport(tauri) {
  /** @type {TauriInternals['invoke']} */
  const invoke = (command, args) => tauri.invoke(command, args);
  /**
   * What the global API's `event.listen` does: the event plugin calls
   * `handler` with each event of that name, emitted to any target.
   * @param {import('./ipc-names.js').AppEvent} event @param {(event: { payload: any }) => void} handler
   */
  const listen = (event, handler) =>
    tauri.invoke('plugin:event|listen', { event, target: { kind: 'Any' }, handler: tauri.transformCallback(handler) });
  return {
    kind: 'tauri',
    // The app has every command; its window switches views itself.
    can: { dismiss: true, dispatch: true, quit: true, runOutput: true, navigate: false, devices: false },
    inbox: (pendingOnly) => invoke(commands.inbox, { pendingOnly }),
    reply: (id, reply) => invoke(commands.reply, { id, reply }),
    verdict: (id, label) => invoke(commands.verdict, { id, label }),
    shown: (id) => invoke(commands.shown, { id }),
    dismiss: (id) => invoke(commands.dismiss, { id }),
    openItem: (id) => invoke(commands.open_item, { id }),
    dispatch: (request) => invoke(commands.dispatch, { request }),
    quit: (confirmed) => invoke(commands.quit, { confirmed }),
    markdown: (texts) => invoke(commands.markdown, { texts }),
    runOutput: (id) => invoke(commands.run_output, { id }),
    onViewChanged: (fn) => {
      listen(events.VIEW_CHANGED, (/** @type {{payload: import('./bindings').View}} */ e) => fn(e.payload));
    },
    onInboxChanged: (fn) => {
      listen(events.INBOX_CHANGED, () => fn());
    },
    // The paired browsers are listed by `hark web devices`.
    devices: () => Promise.reject({ code: 'web_only', message: 'hark web devices lists the paired devices' }),
    revoke: () => Promise.reject({ code: 'web_only', message: 'hark web revoke ID revokes a device' }),
    device: null,
  };
}
