// @ts-check
// Text helpers shared by the views.

/**
 * The start of `text`, at most `max` characters, with an ellipsis when cut.
 * An agent's command line can run to pages (its system prompt).
 * @param {string} text @param {number} max
 */
export function clip(text, max) {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
