// @ts-check
// The transport in a browser: the daemon's HTTP API (`hark serve --web`),
// with the session's cookie and, on every request, reads and the stream of
// changes included, the session's token. The token is given once, in the
// pairing's answer, and kept in `localStorage`, which is this origin's alone
// (scheme, host and port), where the cookie reaches every port of the host:
// a server an agent runs on another port is sent the cookie, never the
// token. The stream of changes is SSE read with `fetch` (an EventSource
// cannot send the token, and a URL that carried it would be logged). The browser has no window for the
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
/** What pairing answers, and what this page keeps: `csrf` is the session's token. @typedef {{device: Device, csrf: string}} Session */

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
 * @property {KeptStorage} storage where the session's token is kept (`localStorage`)
 * @property {{hash: string, assign(url: string): void}} location
 * @property {(fn: () => void) => void} onHashChange
 * @property {(fn: () => void, ms: number) => unknown} setTimeout
 */

/** @typedef {Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>} KeptStorage */

/** Where a browser without a session goes. */
export const PAIR_PAGE = '/pair.html';

/** The `localStorage` key the session is kept under. */
export const SESSION_KEY = 'hark.session';

/**
 * The session this page keeps, if it has one whole.
 * @param {KeptStorage} storage @returns {Session | null}
 */
export function keptSession(storage) {
  /** @type {unknown} */
  let kept = null;
  try { kept = JSON.parse(storage.getItem(SESSION_KEY) ?? 'null'); } catch { /* not ours */ }
  const session = /** @type {Partial<Session> | null} */ (kept);
  if (session && typeof session.csrf === 'string' && session.csrf
      && session.device && typeof session.device.id === 'string' && typeof session.device.name === 'string') {
    return { device: { id: session.device.id, name: session.device.name }, csrf: session.csrf };
  }
  return null;
}

/** Keeps the session pairing gave. @param {KeptStorage} storage @param {Session} session */
export function keepSession(storage, session) {
  storage.setItem(SESSION_KEY, JSON.stringify({ device: session.device, csrf: session.csrf }));
}

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

/**
 * The pair page, returning to item `id` (if any) once paired; `again`: this
 * page had a session that no longer opens (revoked, expired, or one whose
 * token this page does not have), which the pair page says.
 * @param {string | null} id @param {boolean} [again]
 */
export const pairPage = (id, again = false) => {
  const params = [again ? 'again' : '', id ? `item=${id}` : ''].filter(Boolean).join('&');
  return params ? `${PAIR_PAGE}#${params}` : PAIR_PAGE;
};

/** The SSE events that change what the pages show: each refetches. */
export const SSE_EVENTS = /** @type {const} */ (['added', 'parked', 'settled', 'run_changed', 'store_health', 'devices', 'resync']);

/** The longest wait before the stream is opened again after the server closed it. */
const RECONNECT_MAX_MS = 30_000;

/**
 * A fetch's options: the session's cookie (same origin only), JSON, and the
 * session's token, on reads as on changes (the cookie alone opens nothing).
 * @param {string} method @param {string | null} csrf @param {unknown} [body]
 * @returns {RequestInit}
 */
