// @ts-check
// The app's one window shows the modal or the inbox, as the app says
// (`view-changed`, and the inbox view's `view` when the page loads). In a
// browser the page switches them itself, by the links of `#views` (the
// URL's `#modal` or `#inbox`), and says which device it is paired as.
import { startModal, modalShown } from './modal.js';
import { startInbox, inboxShown } from './inbox.js';
import * as ipc from './ipc.js';

/** @param {import('./bindings').View | null} view */
function show(view) {
  if (!view) return; // hidden: the last view stays drawn for next time
  for (const name of ['modal', 'inbox']) {
    /** @type {HTMLElement} */ (document.getElementById(name)).hidden = name !== view;
  }
  history.replaceState(null, '', `#${view}`);
  for (const name of ['modal', 'inbox']) {
    const link = /** @type {HTMLElement} */ (document.getElementById(`to-${name}`));
    if (name === view) link.setAttribute('aria-current', 'page'); else link.removeAttribute('aria-current');
  }
  if (view === 'modal') modalShown();
  else inboxShown();
}

if (ipc.can.navigate) /** @type {HTMLElement} */ (document.getElementById('views')).hidden = false;
if (ipc.device) {
  ipc.device().then((device) => {
    /** @type {HTMLElement} */ (document.getElementById('device-name')).textContent = `paired as ${device.name}`;
  }, () => {});
}
startModal();
startInbox();
ipc.onViewChanged(show);
ipc.inbox(true).then((view) => show(view.view ?? 'modal'));
