// The pages' transport seam: which transport is chosen, what the browser's
// sends (the session cookie's credentials, and the session's token, kept
// in localStorage, on every request), how its failures read, and the SSE
// stream, read with fetch, feeding the same callback as the app's event.
// Fakes stand for the page's globals; nothing here is a page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { choose } from '../src/transport.js';
import {
  PAIR_PAGE, SESSION_KEY, SSE_EVENTS, itemOfHash, itemPage, keptSession, pair, pairPage, requestInit, sseParser, webTransport,
} from '../src/ipc-web.js';
import { deviceName } from '../src/device.js';

/** A JSON response. */
const json = (status, body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });

/** A fake localStorage. */
class FakeStorage {
  constructor(entries = {}) { this.entries = new Map(Object.entries(entries)); }
  getItem(key) { return this.entries.has(key) ? this.entries.get(key) : null; }
  setItem(key, value) { this.entries.set(key, String(value)); }
  removeItem(key) { this.entries.delete(key); }
}

const SESSION = { device: { id: 'd1', name: 'Chrome on Android' }, csrf: 'tok-123' };
const sessionRoute = { 'GET /api/session': () => json(200, { device: SESSION.device }) };

/**
 * A browser for the web transport: `routes` answers each `METHOD path`;
 * every request is recorded. It keeps `kept` (the paired session, unless
 * null) as the pair page left it.
 */
function browser(routes, kept = SESSION) {
  const requests = [];
  const assigned = [];
  const timers = [];
  let hashChange = () => {};
  const location = { hash: '', assign: (url) => assigned.push(url) };
  const storage = new FakeStorage(kept ? { [SESSION_KEY]: JSON.stringify(kept) } : {});
  const env = {
    fetch: async (path, init) => {
      requests.push({ path, ...init });
      const route = routes[`${init.method} ${path}`];
      if (!route) return json(404, { code: 'not_found', message: `no route ${init.method} ${path}` });
      return route(init);
    },
    storage,
    location,
    onHashChange: (fn) => { hashChange = fn; },
    setTimeout: (fn, ms) => timers.push({ fn, ms }),
  };
  return { env, requests, assigned, timers, location, storage, hashChange: () => hashChange() };
}

/** Lets the transport's pending promises run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A stream of changes the test writes to: `send(text)`, `end()`. */
function eventStream() {
  let controller;
  const body = new ReadableStream({ start(c) { controller = c; } });
  const bytes = new TextEncoder();
  return {
    response: () => new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } }),
    send: (text) => controller.enqueue(bytes.encode(text)),
    end: () => controller.close(),
  };
}

test('the app gets the Tauri transport, a browser the web one', async () => {
  const invoked = [];
  const callbacks = [];
  const tauri = {
    invoke: async (command, args) => { invoked.push([command, args]); return 'ok'; },
    transformCallback: (fn) => callbacks.push(fn) - 1,
  };
  const app = choose(/** @type {any} */ ({ __TAURI_INTERNALS__: tauri }));
  assert.equal(app.kind, 'tauri');
  assert.equal(app.can.dispatch, true);
  assert.equal(app.can.navigate, false);
  await app.reply('i1', { action: 'skip' });
  await app.inbox(true);
  assert.deepEqual(invoked, [['reply', { id: 'i1', reply: { action: 'skip' } }], ['inbox', { pendingOnly: true }]]);
  // An app event is listened to through the event plugin, and its payload
  // reaches the page's handler.
  const views = [];
  app.onViewChanged((view) => views.push(view));
  assert.deepEqual(invoked[2], ['plugin:event|listen', { event: 'view-changed', target: { kind: 'Any' }, handler: 0 }]);
  callbacks[0]({ event: 'view-changed', payload: 'inbox' });
  assert.deepEqual(views, ['inbox']);

  const page = choose(/** @type {any} */ ({
    fetch: async () => json(200, {}),
    localStorage: new FakeStorage(),
    location: { hash: '', assign() {} },
    addEventListener() {},
    setTimeout() {},
  }));
  assert.equal(page.kind, 'web');
  // What only the app can do is hidden in a browser, not an error on click.
  assert.deepEqual(page.can, { dismiss: false, dispatch: false, quit: false, runOutput: false, navigate: true, devices: true });
  assert.equal(app.can.devices, false);
});