export function requestInit(method, csrf, body) {
  /** @type {Record<string, string>} */
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (csrf) headers['X-CSRF-Token'] = csrf;
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

/**
 * A parser of an SSE stream's text as it arrives, in pieces cut anywhere:
 * each whole event goes to `fn` with its type (`message` when it names
 * none), its data, and the stream's last id so far. Comments (the server's
 * keep-alives) are skipped.
 * @param {(event: {type: string, data: string, lastId: string | null}) => void} fn
 * @returns {(text: string) => void}
 */
export function sseParser(fn) {
  let rest = '';
  /** @type {string | null} */
  let lastId = null;
  let type = '';
  /** @type {string[]} */
  let data = [];
  return (text) => {
    rest += text;
    const lines = rest.split('\n');
    rest = /** @type {string} */ (lines.pop());
    for (const raw of lines) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line === '') {
        if (data.length || type) fn({ type: type || 'message', data: data.join('\n'), lastId });
        type = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') type = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) lastId = value;
    }
  };
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
  /** The session's device, asked once. @type {Promise<Device> | null} */
  let asked = null;
  /** @type {((view: View) => void)[]} */
  const viewListeners = [];
  /** @type {(() => void)[]} */
  const inboxListeners = [];
  /** The item the modal should show first (the inbox's Answer, or `#item/ID`). @type {string | null} */
  let focus = itemOfHash(env.location.hash);
  /** Whether the stream of changes is being read (or waited to be opened again). */
  let listening = false;
  let reconnectMs = 1000;

  /** @returns {View} */
  const currentView = () => (env.location.hash === '#inbox' ? 'inbox' : 'modal');

  /**
   * This browser has no session that opens (none kept, or the server
   * refused it): the kept one is forgotten and the browser goes to pair
   * again, returning to the item a push's click opened.
   * @param {boolean} again it had one
   * @returns {IpcError}
   */
  function unpaired(again) {
    asked = null;
    env.storage.removeItem(SESSION_KEY);
    env.location.assign(pairPage(focus, again));
    return { code: 'unpaired', message: 'this browser is not paired with hark: pair it again' };
  }

  /**
   * One API call, with the kept session's token; without one, no request
   * goes out. A 401 (no session, a revoked one, or a cookie without its
   * token) sends the browser to the pair page.
   * @param {string} method @param {string} path @param {unknown} [body]
   */
  async function call(method, path, body) {
    const kept = keptSession(env.storage);
    if (!kept) throw unpaired(env.storage.getItem(SESSION_KEY) !== null);
    let response;
    try {
      response = await env.fetch(path, requestInit(method, kept.csrf, body));
    } catch (e) {
      throw unreachable(e);
    }
    if (response.status === 401) throw unpaired(true);
    if (!response.ok) throw await responseError(response);
    if (response.status === 204) return null;
    return response.json();
  }

  /** The session's device, asked of the server once (so a dead session goes to pairing). @returns {Promise<Device>} */
  function currentDevice() {
    if (!asked) {
      const asking = /** @type {Promise<{device: Device}>} */ (call('GET', '/api/session')).then((s) => s.device);
      asked = asking;
      asking.catch(() => { if (asked === asking) asked = null; });
    }
    return asked;
  }

  const changed = () => { for (const fn of inboxListeners) fn(); };

  /** @param {number} ms */
  const wait = (ms) => new Promise((resolve) => { env.setTimeout(() => resolve(undefined), ms); });

  /**
   * Reads the stream of changes until it ends, and opens it again, after
   * a wait that doubles while it cannot be opened, with `Last-Event-ID`
   * (the server sends what was missed, or `resync`, which refetches). A
   * 401 goes to pairing, and ends it.
   */
  async function listen() {
    if (listening) return;
    listening = true;
    /** @type {string | null} */
    let lastId = null;
    const parse = sseParser((event) => {
      lastId = event.lastId;
      if (/** @type {readonly string[]} */ (SSE_EVENTS).includes(event.type)) changed();
    });
    for (;;) {
      const kept = keptSession(env.storage);
      if (!kept) { unpaired(env.storage.getItem(SESSION_KEY) !== null); return; }
      const init = requestInit('GET', kept.csrf);
      const headers = /** @type {Record<string, string>} */ (init.headers);
      headers.Accept = 'text/event-stream';
      if (lastId !== null) headers['Last-Event-ID'] = lastId;
      /** @type {Response | null} */
      let response = null;
      try { response = await env.fetch('/api/events', { ...init, cache: 'no-store' }); } catch { /* down: try again */ }
      if (response?.status === 401) { unpaired(true); return; }
      if (response?.ok && response.body) {
        reconnectMs = 1000;
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            parse(decoder.decode(value, { stream: true }));
          }
        } catch { /* dropped */ }
      }
      await wait(reconnectMs);
      reconnectMs = Math.min(reconnectMs * 2, RECONNECT_MAX_MS);
    }
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
    device: currentDevice,
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
 * Exchanges a one-time code for a session: the cookie, set by the
 * response, and the session's token, in its body (this once), kept in
 * `storage`; this browser is then `device`.
 * @param {typeof fetch} fetchFn @param {KeptStorage} storage @param {string} code @param {string} device
 * @returns {Promise<Session>}
 */
export async function pair(fetchFn, storage, code, device) {
  let response;
  try {
    response = await fetchFn('/api/pair', requestInit('POST', null, { code, device }));
  } catch (e) {
    throw unreachable(e);
  }
  if (!response.ok) {
    throw pairError(response.status, response.headers.get('Retry-After'), await responseError(response));
  }
  const session = /** @type {Session} */ (await response.json());
  keepSession(storage, session);
  return session;
}
