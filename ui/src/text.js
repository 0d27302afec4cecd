// @ts-check
// Helpers shared by the views.

/**
 * The first `max` characters of `text`, with "…" when some were cut: the
 * core's `hark_core::text::clip`, counting as it does (Unicode scalar
 * values, which a string's iterator yields, not UTF-16 units), so an emoji
 * is one character and is never cut in half. An agent's command line can run
 * to pages (its system prompt): only its start is walked.
 * @param {string} text @param {number} max @returns {string}
 */
export function clip(text, max) {
  let count = 0;
  let end = 0;
  for (const char of text) {
    if (count === max) return `${text.slice(0, end)}…`;
    count += 1;
    end += char.length;
  }
  return text;
}

/**
 * How an item settled and who replied, as the core's
 * `ItemView::replied_by_label` says it: "answered by desktop", "answered on
 * phone (Pixel 8)" (a paired browser, by its name), "allowed on phone (from
 * its notification)" (a push's button), "skipped by alice on devbox" (the
 * team's hub); null when nobody replied.
 * @param {import('./bindings').ItemView} item @returns {string | null}
 */
export function repliedBy(item) {
  const by = item.replied_by;
  if (!by) return null;
  const outcome = item.outcome?.outcome;
  const how = outcome === 'approved' ? 'allowed' : outcome ?? 'replied';
  const device = item.replied_device;
  const remote = item.replied_remote;
  let who;
  if (remote) who = `by ${remote.operator} on ${remote.host}`;
  else if (device) who = `on phone (${device.name ?? `device ${device.id}`})`;
  else if (by === 'push') who = 'on phone (from its notification)';
  else who = `by ${by}`;
  return `${how} ${who}`;
}

/**
 * The whole of who asked, for a hover: the command line (its start: it can
 * run to pages) and the directory.
 * @param {import('./bindings').ItemView} item @returns {string}
 */
export function askerDetail(item) {
  return [item.asker.command && clip(item.asker.command, 2000), item.asker.cwd && `in ${item.asker.cwd}`]
    .filter(Boolean).join('\n');
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

/**
 * How long something has waited, roughly, as a person says it: "40 s",
 * "3 min", "2 h 5 min" (a parked item can wait for hours).
 * @param {number} ms @returns {string}
 */
export function roughly(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
}
