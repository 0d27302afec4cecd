// @ts-check
// Picks the view for this window (#modal or #inbox) and starts it.
import { startModal } from './modal.js';
import { startInbox } from './inbox.js';

const view = location.hash.slice(1) || 'modal';
if (view === 'inbox') {
  startInbox();
} else {
  startModal();
}
