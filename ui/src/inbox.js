// @ts-check
// The inbox window, in sections (tabs): Waiting (waiting items, then the
// parked ones), History, Sessions, Runs, and the New run form.
// Keyboard: a section's letter (w h s r n) or Left/Right on the tabs switch
// sections; j/k or Down/Up move through the list; Enter opens the selected
// item (a waiting one in the modal, a run's output); / filters the list by
// text, project or session, Esc clears the filter.
import * as ipc from './ipc.js';
import { askerDetail, clip, coalesced, repliedBy, roughly } from './text.js';

/** @typedef {import('./bindings').ItemView} Item */

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

// One formatter for every row: building one per call costs memory.
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });

/** @param {number} ms */
function when(ms) {
  return dateTime.format(new Date(ms));
}

/**
 * A time as people say it, "3 min ago", the exact time on hover.
 * @param {number} ms @param {number} now @param {string} [prefix]
 */
function ago(ms, now, prefix = '') {
  const span = document.createElement('span');
  span.textContent = `${prefix}${roughly(now - ms)} ago`;
  span.title = when(ms);
  return span;
}

/** @param {number} ms */
function duration(ms) {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** Who asked, compactly; the command line and directory on hover. @param {Item} item */
function who(item) {
  const span = document.createElement('span');
  span.textContent = item.attribution.line;
  span.title = askerDetail(item);
  return span;
}

/** @param {Item} item */
function questions(item) {
  const asked = item.request.questions.map((q) => `[${q.header}] ${q.question}`).join('\n');
  return item.approval ? `${asked}\n${item.approval.tool}: ${item.approval.target}` : asked;
}

/** @param {Item} item */
function what(item) {
  const o = item.outcome;
  if (!o) return '';
  switch (o.outcome) {
    case 'answered': {
      const notes = Object.entries(o.annotations ?? {})
        .filter(([, a]) => a.notes)
        .map(([q, a]) => ` — note on ${q}: ${a.notes}`).join('');
      return JSON.stringify(o.answers) + (o.defaulted.length ? ` (defaults: ${o.defaulted.join(', ')})` : '') + notes;
    }
    case 'skipped': return 'skipped; defaults not confirmed';
    case 'timed_out': return 'nobody answered in time';
    case 'cancelled': return o.reason;
    case 'approved': return `allowed (${o.scope === 'turn' ? 'for the run' : o.scope === 'session' ? 'for the session' : 'this action'})`;
    case 'denied': return 'denied: the agent stays read-only';
    default: return '';
  }
}

/** @param {...(string | Node)} cells */
function row(...cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) {
    const td = document.createElement('td');
    td.append(cell);
    tr.append(td);
  }
  return tr;
}

/** Shows why an action failed in the inbox's alert region; `null` clears it. @param {string | null} message */
function showError(message) {
  $('inbox-error').textContent = message ?? '';
  $('inbox-error').hidden = message === null;
}

/** A row's button: runs `action`, says in the alert region if it failed, then redraws. @param {string} text @param {() => Promise<void>} action */
function button(text, action) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.addEventListener('click', () => action()
    .then(() => showError(null), (e) => showError(ipc.errorText(e)))
    .then(refresh));
  return b;
}

/** Shows what a run printed, below the Runs table. @param {string} id */
async function showOutput(id) {
  $('output-section').hidden = false;
  $('output-title').textContent = `Output of run ${id.slice(0, 8)}`;
  try {
    $('run-output').textContent = await ipc.runOutput(id);
  } catch (e) {
    $('run-output').textContent = ipc.errorText(e);
  }
  $('output-section').scrollIntoView();
}

/** The banner while the store refuses writes. @param {import('./bindings').StoreHealth | null} store */
function showStore(store) {
  $('store-warning').hidden = !store;
  $('store-warning').textContent = store
    ? `The store ${store.path} cannot be written: ${store.error}. ${store.unrecorded} item write(s) are held in memory only: ` +
      'every item can still be answered, but what is held is lost if hark stops before the store takes writes again. ' +
      'Free space on its disk; hark records what it holds as soon as it can.'
    : '';
}

