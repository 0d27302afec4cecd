// @ts-check
// The transport in a browser: the daemon's HTTP API (`hark serve --web`),
// with the session's cookie, the CSRF token on every state-changing
// request, and the SSE stream of changes. The browser has no window for the
// app to switch: the page's two views are the URL's `#modal` and `#inbox`,
// and `#item/ID` (where a push's click leads) opens the modal on that item,
// through pairing if this browser has no session yet.
// Nothing here touches the page's globals when loaded: `webTransport` is
// given them, so the node tests drive it with fakes.

/** @typedef {import('./bindings').InboxView} InboxView */
/** @typedef {import('./bindings').WireReply} WireReply */
/** @typedef {import('./bindings').Outcome} Outcome */
/** @typedef {import('./bindings').IpcError} IpcError */
/** @typedef {import('./bindings').DispatchRequest} DispatchRequest */
/** @typedef {import('./bindings').Dispatched} Dispatched */
/** @typedef {import('./bindings').View} View */

/** @typedef {{id: string, name: string}} Device */
/** A paired device as `GET /api/devices` lists it (`current`: this browser). @typedef {import('./bindings').DeviceView} DeviceView */
/** @typedef {{device: Device, csrf: string}} Session */

/**
 * What a transport can do beyond answering: the pages hide what it cannot.
 * @typedef {object} Capabilities
 * @property {boolean} dismiss Dismissing a settled item from the inbox.
 * @property {boolean} dispatch Starting a run (the New run section).
 * @property {boolean} quit The tray's Quit, asked in the inbox.
 * @property {boolean} runOutput A run's output.
 * @property {boolean} navigate The page switches its views itself (links), where the app's window is switched by the app.
 * @property {boolean} devices The paired browsers, listed and revocable (the Devices section).
 */

/**
 * One transport: the same calls in the app and in a browser.
 * @typedef {object} Transport
 * @property {'tauri' | 'web'} kind
 * @property {Capabilities} can
 * @property {(pendingOnly?: boolean) => Promise<InboxView>} inbox
 * @property {(id: string, reply: WireReply) => Promise<Outcome>} reply
 * @property {(id: string, label: string) => Promise<Outcome>} verdict
 * @property {(id: string) => Promise<void>} shown
 * @property {(id: string) => Promise<void>} dismiss
 * @property {(id: string) => Promise<void>} openItem
 * @property {(request: DispatchRequest) => Promise<Dispatched>} dispatch
 * @property {(confirmed: boolean) => Promise<void>} quit
 * @property {(texts: string[]) => Promise<string[]>} markdown
 * @property {(id: string) => Promise<string>} runOutput
 * @property {(fn: (view: View) => void) => void} onViewChanged
 * @property {(fn: () => void) => void} onInboxChanged
 * @property {() => Promise<DeviceView[]>} devices
 * @property {(id: string) => Promise<void>} revoke
 * @property {(() => Promise<Device>) | null} device This browser's paired device (null in the app).
 */

/**
 * What the web transport needs from the page.
 * @typedef {object} WebEnv
 * @property {typeof fetch} fetch
 * @property {{new (url: string): EventSource, readonly CLOSED: number}} EventSource
 * @property {{hash: string, assign(url: string): void}} location
 * @property {(fn: () => void) => void} onHashChange
 * @property {(fn: () => void, ms: number) => unknown} setTimeout
 */

/** Where a browser without a session goes. */
export const PAIR_PAGE = '/pair.html';

/** An item's id as the API gives it (a UUID). */
const ITEM_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The item a URL's fragment opens: `#item/ID` on the page (a push's
 * click), `item=ID` among the pair page's fragment parameters; null for
 * anything else (only an id is taken, so nothing else rides along).
 * @param {string} hash the fragment, with its `#`
 * @returns {string | null}
 */
export function itemOfHash(hash) {
  const id = hash.startsWith('#item/')
    ? decodeURIComponent(hash.slice('#item/'.length))
    : new URLSearchParams(hash.slice(1)).get('item');
  return id && ITEM_ID.test(id) ? id.toLowerCase() : null;
}