test('reads and changes alike send the session\'s token, same-origin credentials, JSON', () => {
  const get = requestInit('GET', 'tok', undefined);
  assert.equal(get.credentials, 'same-origin');
  assert.equal(get.headers['X-CSRF-Token'], 'tok', 'a cookie alone opens nothing: reads carry the token too');
  assert.equal(get.body, undefined);
  const post = requestInit('POST', 'tok', { label: 'Allow' });
  assert.equal(post.credentials, 'same-origin');
  assert.equal(post.headers['X-CSRF-Token'], 'tok');
  assert.equal(post.headers['Content-Type'], 'application/json');
  assert.equal(post.body, '{"label":"Allow"}');
  assert.equal(requestInit('DELETE', 'tok').headers['X-CSRF-Token'], 'tok');
});

test('a reply is POSTed to its item with the token the session gave', async () => {
  const b = browser({
    ...sessionRoute,
    'POST /api/items/a%2Fb/reply': () => json(200, { outcome: 'skipped', unconfirmed_defaults: {} }),
  });
  const web = webTransport(b.env);
  const outcome = await web.reply('a/b', { action: 'skip' });
  assert.equal(outcome.outcome, 'skipped');
  const post = b.requests.find((r) => r.method === 'POST');
  assert.equal(post.path, '/api/items/a%2Fb/reply');
  assert.equal(post.headers['X-CSRF-Token'], 'tok-123');
  assert.deepEqual(JSON.parse(post.body), { action: 'skip' });
  // The token is the kept one; nothing asks the server for it.
  await web.verdict('a/b', 'Allow').catch(() => {});
  await web.inbox().catch(() => {});
  assert.equal(b.requests.filter((r) => r.path === '/api/session').length, 0);
  assert.ok(b.requests.every((r) => r.headers['X-CSRF-Token'] === 'tok-123'), 'every request carries it');
});

test('a page that keeps no session goes to pairing before any request; a refused one is forgotten', async () => {
  const fresh = browser({ ...sessionRoute }, null);
  await assert.rejects(webTransport(fresh.env).inbox(), { code: 'unpaired' });
  assert.equal(fresh.requests.length, 0, 'without the token nothing is sent');
  assert.deepEqual(fresh.assigned, [PAIR_PAGE]);

  // A session the server no longer opens (revoked, expired; or a cookie
  // whose token this page never had): forgotten, and "pair again".
  const refused = browser({ 'GET /api/devices': () => json(401, { code: 'unauthorized', message: 'cookie alone' }) });
  await assert.rejects(webTransport(refused.env).devices(), { code: 'unpaired' });
  assert.deepEqual(refused.assigned, [`${PAIR_PAGE}#again`]);
  assert.equal(refused.storage.getItem(SESSION_KEY), null);

  // What is kept must be whole to be used.
  for (const junk of ['{', '{"csrf":""}', '{"csrf":"t"}', '"t"']) {
    assert.equal(keptSession(new FakeStorage({ [SESSION_KEY]: junk })), null, junk);
  }
  assert.deepEqual(keptSession(new FakeStorage({ [SESSION_KEY]: JSON.stringify({ ...SESSION, extra: 1 }) })), SESSION);
});

test('revoking a device is a DELETE with the token', async () => {
  const b = browser({ ...sessionRoute, 'DELETE /api/devices/d2': () => json(200, { id: 'd2' }) });
  await webTransport(b.env).revoke('d2');
  const sent = b.requests.find((r) => r.method === 'DELETE');
  assert.equal(sent.path, '/api/devices/d2');
  assert.equal(sent.headers['X-CSRF-Token'], 'tok-123');
});

test('the API\'s {code, message} is the error; another body reads as its status', async () => {
  const b = browser({
    ...sessionRoute,
    'POST /api/items/x/reply': () => json(409, { code: 'mismatched', message: 'an answer aimed at an approval' }),
    'POST /api/items/y/reply': () => new Response('<html>Bad Gateway</html>', { status: 502, statusText: 'Bad Gateway' }),
  });
  const web = webTransport(b.env);
  await assert.rejects(web.reply('x', { action: 'skip' }), { code: 'mismatched', message: 'an answer aimed at an approval' });
  await assert.rejects(web.reply('y', { action: 'skip' }), { code: 'http_502', message: 'HTTP 502 Bad Gateway' });
  const down = webTransport({ ...b.env, fetch: async () => { throw new TypeError('Failed to fetch'); } });
  await assert.rejects(down.inbox(), { code: 'unreachable', message: 'hark cannot be reached: Failed to fetch' });
});

test('a 401 from any call sends the browser to the pair page', async () => {
  const b = browser({ 'GET /api/inbox?pending_only=true': () => json(401, { code: 'unauthorized', message: 'no session' }) });
  const web = webTransport(b.env);
  await assert.rejects(web.inbox(true), { code: 'unpaired' });
  assert.deepEqual(b.assigned, [`${PAIR_PAGE}#again`]);
  const c = browser({ 'POST /api/items/i/reply': () => json(401, { code: 'unauthorized', message: 'no session' }) });
  await assert.rejects(webTransport(c.env).reply('i', { action: 'skip' }), { code: 'unpaired' });
  assert.deepEqual(c.assigned, [`${PAIR_PAGE}#again`]);
});

