// The pages' transport seam: which transport is chosen, what the browser's
// sends (the session cookie's credentials, the CSRF token on changes), how
// its failures read, and the SSE stream feeding the same callback as the
// app's event. Fakes stand for the page's globals; nothing here is a page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { choose } from '../src/transport.js';
import { PAIR_PAGE, SSE_EVENTS, itemOfHash, itemPage, pair, pairPage, requestInit, webTransport } from '../src/ipc-web.js';
import { deviceName } from '../src/device.js';

/** A JSON response. */
const json = (status, body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });

/** A fake EventSource: records what it listens to, and can be fired. */
class FakeSource {
  static CLOSED = 2;
  static made = [];
  constructor(url) {
    this.url = url;
    this.readyState = 1;
    this.listeners = {};
    FakeSource.made.push(this);
  }
  addEventListener(name, fn) { (this.listeners[name] ??= []).push(fn); }
  fire(name) { for (const fn of this.listeners[name] ?? []) fn({ type: name }); }
}

/**
 * A browser for the web transport: `routes` answers each `METHOD path`;
 * every request is recorded.
 */
function browser(routes) {
  const requests = [];
  const assigned = [];
  const timers = [];
  let hashChange = () => {};
  const location = { hash: '', assign: (url) => assigned.push(url) };
  FakeSource.made = [];
  const env = {
    fetch: async (path, init) => {
      requests.push({ path, ...init });
      const route = routes[`${init.method} ${path}`];
      if (!route) return json(404, { code: 'not_found', message: `no route ${init.method} ${path}` });
      return route(init);
    },
    EventSource: FakeSource,
    location,
    onHashChange: (fn) => { hashChange = fn; },
    setTimeout: (fn, ms) => timers.push({ fn, ms }),
  };
  return { env, requests, assigned, timers, location, hashChange: () => hashChange() };
}

const SESSION = { device: { id: 'd1', name: 'Chrome on Android' }, csrf: 'tok-123' };
const sessionRoute = { 'GET /api/session': () => json(200, SESSION) };

test('the app gets the Tauri transport, a browser the web one', async () => {
  const invoked = [];
  const tauri = {
    core: { invoke: async (command, args) => { invoked.push([command, args]); return 'ok'; } },
    event: { listen: async () => () => {} },
  };
  const app = choose(/** @type {any} */ ({ __TAURI__: tauri }));
  assert.equal(app.kind, 'tauri');
  assert.equal(app.can.dispatch, true);
  assert.equal(app.can.navigate, false);
  await app.reply('i1', { action: 'skip' });
  await app.inbox(true);
  assert.deepEqual(invoked, [['reply', { id: 'i1', reply: { action: 'skip' } }], ['inbox', { pendingOnly: true }]]);

  const page = choose(/** @type {any} */ ({
    fetch: async () => json(200, {}),
    EventSource: FakeSource,
    location: { hash: '', assign() {} },
    addEventListener() {},
    setTimeout() {},
  }));
  assert.equal(page.kind, 'web');
  // What only the app can do is hidden in a browser, not an error on click.
  assert.deepEqual(page.can, { dismiss: false, dispatch: false, quit: false, runOutput: false, navigate: true, devices: true });
  assert.equal(app.can.devices, false);
});

test('reads send no token; changes send the session\'s CSRF token, same-origin credentials, JSON', () => {
  const get = requestInit('GET', 'tok', undefined);
  assert.equal(get.credentials, 'same-origin');
  assert.equal(get.headers['X-CSRF-Token'], undefined);
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
  // The session is asked once, however many changes follow.
  await web.verdict('a/b', 'Allow').catch(() => {});
  assert.equal(b.requests.filter((r) => r.path === '/api/session').length, 1);
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
  assert.deepEqual(b.assigned, [PAIR_PAGE]);
  // A change without a session never goes out: the session's 401 comes first.
  const c = browser({ 'GET /api/session': () => json(401, { code: 'unauthorized', message: 'no session' }) });
  await assert.rejects(webTransport(c.env).reply('i', { action: 'skip' }), { code: 'unpaired' });
  assert.equal(c.requests.filter((r) => r.method === 'POST').length, 0);
  assert.deepEqual(c.assigned, [PAIR_PAGE]);
});