/** The page's URL that opens item `id` (a push's click, after pairing). @param {string} id */
export const itemPage = (id) => `/#item/${id}`;

/** The pair page, returning to item `id` (if any) once paired. @param {string | null} id */
export const pairPage = (id) => (id ? `${PAIR_PAGE}#item=${id}` : PAIR_PAGE);

/** The SSE events that change what the pages show: each refetches. */
export const SSE_EVENTS = /** @type {const} */ (['added', 'parked', 'settled', 'run_changed', 'store_health', 'devices', 'resync']);

/** The longest wait before the stream is opened again after the server closed it. */
const RECONNECT_MAX_MS = 30_000;

/**
 * A fetch's options: the session's cookie (same origin only), JSON, and the
 * CSRF token on anything but a read.
 * @param {string} method @param {string | null} csrf @param {unknown} [body]
 * @returns {RequestInit}
 */
export function requestInit(method, csrf, body) {
  /** @type {Record<string, string>} */
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD' && csrf) headers['X-CSRF-Token'] = csrf;
  /** @type {RequestInit} */
  const init = { method, credentials: 'same-origin', headers };
  if (body !== undefined) init.body = JSON.stringify(body);
  return init;
}

/**
 * A failed response as the pages' error: the API's `{code, message}`, else
 * its status (a proxy's error page is not JSON).
 * @param {Response} response @returns {Promise<IpcError>}
 */
export async function responseError(response) {
  /** @type {unknown} */
  let body = null;
  try { body = await response.json(); } catch { /* not JSON */ }
  const err = /** @type {Partial<IpcError> | null} */ (body);
  if (err && typeof err.code === 'string' && typeof err.message === 'string') {
    return { code: err.code, message: err.message };
  }
  const text = response.statusText ? ` ${response.statusText}` : '';
  return { code: `http_${response.status}`, message: `HTTP ${response.status}${text}` };
}

/** A request that never reached hark. @param {unknown} e @returns {IpcError} */
export function unreachable(e) {
  return { code: 'unreachable', message: `hark cannot be reached: ${e instanceof Error ? e.message : String(e)}` };
}

/** What the browser cannot do, should a page call it anyway. @param {string} what @returns {Promise<never>} */
function appOnly(what) {
  return Promise.reject(/** @type {IpcError} */ ({ code: 'app_only', message: `${what} is done in the desktop app` }));
}

/**
 * The transport over the daemon's HTTP API.
 * @param {WebEnv} env @returns {Transport}
 */