/**
 * The tray's Quit, asked here while questions wait: quitting cancels them,
 * and the tray's menu is open to other programs, so only this answer quits.
 * @param {import('./bindings').InboxView} view
 */
function showQuit(view) {
  const appearing = $('quit-ask').hidden && view.quit_asked;
  $('quit-ask').hidden = !view.quit_asked;
  // Into the dialog, on the choice that changes nothing.
  if (appearing) $('quit-keep').focus();
  const n = view.pending.length;
  $('quit-question').textContent = n === 0
    ? 'Quit hark?'
    : `Quit hark? ${n === 1 ? '1 question is waiting: its agent' : `${n} questions are waiting: their agents`} will be told that hark is shutting down.`;
}

const refresh = coalesced(async () => {
  const view = await ipc.inbox();
  showStore(view.store);
  showQuit(view);
  $('pending-count').textContent = `(${view.pending.length})`;
  const pending = /** @type {HTMLElement} */ ($('pending').querySelector('tbody'));
  // Waiting first, then parked (each oldest first, as listed).
  const ordered = [...view.pending].sort((a, b) => Number(a.state === 'parked') - Number(b.state === 'parked'));
  pending.replaceChildren(...ordered.map((item) => {
    // A parked item no longer times out: it says how long it has waited.
    const parked = item.state === 'parked';
    const left = Math.max(0, item.deadline_ms - view.now_ms);
    const time = document.createElement('span');
    time.append(ago(item.created_ms, view.now_ms, 'asked '), parked
      ? `, parked · waiting ${roughly(view.now_ms - item.created_ms)}`
      : `, ${duration(left)} left`);
    const actions = document.createElement('span');
    actions.append(button('Answer', () => ipc.openItem(item.id)));
    // A parked run can be ended instead of resumed.
    if (parked) actions.append(' ', button('Cancel the run', async () => { await ipc.reply(item.id, { action: 'cancel' }); }));
    const tr = row(parked ? 'PARKED' : 'PENDING', questions(item), who(item), time, actions);
    tr.dataset.id = item.id;
    tr.dataset.state = item.state;
    return tr;
  }));
  const history = /** @type {HTMLElement} */ ($('history').querySelector('tbody'));
  history.replaceChildren(...view.history.map((item) => {
    const outcome = item.outcome ? item.outcome.outcome.replace('_', ' ').toUpperCase() : '';
    const waited = (item.settled_ms ?? view.now_ms) - item.created_ms;
    const replied = repliedBy(item);
    const by = replied ? `, ${replied}` : '';
    const time = document.createElement('span');
    time.append(ago(item.created_ms, view.now_ms, 'asked '), `, waited ${roughly(waited)}${by}`);
    const tr = row(outcome, questions(item), who(item), time,
      what(item), ipc.can.dismiss ? button('Dismiss', () => ipc.dismiss(item.id)) : '');
    tr.dataset.id = item.id;
    /** @type {HTMLElement} */ (tr.firstChild).className = 'outcome';
    return tr;
  }));
  const sessions = /** @type {HTMLElement} */ ($('sessions').querySelector('tbody'));
  sessions.replaceChildren(...view.sessions.map((session) => {
    const status = session.pending ? 'WAITING ON YOU' : session.alive === false ? 'ENDED' : session.alive ? 'ACTIVE' : '';
    const agent = [session.session_id, session.asker.command && clip(session.asker.command, 100), session.asker.cwd]
      .filter(Boolean).join(' · ');
    const last = session.last_outcome ? `last ${session.last_outcome.replace('_', ' ')}` : '';
    const tr = row(status, agent, `${session.items} asked, ${session.pending} waiting`,
      ago(session.last_asked_ms, view.now_ms, 'last asked '), last);
    tr.dataset.session = session.session_id;
    /** @type {HTMLElement} */ (tr.firstChild).className = 'outcome';
    return tr;
  }));
  const runs = /** @type {HTMLElement} */ ($('runs').querySelector('tbody'));
  runs.replaceChildren(...view.runs.map((run) => {
    const took = (run.finished_ms ?? view.now_ms) - run.created_ms;
    const exit = run.exit_code == null ? '' : `, exit ${run.exit_code}`;
    const command = clip(run.command, 100);
    const cost = run.cost_usd == null ? '' : `, $${run.cost_usd.toFixed(4)}`;
    const result = run.result ? clip(run.result, 200) : '';
    const time = document.createElement('span');
    time.append(ago(run.created_ms, view.now_ms, 'started '), `, took ${roughly(took)}${exit}${cost}`);
    const tr = row(run.status.toUpperCase(), command,
      `session ${run.session_id}${run.cwd ? ` in ${run.cwd}` : ''}${confinement(run.confinement)}`,
      time, `${run.items} asked, ${run.pending} waiting`, result,
      ipc.can.runOutput ? button('Output', () => showOutput(run.id)) : '');
    tr.dataset.id = run.id;
    /** @type {HTMLElement} */ (tr.firstChild).className = 'outcome';
    return tr;
  }));
  if (ipc.can.devices) await showDevices(view.now_ms);
  applyFilter();
  select(state.selected);
});

