// @ts-check
// The app's one window shows the modal or the inbox, as the app says
// (`view-changed`, and the inbox view's `view` when the page loads).
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
  if (view === 'modal') modalShown();
  else inboxShown();
}

startModal();
startInbox();
ipc.onViewChanged(show);
ipc.inbox(true).then((view) => show(view.view ?? 'modal'));