test('every SSE event calls the inbox callback; a refused stream is checked and opened again', async () => {
  const b = browser({ ...sessionRoute });
  const web = webTransport(b.env);
  let calls = 0;
  web.onInboxChanged(() => { calls += 1; });
  web.onInboxChanged(() => {});
  assert.equal(FakeSource.made.length, 1, 'one stream for every listener');
  const source = FakeSource.made[0];
  assert.equal(source.url, '/api/events');
  for (const name of SSE_EVENTS) source.fire(name);
  assert.equal(calls, SSE_EVENTS.length);
  // A dropped connection EventSource retries by itself (with Last-Event-ID).
  source.fire('error');
  assert.equal(b.timers.length, 0);
  // Refused (closed): the session is checked, then a new stream later.
  source.readyState = FakeSource.CLOSED;
  source.fire('error');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(b.requests.filter((r) => r.path === '/api/session').length, 1);
  assert.equal(b.timers.length, 1);
  b.timers[0].fn();
  assert.equal(FakeSource.made.length, 2);
  // A fresh stream starts with `resync`: what changed while it was down is drawn.
  FakeSource.made[1].fire('resync');
  assert.equal(calls, SSE_EVENTS.length + 1);
});

test('a revoked session closes the stream and goes to pairing', async () => {
  const b = browser({ 'GET /api/session': () => json(401, { code: 'unauthorized', message: 'revoked' }) });
  const web = webTransport(b.env);
  web.onInboxChanged(() => {});
  FakeSource.made[0].readyState = FakeSource.CLOSED;
  FakeSource.made[0].fire('error');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(b.assigned, [PAIR_PAGE]);
  assert.equal(b.timers.length, 0);
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
  assert.deepEqual(unpaired.assigned, [`${PAIR_PAGE}#item=${ID}`]);
  assert.equal(pairPage(null), PAIR_PAGE);

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

test('pairing: a wrong code and the rate limit say what to do', async () => {
  const sent = [];
  const answer = (response) => async (path, init) => { sent.push({ path, ...init }); return response(); };
  const session = await pair(answer(() => json(200, SESSION)), 'ABCD-1234', 'Safari on iPhone');
  assert.deepEqual(session, SESSION);
  assert.equal(sent[0].path, '/api/pair');
  assert.deepEqual(JSON.parse(sent[0].body), { code: 'ABCD-1234', device: 'Safari on iPhone' });
  assert.equal(sent[0].headers['X-CSRF-Token'], undefined);
  await assert.rejects(pair(answer(() => json(401, { code: 'bad_code', message: 'no' })), 'x', 'd'),
    (e) => e.code === 'wrong_code' && /hark web pair/.test(e.message));
  await assert.rejects(pair(answer(() => json(429, { code: 'rate_limited', message: 'slow' }, { 'Retry-After': '30' })), 'x', 'd'),
    (e) => e.code === 'rate_limited' && /30 s/.test(e.message));
  await assert.rejects(pair(answer(() => json(429, {}, { 'Retry-After': '600' })), 'x', 'd'),
    (e) => /10 min/.test(e.message));
  await assert.rejects(pair(answer(() => json(400, { code: 'invalid', message: 'device name too long' })), 'x', 'd'),
    { code: 'invalid', message: 'device name too long' });
});

test('a device names itself from its user agent', () => {
  assert.equal(deviceName('Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'), 'Safari on iPhone');
  assert.equal(deviceName('Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36'), 'Chrome on Android (Pixel 8)');
  assert.equal(deviceName('Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Mobile Safari/537.36'), 'Chrome on Android');
  assert.equal(deviceName('Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'), 'Firefox on Linux');
  assert.equal(deviceName(''), 'Browser on a device');
});