/**
 * The paired browsers, this one first, each revocable (this one's Revoke
 * unpairs it: the next call goes to the pair page).
 * @param {number} now
 */
async function showDevices(now) {
  const devices = await ipc.devices();
  const ordered = [...devices].sort((a, b) => Number(b.current) - Number(a.current));
  const body = /** @type {HTMLElement} */ ($('devices').querySelector('tbody'));
  body.replaceChildren(...ordered.map((d) => {
    const tr = row(d.current ? `${d.name} (this device)` : d.name, ago(d.paired_ms, now, 'paired '),
      d.last_seen_ms == null ? 'never seen' : ago(d.last_seen_ms, now, 'seen '),
      button(d.current ? 'Unpair this device' : 'Revoke', () => ipc.revoke(d.id)));
    tr.dataset.id = d.id;
    return tr;
  }));
}

/**
 * Where a run's agent ran, as its row says it (the same words as `hark runs`).
 * @param {import('./bindings').Confinement | null} c
 */
function confinement(c) {
  if (!c) return '';
  switch (c.state) {
    case 'confined': return ` · confined (${c.by})`;
    case 'unavailable': return ` · not confined: ${c.reason}`;
    default: return ' · not confined (turned off)';
  }
}

/**
 * The sections, in tab order: New run only where runs can be started, the
 * paired Devices only in a browser.
 */
const SECTIONS = ['waiting', 'history', 'sessions', 'runs', 'new-run', 'devices']
  .filter((name) => (name !== 'new-run' || ipc.can.dispatch) && (name !== 'devices' || ipc.can.devices));

const state = {
  section: 'waiting',
  /** The selected row's index in the current section's visible rows. */
  selected: 0,
};

/** Switches to a section. @param {string} section */
function showSection(section) {
  state.section = section;
  state.selected = 0;
  for (const name of SECTIONS) {
    const tab = $(`tab-${name}`);
    tab.setAttribute('aria-selected', String(name === section));
    tab.tabIndex = name === section ? 0 : -1;
    $(`panel-${name}`).hidden = name !== section;
  }
  applyFilter();
  select(0);
}

/** The current section's rows the filter leaves. @returns {HTMLTableRowElement[]} */
function rows() {
  return /** @type {HTMLTableRowElement[]} */ ([...$(`panel-${state.section}`).querySelectorAll('tbody > tr')])
    .filter((tr) => !tr.hidden);
}

/** Hides the rows of every list that do not hold the filter's text. */
function applyFilter() {
  const query = /** @type {HTMLInputElement} */ ($('filter')).value.trim().toLowerCase();
  for (const tr of /** @type {NodeListOf<HTMLTableRowElement>} */ (document.querySelectorAll('#inbox tbody > tr'))) {
    tr.hidden = query !== '' && !tr.textContent?.toLowerCase().includes(query);
  }
}

