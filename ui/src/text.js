// @ts-check
// Helpers shared by the views.

/**
 * The start of `text`, at most `max` characters, with an ellipsis when cut.
 * An agent's command line can run to pages (its system prompt).
 * @param {string} text @param {number} max
 */
export function clip(text, max) {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * `fn`, made so that a burst of calls runs it at most twice: a call while a
 * run is in flight asks for one more run after it, which sees every change
 * made meanwhile. (Fifty questions arriving at once redraw twice, not fifty
 * times.)
 * @param {() => Promise<void>} fn @returns {() => Promise<void>}
 */
export function coalesced(fn) {
  /** @type {Promise<void> | null} */
  let running = null;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await fn();
        } while (again);
      } finally {
        running = null;
      }
    })();
    return running;
  };
}
