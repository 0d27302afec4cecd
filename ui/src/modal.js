// @ts-check
// The question modal: one pending item at a time, one question at a time.
// Keyboard: digits pick, Space toggles, Enter submits, Esc skips, Alt+N
// opens the note for the agent.
// What agents write (the question, descriptions, previews) is Markdown,
// rendered and sanitized in Rust (`ipc.markdown`); the focused option's
// preview shows below the options.
// An approval shows the tool, its target and a preview, and takes a verdict:
// Enter allows with the picked scope, Esc denies.
// A parked item (nobody answered in its bounded wait, so its agent is paused
// until it is answered) says so and how long it has waited, where a pending
// one counts down; it is answered the same way.
import * as ipc from './ipc.js';
import { askerDetail, coalesced, roughly } from './text.js';

/** @typedef {import('./bindings').ItemView} Item */
/** @typedef {import('./bindings').Question} Question */
/** @typedef {import('./bindings').Pick} Pick */

const OTHER = '__other__';
const RECOMMENDED = ' (Recommended)';

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

const state = {
  /** @type {Item[]} */ pending: [],
  /** @type {Item | null} */ item: null,
  index: 0,
  /** Picks made so far for the current item, by question text. @type {Record<string, Pick>} */
  picks: {},
  /** Notes made so far for the current item, by question text. @type {Record<string, string>} */
  notes: {},
  /** The current question's options' previews, rendered (null: none). @type {(string | null)[]} */
  previews: [],
  /** Whether the operator touched the current question (else its default stands). */
  touched: false,
  clockSkew: 0,
  /** @type {number | undefined} */ ticker: undefined,
  /** The item last announced as drawn. @type {string | null} */ announced: null,
};

/** @param {Question} q @returns {string[]} */
function defaults(q) {
  if (q.default != null) return Array.isArray(q.default) ? q.default : [q.default];
  return q.options.map((o) => o.label).filter((l) => l.endsWith(RECOMMENDED));
}

const refresh = coalesced(async () => {
  const view = await ipc.inbox(true);
  state.pending = view.pending;
  state.clockSkew = view.now_ms - Date.now();
  const still = state.item && view.pending.find((i) => i.id === state.item?.id);
  const focused = view.focus ? view.pending.find((i) => i.id === view.focus) : undefined;
  const next = (focused && focused.id !== state.item?.id && !state.touched && state.index === 0 ? focused : null)
    || still || focused || view.pending[0] || null;
  if (!next || next.id !== state.item?.id) {
    state.item = next;
    state.index = 0;
    state.picks = {};
    state.notes = {};
    renderQuestion();
  } else {
    // The same item, as it is now (it may have parked): what was picked stays.
    state.item = next;
  }
  renderChrome();
});

function renderChrome() {
  const item = state.item;
  $('idle').hidden = !!item;
  $('question-form').hidden = !item;
  $('queue-count').textContent = state.pending.length > 1 ? `${state.pending.length} waiting` : '';
  $('parked').hidden = item?.state !== 'parked';
  // A parked run can also be ended instead of resumed.
  $('cancel-run').hidden = item?.state !== 'parked';
  if (!item) {
    $('header-chip').textContent = '';
    $('time-left').textContent = '';
    $('asker').textContent = '';
    window.clearInterval(state.ticker);
    state.ticker = undefined;
    return;
  }
  // Who asks, compactly; the whole command line and directory on hover.
  $('asker').textContent = `Asked by ${item.attribution.line}`;
  $('asker').title = askerDetail(item);
  tick();
  if (state.ticker === undefined) state.ticker = window.setInterval(tick, 1000);
}

function tick() {
  const item = state.item;
  if (!item) return;
  const now = Date.now() + state.clockSkew;
  if (item.state === 'parked') {
    $('time-left').textContent = `waited ${roughly(now - item.created_ms)}`;
    return;
  }
  const left = Math.max(0, Math.round((item.deadline_ms - now) / 1000));
  const m = Math.floor(left / 60);
  const s = String(left % 60).padStart(2, '0');
  $('time-left').textContent = `${m}:${s} left`;
}