/** Marks the `index`th visible row selected (kept within the list). @param {number} index */
function select(index) {
  const list = rows();
  for (const tr of document.querySelectorAll('#inbox tr.selected')) {
    tr.classList.remove('selected');
    tr.removeAttribute('aria-selected');
  }
  if (list.length === 0) return;
  state.selected = Math.max(0, Math.min(index, list.length - 1));
  const tr = list[state.selected];
  tr.classList.add('selected');
  tr.setAttribute('aria-selected', 'true');
  tr.tabIndex = -1;
  if ($('inbox').contains(document.activeElement) && document.activeElement?.tagName !== 'INPUT') tr.focus();
  tr.scrollIntoView({ block: 'nearest', inline: 'nearest' });
}

/** Enter on the selected row: its first button (Answer, Output). */
function openSelected() {
  const tr = rows()[state.selected];
  const action = /** @type {HTMLButtonElement | null | undefined} */ (tr?.querySelector('button'));
  action?.click();
}

/** @param {KeyboardEvent} e */
function onKey(e) {
  if ($('inbox').hidden || e.ctrlKey || e.metaKey || e.altKey) return;
  const target = /** @type {HTMLElement} */ (e.target);
  const filter = /** @type {HTMLInputElement} */ ($('filter'));
  if (target === filter) {
    if (e.key === 'Escape') { filter.value = ''; applyFilter(); select(0); filter.blur(); e.preventDefault(); }
    else if (e.key === 'Enter' || e.key === 'ArrowDown') { filter.blur(); select(0); rows()[0]?.focus(); e.preventDefault(); }
    return;
  }
  const typing = target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement
    || (target instanceof HTMLInputElement && target.type !== 'checkbox');
  if (typing) return;
  const onTabs = target.getAttribute('role') === 'tab';
  const section = SECTIONS.find((name) => $(`tab-${name}`).dataset.key === e.key);
  if (section) { showSection(section); $(`tab-${section}`).focus(); e.preventDefault(); return; }
  if (onTabs && (e.key === 'ArrowRight' || e.key === 'ArrowLeft')) {
    const at = SECTIONS.indexOf(state.section) + (e.key === 'ArrowRight' ? 1 : SECTIONS.length - 1);
    const next = SECTIONS[at % SECTIONS.length];
    showSection(next);
    $(`tab-${next}`).focus();
    e.preventDefault();
    return;
  }
  switch (e.key) {
    case 'j': case 'ArrowDown': select(state.selected + 1); rows()[state.selected]?.focus(); e.preventDefault(); break;
    case 'k': case 'ArrowUp': select(state.selected - 1); rows()[state.selected]?.focus(); e.preventDefault(); break;
    case 'Enter': if (target.tagName !== 'BUTTON') { openSelected(); e.preventDefault(); } break;
    case '/': filter.focus(); e.preventDefault(); break;
    default: break;
  }
}

/** @param {string} id */
const field = (id) => /** @type {HTMLInputElement} */ (document.getElementById(id));

/** How many questions the builder holds (for fresh field ids). */
let built = 0;

/** Adds a question to the intake builder: its id, text, options, default, multi. */
function addIntakeQuestion() {
  built += 1;
  const n = built;
  const box = document.createElement('fieldset');
  box.className = 'intake-question';
  const legend = document.createElement('legend');
  legend.textContent = 'Question';
  box.append(legend);
  /** @param {string} name @param {string} label @param {string} [placeholder] */
  const input = (name, label, placeholder = '') => {
    const l = document.createElement('label');
    l.htmlFor = `intake-${name}-${n}`;
    l.textContent = label;
    const i = document.createElement('input');
    i.id = `intake-${name}-${n}`;
    i.dataset.field = name;
    i.placeholder = placeholder;
    box.append(l, i);
    return i;
  };
  input('id', 'Id', 'env');
  input('prompt', 'Question', 'Which environment?');
  input('options', 'Options', 'Staging, Production');
  input('default', 'Default', 'Staging');
  const multi = document.createElement('label');
  const check = document.createElement('input');
  check.type = 'checkbox';
  check.dataset.field = 'multi';
  multi.append(check, ' several may be picked');
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.textContent = 'Remove';
  remove.addEventListener('click', () => box.remove());
  box.append(multi, remove);
  $('intake-questions').append(box);
  /** @type {HTMLInputElement} */ (box.querySelector('input')).focus();
}

