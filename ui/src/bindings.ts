// Generated from the Rust types by `cargo test -p hark-app` (HARK_WRITE_BINDINGS=1 rewrites it).
// Do not edit by hand.

export type ItemId = string;

export type RunId = string;

export type SessionId = string;

export type DeviceId = string;

export type DeviceRef = { id: DeviceId, 
/**
 * Its name (`None` when the store no longer has the device).
 */
name: string | null, };

export type Remote = { operator: string, host: string, 
/**
 * The surface they replied from (`desktop`, `web`, …), as they said.
 */
surface?: string, };

export type DeviceView = { id: DeviceId, name: string, paired_ms: number, last_seen_ms: number | null, 
/**
 * It is the device asking (the web's list; always false on the socket).
 */
current: boolean, };

export type Asker = { 
/**
 * The agent's process id (the MCP server's parent).
 */
pid?: number | null, 
/**
 * The agent's working directory.
 */
cwd?: string | null, 
/**
 * The agent's command line, where the platform tells it.
 */
command?: string | null, 
/**
 * The MCP client's name and version, from its `initialize`.
 */
client?: string | null, 
/**
 * Set when a sub-agent of the agent asked (its host's hook said so).
 */
sub_agent?: SubAgent | null, 
/**
 * The agent runs confined by `hark run`: the daemon sets it (a run
 * that reported itself confined, asking from its own process), never
 * the client.
 */
confined?: boolean, 
/**
 * The host it asked from, when that is not this machine: the daemon
 * sets it from the host's socket the call came in on, never the client.
 */
host?: string, };

export type SubAgent = { id: string, 
/**
 * Its type (`general-purpose`, `Explore`, a custom agent's name).
 */
kind: string, };

export type Attribution = { 
/**
 * The agent: `claude`, `codex`, or the asking program's name.
 */
agent: string, 
/**
 * The last component of the directory it works in.
 */
project: string | null, 
/**
 * The session, short: a name as given, an id's first 8 characters.
 */
session: string, 
/**
 * The run's short id.
 */
run: string | null, 
/**
 * `sub-agent general-purpose of run 1a2b3c4d`, for a sub-agent.
 */
sub_agent: string | null, 
/**
 * The host it asked from, when that is not this machine.
 */
host: string | null, 
/**
 * Whether the agent runs confined by `hark run`; the line says when
 * it does not (`· not confined`).
 */
confined: boolean, 
/**
 * All of it in one line, as every surface shows it: `claude in hark ·
 * session nested · run 1a2b3c4d` (a sub-agent's label takes the
 * agent's and the run's place).
 */
line: string, };

export type QuestionOption = { label: string, description: string, 
/**
 * What to show while the option is focused (AskUserQuestion's
 * `preview`: a mockup, a code snippet, a comparison), Markdown.
 */
preview?: string, };

export type AnswerValue = string | Array<string>;

export type Question = { 
/**
 * The full question text; also its key in the answers.
 */
question: string, 
/**
 * A short chip label (at most [`MAX_HEADER_CHARS`] characters).
 */
header: string, options: Array<QuestionOption>, 
/**
 * Whether several options may be picked; the answer is then an array.
 */
multiSelect: boolean, 
/**
 * An explicit pre-picked default (a label, or labels for multiSelect).
 * Without it, options whose label ends in ` (Recommended)` are the default.
 */
default?: AnswerValue | null, };

export type AskRequest = { questions: Array<Question>, };

export type Annotation = { preview?: string | null, notes?: string | null, };

export type Resolution = { answers: { [key in string]: AnswerValue }, 
/**
 * Question texts answered by their default because the operator left them out.
 */
defaulted: Array<string>, 
/**
 * Per question text: the picked option's preview and the operator's
 * notes, where there are any.
 * (Absent from the JSON when empty.)
 */
annotations?: { [key in string]: Annotation }, };

export type Scope = "turn" | "action" | "session";

export type Approval = { 
/**
 * The tool the agent wants to use (`Edit`, `Bash`, `mcp__github__create_pr`).
 */
tool: string, 
/**
 * What it acts on: a file path, a command.
 */
target: string, 
/**
 * A diff preview for edits, the full command for Bash, the input otherwise.
 */
preview: string, 
/**
 * An external effect: only this action or deny, asked every time.
 */
external: boolean, };

export type Outcome = { "outcome": "answered" } & Resolution | { "outcome": "skipped", unconfirmed_defaults: { [key in string]: AnswerValue }, } | { "outcome": "timed_out", after_ms: number, } | { "outcome": "cancelled", reason: string, } | { "outcome": "no_operator" } | { "outcome": "approved", scope: Scope, } | { "outcome": "denied" };

export type ItemState = "pending" | "parked" | "settled";

export type ItemView = { id: ItemId, 
/**
 * `question_set` or `approval`.
 */
kind: string, session_id: SessionId, 
/**
 * The dispatched run that asked, if any.
 */
run_id: RunId | null, asker: Asker, request: AskRequest, 
/**
 * What a write-mode approval asks to allow (`kind` is then `approval`).
 */
approval?: Approval | null, created_ms: number, deadline_ms: number, 
/**
 * `None` while pending.
 */
outcome: Outcome | null, 
/**
 * Which surface replied (`script`, `terminal`, `cli`, `desktop`,
 * `notification`, `studio`, `web`), when one did.
 */
replied_by: string | null, 
/**
 * The paired device that replied, when `replied_by` is `web`.
 */
replied_device: DeviceRef | null, 
/**
 * The team's operator whose reply won, when `replied_by` is `hub`.
 */
replied_remote?: Remote, settled_ms: number | null, 
/**
 * The operator dismissed it from the desktop inbox (it stays in the history).
 */
dismissed: boolean, 
/**
 * Waiting, parked (its agent paused until it settles), or settled.
 */
state: ItemState, 
/**
 * When it parked (unix ms), if it has.
 */
parked_ms: number | null, 
/**
 * Who asked, compactly (the agent, the project, the session, the run).
 */
attribution: Attribution, };

