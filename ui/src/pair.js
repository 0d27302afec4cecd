// @ts-check
// The pair page: a one-time code (typed, or from the QR link's `#code=`)
// and a name for this device are exchanged for a session (an HttpOnly
// cookie set by the response, and the session's token, which the page
// keeps in localStorage); then the questions, or the one item a push's
// click opened (`#item=ID`, which the page sent here with). `#again`: the
// page sent here had a session that no longer opens.
import { itemOfHash, itemPage, pair } from './ipc-web.js';
import { deviceName } from './device.js';

/** @param {string} id */
const field = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));
const error = /** @type {HTMLElement} */ (document.getElementById('pair-error'));
const submit = /** @type {HTMLButtonElement} */ (document.getElementById('pair-submit'));
const again = /** @type {HTMLElement} */ (document.getElementById('pair-again'));

/** @param {string | null} message */
function showError(message) {
  error.textContent = message ?? '';
  error.hidden = message === null;
}

/** The item to open once paired (a push's click), if any. @type {string | null} */
let opening = null;

/**
 * `hark web pair`'s link carries the code in the fragment (never sent to a
 * server or a proxy's log); `?code=` is read too. The URL then drops it.
 * Read when the page loads, and when a link is opened on the page already
 * showing (only its fragment changes then).
 */
function readLink() {
  const code = new URLSearchParams(location.hash.slice(1)).get('code')
    ?? new URLSearchParams(location.search).get('code');
  opening = itemOfHash(location.hash) ?? opening;
  again.hidden = !new URLSearchParams(location.hash.slice(1)).has('again');
  if (code) {
    history.replaceState(null, '', opening ? `${location.pathname}#item=${opening}` : location.pathname);
    field('pair-code').value = code;
    showError(null);
  }
  field('pair-device').value ||= deviceName(navigator.userAgent);
  // With the code from the link, only the name is left to look at.
  (code ? field('pair-device') : field('pair-code')).focus();
}

readLink();
window.addEventListener('hashchange', readLink);

/** @type {HTMLFormElement} */ (document.getElementById('pair-form')).addEventListener('submit', async (e) => {
  e.preventDefault();
  const code = field('pair-code').value.trim();
  const device = field('pair-device').value.trim();
  if (!code) { showError('Type the pairing code.'); field('pair-code').focus(); return; }
  if (!device) { showError('Give this device a name.'); field('pair-device').focus(); return; }
  showError(null);
  submit.disabled = true;
  try {
    await pair(window.fetch.bind(window), localStorage, code, device);
    // The code is spent: leave it out of the history.
    location.replace(opening ? itemPage(opening) : '/');
  } catch (err) {
    const e = /** @type {import('./bindings').IpcError} */ (err);
    showError(e && e.message ? e.message : String(err));
    field('pair-code').focus();
    field('pair-code').select();
  } finally {
    submit.disabled = false;
  }
});