/** The builder's questions as an intake, or null when it holds none. */
function builtIntake() {
  const boxes = [...document.querySelectorAll('#intake-questions .intake-question')];
  if (boxes.length === 0) return null;
  const questions = boxes.map((box) => {
    const value = (/** @type {string} */ name) =>
      /** @type {HTMLInputElement} */ (box.querySelector(`[data-field=${name}]`)).value.trim();
    const labels = value('options').split(',').map((l) => l.trim()).filter(Boolean);
    const multi = /** @type {HTMLInputElement} */ (box.querySelector('[data-field=multi]')).checked;
    const defaults = value('default').split(',').map((l) => l.trim()).filter(Boolean);
    return {
      id: value('id'),
      prompt: value('prompt'),
      options: labels.map((label) => ({ value: label, label })),
      defaults,
      multi,
    };
  });
  return { questions };
}

/** Reads the dispatch form; an intake that is not JSON is the operator's to fix. */
function dispatchRequest() {
  const text = (/** @type {string} */ id) => field(id).value.trim();
  const intake = text('dispatch-intake');
  const fromBuilder = builtIntake();
  if (fromBuilder && intake) {
    throw { code: 'invalid', message: 'give the questions in the builder or as JSON, not both' };
  }
  /** @type {import('./bindings').DispatchRequest} */
  const request = {
    prompt: text('dispatch-prompt'),
    verb: /** @type {import('./bindings').Verb} */ (text('dispatch-verb')),
    read_only: field('dispatch-read-only').checked,
  };
  if (text('dispatch-agent')) request.agent_kind = /** @type {import('./bindings').AgentKind} */ (text('dispatch-agent'));
  if (text('dispatch-cwd')) request.cwd = text('dispatch-cwd');
  if (text('dispatch-session')) request.session = text('dispatch-session');
  if (fromBuilder) request.intake = fromBuilder;
  if (intake) {
    try {
      request.intake = JSON.parse(intake);
    } catch (e) {
      throw { code: 'invalid', message: `the intake is not JSON: ${e instanceof Error ? e.message : e}` };
    }
  }
  return request;
}

async function startRun() {
  const status = $('dispatch-status');
  try {
    const run = await ipc.dispatch(dispatchRequest());
    status.textContent = `Run ${run.run_id.slice(0, 8)} started; its output goes to ${run.log}`;
    status.className = 'muted';
    field('dispatch-prompt').value = '';
  } catch (e) {
    status.textContent = ipc.errorText(e);
    status.className = 'error';
  }
}

export function startInbox() {
  $('tab-new-run').hidden = !ipc.can.dispatch;
  $('tab-devices').hidden = !ipc.can.devices;
  for (const name of SECTIONS) $(`tab-${name}`).addEventListener('click', () => showSection(name));
  $('filter').addEventListener('input', () => { applyFilter(); select(0); });
  document.addEventListener('keydown', onKey);
  showSection('waiting');
  $('intake-add').addEventListener('click', addIntakeQuestion);
  $('quit-confirm').addEventListener('click', () => ipc.quit(true).catch((e) => showError(ipc.errorText(e))));
  $('quit-keep').addEventListener('click', () => ipc.quit(false).catch((e) => showError(ipc.errorText(e))));
  $('dispatch').addEventListener('submit', (event) => {
    event.preventDefault();
    startRun();
  });
  // Drawn only while on screen: a hidden inbox costs nothing per change.
  ipc.onInboxChanged(() => { if (!$('inbox').hidden) refresh(); });
}

/** The window switched to the inbox: draw it as it is now. */
export function inboxShown() {
  refresh();
}