export function webTransport(env) {
  /** @type {Promise<Session> | null} */
  let session = null;
  /** @type {((view: View) => void)[]} */
  const viewListeners = [];
  /** @type {(() => void)[]} */
  const inboxListeners = [];
  /** The item the modal should show first (the inbox's Answer, or `#item/ID`). @type {string | null} */
  let focus = itemOfHash(env.location.hash);
  /** @type {EventSource | null} */
  let source = null;
  let reconnectMs = 1000;

  /** @returns {View} */
  const currentView = () => (env.location.hash === '#inbox' ? 'inbox' : 'modal');

  /**
   * One API call; a 401 (no session, or a revoked one) sends the browser to
   * the pair page.
   * @param {string} method @param {string} path @param {unknown} [body]
   */
  async function call(method, path, body) {
    const csrf = method === 'GET' ? null : (await currentSession()).csrf;
    let response;
    try {
      response = await env.fetch(path, requestInit(method, csrf, body));
    } catch (e) {
      throw unreachable(e);
    }
    if (response.status === 401) {
      session = null;
      // The item a push's click opened is opened once paired.
      env.location.assign(pairPage(focus));
      throw /** @type {IpcError} */ ({ code: 'unpaired', message: 'this browser is not paired with hark: pair it again' });
    }
    if (!response.ok) throw await responseError(response);
    if (response.status === 204) return null;
    return response.json();
  }

  /** The session, asked once (its CSRF token goes with every change). @returns {Promise<Session>} */
  function currentSession() {
    if (!session) {
      const asked = /** @type {Promise<Session>} */ (call('GET', '/api/session'));
      session = asked;
      asked.catch(() => { if (session === asked) session = null; });
    }
    return session;
  }

  const changed = () => { for (const fn of inboxListeners) fn(); };

  /**
   * The stream of changes. EventSource reconnects by itself, resuming with
   * `Last-Event-ID` (the server replays what it missed); only when the
   * server refused it (closed) is it opened anew, after the session is
   * checked (a revoked one goes to pairing). A fresh stream starts with
   * `resync`, which refetches: what happened while it was down is drawn.
   */
  function listen() {
    if (source) return;
    const es = new env.EventSource('/api/events');
    source = es;
    for (const name of SSE_EVENTS) es.addEventListener(name, changed);
    es.addEventListener('open', () => { reconnectMs = 1000; });
    es.addEventListener('error', () => {
      if (es.readyState !== env.EventSource.CLOSED) return;
      source = null;
      session = null;
      currentSession().then(() => {
        env.setTimeout(listen, reconnectMs);
        reconnectMs = Math.min(reconnectMs * 2, RECONNECT_MAX_MS);
      }, () => {});
    });
  }

  env.onHashChange(() => {
    const opened = itemOfHash(env.location.hash);
    if (opened) focus = opened;
    for (const fn of viewListeners) fn(currentView());
    if (opened) changed();
  });

  /** @param {string} id */
  const item = (id) => `/api/items/${encodeURIComponent(id)}`;

  return {
    kind: 'web',
    can: { dismiss: false, dispatch: false, quit: false, runOutput: false, navigate: true, devices: true },
    async inbox(pendingOnly = false) {
      const view = /** @type {InboxView} */ (await call('GET', `/api/inbox?pending_only=${pendingOnly}`));
      // The page's own view and focus stand for the app's window.
      view.view = currentView();
      if (focus && view.pending.some((i) => i.id === focus)) view.focus = focus;
      else focus = null;
      return view;
    },
    reply: (id, reply) => call('POST', `${item(id)}/reply`, reply),
    verdict: (id, label) => call('POST', `${item(id)}/verdict`, { label }),
    // The app withdraws its notification when the modal draws an item; a
    // browser has none.
    shown: async () => {},
    dismiss: () => appOnly('dismissing'),
    async openItem(id) {
      focus = id;
      for (const fn of viewListeners) fn('modal');
      changed();
    },
    dispatch: () => appOnly('starting a run'),
    quit: () => appOnly('quitting'),
    markdown: (texts) => call('POST', '/api/markdown', { texts }),
    runOutput: () => appOnly("a run's output"),
    devices: () => call('GET', '/api/devices'),
    async revoke(id) { await call('DELETE', `/api/devices/${encodeURIComponent(id)}`); },
    onViewChanged(fn) { viewListeners.push(fn); },
    onInboxChanged(fn) {
      inboxListeners.push(fn);
      listen();
    },
    device: async () => (await currentSession()).device,
  };
}

/**
 * Why a pairing failed, as the pair page says it.
 * @param {number} status @param {string | null} retryAfter the `Retry-After` header @param {IpcError} err
 * @returns {IpcError}
 */
export function pairError(status, retryAfter, err) {
  if (status === 401) {
    return { code: 'wrong_code', message: 'That code is wrong, used or expired. Run “hark web pair” on the computer for a new one.' };
  }
  if (status === 429) {
    const secs = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null;
    const wait = secs === null ? 'a while' : secs < 90 ? `${secs} s` : `${Math.ceil(secs / 60)} min`;
    return { code: 'rate_limited', message: `Too many wrong codes: hark takes no more for ${wait}. Try again then.` };
  }
  return err;
}

/**
 * Exchanges a one-time code for a session (the cookie is set by the
 * response); this browser is then `device`.
 * @param {typeof fetch} fetchFn @param {string} code @param {string} device
 * @returns {Promise<Session>}
 */
export async function pair(fetchFn, code, device) {
  let response;
  try {
    response = await fetchFn('/api/pair', requestInit('POST', null, { code, device }));
  } catch (e) {
    throw unreachable(e);
  }
  if (!response.ok) {
    throw pairError(response.status, response.headers.get('Retry-After'), await responseError(response));
  }
  return response.json();
}