function renderQuestion() {
  const item = state.item;
  $('error').hidden = true;
  state.touched = false;
  if (!item) return;
  const q = item.request.questions[state.index];
  const total = item.request.questions.length;
  $('header-chip').textContent = q.header;
  $('progress').textContent = total > 1 ? `Question ${state.index + 1} of ${total}` : 'Question';
  $('question-text').textContent = q.question;
  const notes = /** @type {HTMLTextAreaElement} */ ($('notes'));
  notes.value = state.notes[q.question] ?? '';
  /** @type {HTMLDetailsElement} */ ($('notes-box')).open = notes.value !== '';
  state.previews = [];
  $('preview').hidden = true;
  $('submit-label').textContent = state.index + 1 < total ? 'Next' : 'Submit';
  // An approval shows what the agent wants to do and takes a verdict: no free text.
  const approval = item.approval;
  $('approval').hidden = !approval;
  $('skip-label').textContent = approval ? 'Deny' : 'Skip';
  if (approval) {
    $('approval-tool').textContent = approval.tool;
    $('approval-target').textContent = approval.target;
    showDiff($('approval-preview'), approval.preview);
  }
  $('notes-box').hidden = !!approval;
  const type = q.multiSelect ? 'checkbox' : 'radio';
  const picked = defaults(q);
  const box = $('options');
  box.replaceChildren();
  q.options.forEach((o, i) => {
    const label = document.createElement('label');
    label.className = 'option';
    const input = document.createElement('input');
    input.type = type;
    input.name = 'choice';
    input.value = o.label;
    input.checked = picked.includes(o.label);
    const key = document.createElement('kbd');
    key.textContent = String(i + 1);
    label.append(input, ' ', key, ' ', o.label);
    // Only an option with a description points at one.
    if (o.description) {
      const small = document.createElement('small');
      small.id = `desc-${i}`;
      small.textContent = o.description;
      label.append(small);
      input.setAttribute('aria-describedby', small.id);
    }
    box.append(label);
  });
  box.addEventListener('change', () => { state.touched = true; }, { once: true });
  box.addEventListener('focusin', showPreview);
  box.addEventListener('change', showPreview);
  renderMarkdown(item, state.index);
  if (approval) {
    focusFirst(box);
    announce(item);
    return;
  }
  const other = document.createElement('label');
  other.className = 'option';
  const otherInput = document.createElement('input');
  otherInput.type = type;
  otherInput.name = 'choice';
  otherInput.value = OTHER;
  otherInput.id = 'other-choice';
  // The text field is named by its choice's word, "Other".
  const otherLabel = document.createElement('span');
  otherLabel.id = 'other-label';
  otherLabel.textContent = 'Other';
  const text = document.createElement('input');
  text.type = 'text';
  text.id = 'other-text';
  text.placeholder = 'type your own answer';
  text.setAttribute('aria-labelledby', otherLabel.id);
  text.addEventListener('input', () => {
    otherInput.checked = text.value.length > 0 || otherInput.checked;
    if (!q.multiSelect && text.value.length > 0) otherInput.checked = true;
    state.touched = true;
  });
  other.append(otherInput, ' ', otherLabel, ': ', text);
  box.append(other);
  focusFirst(box);
  announce(item);
}

/**
 * Replaces the question's text, its options' descriptions and previews with
 * their Markdown, rendered (the plain text stays if rendering fails or the
 * modal has moved on meanwhile).
 * @param {Item} item @param {number} index
 */
async function renderMarkdown(item, index) {
  const q = item.request.questions[index];
  const texts = [q.question, ...q.options.map((o) => o.description), ...q.options.map((o) => o.preview ?? '')];
  let html;
  try { html = await ipc.markdown(texts); } catch { return; }
  if (state.item?.id !== item.id || state.index !== index) return;
  $('question-text').innerHTML = html[0];
  q.options.forEach((o, i) => {
    const description = document.getElementById(`desc-${i}`);
    if (description && o.description) description.innerHTML = html[1 + i];
  });
  state.previews = q.options.map((o, i) => (o.preview ? html[1 + q.options.length + i] : null));
  showPreview();
}

/** Shows the preview of the focused option (else the picked one), if it has one. */
function showPreview() {
  const inputs = [...document.querySelectorAll('#options input[name=choice]')];
  const focused = inputs.indexOf(/** @type {Element} */ (document.activeElement));
  const at = focused >= 0 ? focused : inputs.findIndex((e) => /** @type {HTMLInputElement} */ (e).checked);
  const html = at >= 0 ? state.previews[at] : null;
  $('preview').hidden = !html;
  $('preview').innerHTML = html ?? '';
}

/**
 * An approval's preview as a unified diff: added, removed and hunk lines
 * coloured (each line is text, never markup).
 * @param {HTMLElement} pre @param {string} text
 */
function showDiff(pre, text) {
  pre.replaceChildren(...text.split('\n').map((line) => {
    const span = document.createElement('span');
    span.textContent = `${line}\n`;
    if (line.startsWith('+') && !line.startsWith('+++')) span.className = 'diff-add';
    else if (line.startsWith('-') && !line.startsWith('---')) span.className = 'diff-del';
    else if (line.startsWith('@@')) span.className = 'diff-hunk';
    return span;
  }));
}

