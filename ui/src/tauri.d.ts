// The part of Tauri's IPC that every page of the app gets (the internals
// its global API is built on) that the page uses. Types only: the page loads
// no TypeScript.

interface TauriInternals {
  // A command of the app's, or a plugin's (`plugin:event|listen`).
  invoke<T>(command: import('./ipc-names.js').Command | `plugin:${string}`, args?: { [name: string]: unknown }): Promise<T>;
  // A callback's id, for Tauri to call it with each message.
  transformCallback(callback: (message: any) => void, once?: boolean): number;
}

interface Window {
  // Absent in a browser, where the page talks HTTP (ipc-web.js).
  __TAURI_INTERNALS__?: TauriInternals;
}