test('an SSE stream\'s text is read in pieces cut anywhere', () => {
  const got = [];
  const parse = sseParser((e) => got.push(e));
  parse(': keep-alive\n\nid: 7\nevent: add');
  parse('ed\ndata: {"a":\ndata: 1}\n');
  assert.deepEqual(got, []);
  parse('\r\nevent: resync\ndata:{}\n\ndata: plain\n\n');
  assert.deepEqual(got, [
    { type: 'added', data: '{"a":\n1}', lastId: '7' },
    { type: 'resync', data: '{}', lastId: '7' },
    { type: 'message', data: 'plain', lastId: '7' },
  ]);
});

test('the stream of changes is fetched with the token; every event calls back; it is opened again from its last id', async () => {
  const streams = [eventStream(), eventStream()];
  let opened = 0;
  const b = browser({ 'GET /api/events': () => streams[opened++].response() });
  const web = webTransport(b.env);
  let calls = 0;
  web.onInboxChanged(() => { calls += 1; });
  web.onInboxChanged(() => {});
  await settle();
  const sent = b.requests.filter((r) => r.path === '/api/events');
  assert.equal(sent.length, 1, 'one stream for every listener');
  assert.equal(sent[0].headers['X-CSRF-Token'], 'tok-123', 'the stream needs the token too');
  assert.equal(sent[0].headers['Last-Event-ID'], undefined);
  for (const [i, name] of SSE_EVENTS.entries()) streams[0].send(`id: ${i + 40}\nevent: ${name}\ndata: {}\n\n`);
  streams[0].send(': keep-alive\n\n');
  await settle();
  assert.equal(calls, SSE_EVENTS.length);
  // Dropped: opened again after a wait, resuming after the last event seen.
  streams[0].end();
  await settle();
  assert.equal(b.timers.length, 1);
  assert.equal(b.timers[0].ms, 1000);
  b.timers[0].fn();
  await settle();
  const again = b.requests.filter((r) => r.path === '/api/events');
  assert.equal(again.length, 2);
  assert.equal(again[1].headers['Last-Event-ID'], String(SSE_EVENTS.length - 1 + 40));
  // A fresh stream starts with `resync`: what changed while it was down is drawn.
  streams[1].send('id: 99\nevent: resync\ndata: {}\n\n');
  await settle();
  assert.equal(calls, SSE_EVENTS.length + 1);
});

test('a stream that cannot be opened is tried again ever later; a refused one goes to pairing', async () => {
  const b = browser({ 'GET /api/events': () => json(502, {}) });
  webTransport(b.env).onInboxChanged(() => {});
  for (const ms of [1000, 2000, 4000]) {
    await settle();
    assert.equal(b.timers.at(-1).ms, ms);
    b.timers.at(-1).fn();
  }
  const r = browser({ 'GET /api/events': () => json(401, { code: 'unauthorized', message: 'revoked' }) });
  webTransport(r.env).onInboxChanged(() => {});
  await settle();
  assert.deepEqual(r.assigned, [`${PAIR_PAGE}#again`]);
  assert.equal(r.timers.length, 0);
});

test('the browser\'s views are the URL\'s; Answer in the inbox opens the modal on that item', async () => {
  const pending = [{ id: 'i1' }, { id: 'i2' }];
  const b = browser({ 'GET /api/inbox?pending_only=false': () => json(200, { pending, view: null, focus: null }) });
  const web = webTransport(b.env);
  const views = [];
  let changed = 0;
  web.onViewChanged((v) => views.push(v));
  web.onInboxChanged(() => { changed += 1; });
  assert.equal((await web.inbox()).view, 'modal');
  b.location.hash = '#inbox';
  b.hashChange();
  assert.deepEqual(views, ['inbox']);
  assert.equal((await web.inbox()).view, 'inbox');
  await web.openItem('i2');
  assert.deepEqual(views, ['inbox', 'modal']);
  assert.equal(changed, 1);
  assert.equal((await web.inbox()).focus, 'i2');
});

const ID = '0b6f3a52-8d1e-4c1a-9a77-2f0e5d4c3b21';

