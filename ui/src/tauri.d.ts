// The part of Tauri's global API (`withGlobalTauri` in tauri.conf.json) that
// the page uses. Types only: the page loads no TypeScript.

interface TauriGlobal {
  core: {
    invoke<T>(command: import('./ipc-names.js').Command, args?: { [name: string]: unknown }): Promise<T>;
  };
  event: {
    listen<T>(event: import('./ipc-names.js').AppEvent, handler: (event: { payload: T }) => void): Promise<() => void>;
  };
}

interface Window {
  // Absent in a browser, where the page talks HTTP (ipc-web.js).
  __TAURI__?: TauriGlobal;
}