/** Focuses the picked option, else the first. @param {HTMLElement} box */
function focusFirst(box) {
  const first = /** @type {HTMLInputElement | null} */ (box.querySelector('input:checked') || box.querySelector('input'));
  first?.focus();
}

/** Tells the app the modal drew this item (once, when its first question is on screen). @param {Item} item */
function announce(item) {
  if (state.index === 0 && !$('modal').hidden && state.announced !== item.id) {
    const id = item.id;
    state.announced = id;
    requestAnimationFrame(() => { ipc.shown(id).catch(() => {}); });
  }
}

/** The window switched to the modal: the keyboard goes to the options. */
export function modalShown() {
  focusFirst($('options'));
  if (state.item) announce(state.item);
}

/** The current question's pick, or null to leave it to its default. @returns {Pick | null} */
function currentPick() {
  const q = /** @type {Item} */ (state.item).request.questions[state.index];
  const chosen = [...document.querySelectorAll('#options input[name=choice]:checked')]
    .map((e) => /** @type {HTMLInputElement} */ (e).value);
  const text = /** @type {HTMLInputElement | null} */ (document.getElementById('other-text'))?.value.trim() ?? '';
  if (chosen.includes(OTHER) && text) return { text };
  const labels = chosen.filter((l) => l !== OTHER);
  if (!state.touched && defaults(q).length > 0) return null;
  return q.multiSelect ? labels : (labels[0] ?? null);
}

async function submit() {
  const item = state.item;
  if (!item) return;
  const q = item.request.questions[state.index];
  const pick = currentPick();
  if (pick === null && defaults(q).length === 0) {
    showError('Pick an option or type your own answer.');
    return;
  }
  if (item.approval) {
    const label = typeof pick === 'string' ? pick : defaults(q)[0];
    if (!label) { showError('Pick allow or deny.'); return; }
    await settle(() => ipc.verdict(item.id, label));
    return;
  }
  if (pick !== null) state.picks[q.question] = pick;
  const note = /** @type {HTMLTextAreaElement} */ ($('notes')).value.trim();
  if (note) state.notes[q.question] = note; else delete state.notes[q.question];
  if (state.index + 1 < item.request.questions.length) {
    state.index += 1;
    renderQuestion();
    return;
  }
  await send({ action: 'answer', answers: state.picks, notes: state.notes });
}

/** @param {import('./bindings').WireReply} reply */
async function send(reply) {
  const item = state.item;
  if (!item) return;
  await settle(() => ipc.reply(item.id, reply));
}

/** Sends a reply; on success moves on, else shows why. @param {() => Promise<unknown>} call */
async function settle(call) {
  try {
    await call();
    state.item = null;
    await refresh();
  } catch (e) {
    showError(ipc.errorText(e));
    await refresh();
  }
}

/** Esc and the left button: skip a question set, deny an approval. @returns {import('./bindings').WireReply} */
function skipOrDeny() {
  return state.item?.approval ? { action: 'deny' } : { action: 'skip' };
}

/** @param {string} message */
function showError(message) {
  $('error').textContent = message;
  $('error').hidden = false;
}

/** @param {KeyboardEvent} e */
function onKey(e) {
  if (!state.item || $('modal').hidden) return;
  const typing = e.target instanceof HTMLTextAreaElement
    || (e.target instanceof HTMLInputElement && e.target.type === 'text');
  if (e.altKey && e.key.toLowerCase() === 'n' && !state.item.approval) {
    e.preventDefault();
    /** @type {HTMLDetailsElement} */ ($('notes-box')).open = true;
    $('notes').focus();
  } else if (e.key === 'Enter' && e.shiftKey && e.target instanceof HTMLTextAreaElement) {
    // A new line in the note.
  } else if (e.key === 'Escape') {
    e.preventDefault();
    send(skipOrDeny());
  } else if (e.key === 'Enter') {
    e.preventDefault();
    submit();
  } else if (!typing && /^[1-9]$/.test(e.key)) {
    const inputs = /** @type {HTMLInputElement[]} */ ([...document.querySelectorAll('#options input[name=choice]')]);
    const input = inputs[Number(e.key) - 1];
    if (!input) return;
    e.preventDefault();
    input.checked = input.type === 'checkbox' ? !input.checked : true;
    input.focus();
    state.touched = true;
    if (input.value === OTHER) $('other-text').focus();
  }
}

export function startModal() {
  $('question-form').addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  $('skip').addEventListener('click', () => send(skipOrDeny()));
  $('cancel-run').addEventListener('click', () => send({ action: 'cancel' }));
  document.addEventListener('keydown', onKey);
  ipc.onInboxChanged(() => { refresh(); });
  refresh();
}
