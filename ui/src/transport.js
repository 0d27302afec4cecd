// @ts-check
// Which transport carries the pages' calls (see ipc.js): chosen from the
// page's globals, so the node tests can choose with fakes.
import { tauriTransport } from './ipc-tauri.js';
import { webTransport } from './ipc-web.js';

/** @typedef {import('./ipc-web.js').Transport} Transport */

/**
 * The app's transport when Tauri injected its IPC (`__TAURI_INTERNALS__`),
 * else the browser's.
 * @param {Window & typeof globalThis} global @returns {Transport}
 */
export function choose(global) {
  if (global.__TAURI_INTERNALS__) return tauriTransport(global.__TAURI_INTERNALS__);
  return webTransport({
    fetch: global.fetch.bind(global),
    storage: global.localStorage,
    location: global.location,
    onHashChange: (fn) => global.addEventListener('hashchange', fn),
    setTimeout: (fn, ms) => global.setTimeout(fn, ms),
  });
}