test('a push\'s click (`#item/ID`) opens the modal on that item, through pairing when unpaired', async () => {
  assert.equal(itemOfHash(`#item/${ID}`), ID);
  assert.equal(itemOfHash(`#item/${ID.toUpperCase()}`), ID);
  assert.equal(itemOfHash(`#item=${ID}&code=ABCD`), ID, "the pair page's parameters");
  for (const hash of ['', '#modal', '#inbox', '#item/', '#item/../../evil', `#item/${ID}x`, '#item=javascript:alert(1)']) {
    assert.equal(itemOfHash(hash), null, hash);
  }
  assert.equal(itemPage(ID), `/#item/${ID}`);

  // Unpaired: to the pair page, which returns to the item.
  const unpaired = browser({ 'GET /api/session': () => json(401, { code: 'unauthorized', message: 'no session' }) });
  unpaired.location.hash = `#item/${ID}`;
  const lost = webTransport(unpaired.env);
  await assert.rejects(lost.device(), { code: 'unpaired' });
  assert.deepEqual(unpaired.assigned, [`${PAIR_PAGE}#again&item=${ID}`]);
  assert.equal(itemOfHash(`#again&item=${ID}`), ID);
  assert.equal(pairPage(null), PAIR_PAGE);
  assert.equal(pairPage(ID), `${PAIR_PAGE}#item=${ID}`);

  // Paired: the modal, on that item while it waits.
  const pending = [{ id: 'i1' }, { id: ID }];
  const b = browser({ 'GET /api/inbox?pending_only=true': () => json(200, { pending, view: null, focus: null }) });
  b.location.hash = `#item/${ID}`;
  const web = webTransport(b.env);
  const views = [];
  let changed = 0;
  web.onViewChanged((v) => views.push(v));
  web.onInboxChanged(() => { changed += 1; });
  const view = await web.inbox(true);
  assert.deepEqual([view.view, view.focus], ['modal', ID]);
  // Another click on the page already open: only its fragment changes.
  b.location.hash = '#inbox';
  b.hashChange();
  b.location.hash = '#item/i1';
  b.hashChange();
  assert.equal(changed, 0, 'not an id: nothing to open');
  pending[0].id = '1b6f3a52-8d1e-4c1a-9a77-2f0e5d4c3b21';
  b.location.hash = `#item/${pending[0].id}`;
  b.hashChange();
  assert.deepEqual(views, ['inbox', 'modal', 'modal']);
  assert.equal(changed, 1);
  assert.equal((await web.inbox(true)).focus, pending[0].id);
});

test('what only the app does is refused in the browser, and the modal\'s "shown" is a no-op', async () => {
  const b = browser({});
  const web = webTransport(b.env);
  await assert.rejects(web.dispatch({ prompt: 'x', verb: 'task', read_only: false }), { code: 'app_only' });
  await assert.rejects(web.runOutput('r'), { code: 'app_only' });
  await web.shown('i1');
  assert.equal(b.requests.length, 0);
});

test('pairing keeps the session\'s token; a wrong code and the rate limit say what to do', async () => {
  const sent = [];
  const storage = new FakeStorage();
  const answer = (response) => async (path, init) => { sent.push({ path, ...init }); return response(); };
  const session = await pair(answer(() => json(200, SESSION)), storage, 'ABCD-1234', 'Safari on iPhone');
  assert.deepEqual(session, SESSION);
  assert.deepEqual(keptSession(storage), SESSION, 'kept where only this origin reads it');
  assert.equal(sent[0].path, '/api/pair');
  assert.deepEqual(JSON.parse(sent[0].body), { code: 'ABCD-1234', device: 'Safari on iPhone' });
  assert.equal(sent[0].headers['X-CSRF-Token'], undefined);
  const none = new FakeStorage();
  await assert.rejects(pair(answer(() => json(401, { code: 'bad_code', message: 'no' })), none, 'x', 'd'),
    (e) => e.code === 'wrong_code' && /hark web pair/.test(e.message));
  await assert.rejects(pair(answer(() => json(429, { code: 'rate_limited', message: 'slow' }, { 'Retry-After': '30' })), none, 'x', 'd'),
    (e) => e.code === 'rate_limited' && /30 s/.test(e.message));
  await assert.rejects(pair(answer(() => json(429, {}, { 'Retry-After': '600' })), none, 'x', 'd'),
    (e) => /10 min/.test(e.message));
  await assert.rejects(pair(answer(() => json(400, { code: 'invalid', message: 'device name too long' })), none, 'x', 'd'),
    { code: 'invalid', message: 'device name too long' });
  assert.equal(keptSession(none), null, 'a failed pairing keeps nothing');
});

test('a device names itself from its user agent', () => {
  assert.equal(deviceName('Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'), 'Safari on iPhone');
  assert.equal(deviceName('Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36'), 'Chrome on Android (Pixel 8)');
  assert.equal(deviceName('Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36'), 'Chrome on Android');
  assert.equal(deviceName('Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'), 'Firefox on Linux');
  assert.equal(deviceName(''), 'Browser on a device');
});