export type RunStatus = "running" | "waiting" | "parked" | "finished" | "failed";

export type Confinement = { "state": "confined", by: string, } | { "state": "unavailable", reason: string, } | { "state": "off" };

export type RunView = { id: RunId, session_id: SessionId, 
/**
 * The agent command line.
 */
command: string, cwd: string | null, status: RunStatus, created_ms: number, finished_ms: number | null, exit_code: number | null, 
/**
 * Items it asked, and how many of them are still pending.
 */
items: number, pending: number, 
/**
 * The agent's last result text (its start, for a long one).
 */
result: string | null, 
/**
 * What the run cost, as the agent reported it.
 */
cost_usd: number | null, 
/**
 * Where its agent ran: confined, or not and why.
 */
confinement: Confinement | null, };

export type SessionView = { session_id: SessionId, 
/**
 * Who asked last under it.
 */
asker: Asker, 
/**
 * Whether that agent's process is still there (`None` when unknown).
 */
alive: boolean | null, 
/**
 * Items it asked (those still kept), and how many wait on the operator.
 */
items: number, pending: number, last_asked_ms: number, 
/**
 * How its latest settled item ended (`answered`, `timed_out`, …).
 */
last_outcome: string | null, };

export type Pick = { text: string, } | string | Array<string>;

export type WireReply = { "action": "answer", answers: { [key in string]: Pick }, 
/**
 * The operator's notes, by question text.
 */
notes?: { [key in string]: string }, } | { "action": "skip" } | { "action": "approve", scope?: Scope | null, } | { "action": "deny" } | { "action": "cancel" };

export type Issue = { 
/**
 * Where: `questions[1].options[0].label`; empty for the call itself.
 */
path: string, message: string, };

export type IpcError = { 
/**
 * One of the wire's codes. The page's own errors (the web page's
 * `unreachable`, `app_only`…) add codes of their own, so the page
 * types it as a string.
 */
code: string, message: string, };

export type View = "modal" | "inbox";

export type StoreHealth = { 
/**
 * The store file.
 */
path: string, 
/**
 * Why its writes fail; `None` while it takes them.
 */
error: string | null, 
/**
 * Since when (unix ms) its writes fail.
 */
failing_since_ms: number | null, 
/**
 * Items and outcomes held in memory only, until the store takes them.
 */
unrecorded: number, };

export type InboxView = { 
/**
 * Waiting items, oldest first.
 */
pending: Array<ItemView>, 
/**
 * Settled items not dismissed, newest first (empty when asked for pending only).
 */
history: Array<ItemView>, 
/**
 * The latest dispatched runs, newest first (empty when asked for pending only).
 */
runs: Array<RunView>, 
/**
 * The sessions that asked, waiting ones first (empty when asked for pending only).
 */
sessions: Array<SessionView>, 
/**
 * The item the modal should show first.
 */
focus: ItemId | null, 
/**
 * What the window shows (`None` while it is hidden; always `None` on the web).
 */
view: View | null, 
/**
 * The app is silenced (always false on the web).
 */
do_not_disturb: boolean, 
/**
 * The tray's Quit waits for the operator's word (the inbox asks;
 * always false on the web).
 */
quit_asked: boolean, 
/**
 * The store's health while it refuses writes (the items it lacks are
 * held in memory, and lost if the daemon stops first); `None` while it
 * takes them.
 */
store: StoreHealth | null, 
/**
 * The daemon's clock, so time left is counted from the same now.
 */
now_ms: number, };

export type Verb = "task" | "ask" | "decide" | "converse";

export type AgentKind = "claude" | "codex" | "opencode" | "gemini";

export type DispatchRequest = { 
/**
 * What kind of run: task, ask, decide, or converse (turn after turn).
 */
verb: Verb, 
/**
 * The agent's working directory.
 */
cwd?: string, 
/**
 * The session its questions are filed under.
 */
session?: string, 
/**
 * Seconds the operator has for each of its questions.
 */
timeout_secs?: number, 
/**
 * The agent command (default: the config's `agent_command`, else
 * `claude`, or `codex`/`opencode`/`gemini` with `--agent-kind
 * codex|opencode|gemini`).
 */
agent?: string, 
/**
 * Which CLI the agent is, `claude`, `codex`, `opencode` or `gemini`
 * (default: the config's `agent_kind`, else what the command's name
 * says: `--agent codex` is Codex, `--agent opencode` OpenCode,
 * `--agent gemini` Gemini CLI).
 */
agent_kind?: AgentKind, 
/**
 * Run the agent read-only: each write (Edit, Write, Bash outside a
 * read-only allowlist, …) asks the operator, who may allow it once,
 * for the run or for the session; with nobody attached it is denied.
 */
read_only: boolean, 
/**
 * Start the agent unconfined: hark's socket, store and config, the
 * display and the session bus are then within its reach, and the run
 * is labelled "not confined" everywhere (`[confine] enabled = false`
 * does the same for every run).
 */
no_confine?: boolean, 
/**
 * Authored questions to ask before the agent starts (JSON:
 * {preamble, questions:[{id, prompt, options:[{value,label}],
 * defaults, multi}], when: "thread-start"|"every-turn"}); their
 * answers go into the prompt. Unanswered, the agent does not start.
 */
intake?: unknown, 
/**
 * The prompt, or with --wrap the agent command line.
 */
prompt: string | Array<string>, };

export type Dispatched = { run_id: RunId, 
/**
 * Where its output goes.
 */
log: string, };
