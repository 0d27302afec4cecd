#!/usr/bin/env python3
# ask -> SSE event, and the web surface's memory. Starts `hark serve --web`
# (scripted operator that answers nothing), pairs a client with a code from
# `hark web pair --json`, follows /api/events as a browser's EventSource
# would, and times 40 sequential `hark ask`s (after 5 warm-ups) from the
# daemon's `operator.question.asked` log line, and from spawning `hark ask`,
# to the `added` event read on the stream; each is then answered through the
# API (POST /api/items/ID/reply with the CSRF token). Then compares the
# daemon's resident memory (VmRSS) after the same 40 asks with and without
# `--web`.
# With --browser, the client is headless Chromium (under chromedriver) showing
# the page itself (`/`, paired through pair.html): an EventSource of its own
# in that page stamps each `added` event (performance.timeOrigin + now), and
# a MutationObserver stamps the modal drawing the question (the page's own
# stream, its inbox fetch and Markdown call); both from the daemon's log line.
# Usage: bench/web-sse.py target/release/hark [--browser]
import json, os, subprocess, sys, tempfile, time, statistics, shutil, http.client, socket
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_log import ServeLog

HARK = sys.argv[1]
QS = json.dumps({"questions": [{"question": "Q?", "header": "H", "multiSelect": False,
                                "options": [{"label": "A", "description": ""}, {"label": "B", "description": ""}]}]})


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close(); return port


def start(d, web):
    env = dict(os.environ, HARK_CONFIG=os.path.join(d, "c.toml"), HARK_DATA_DIR=os.path.join(d, "data"),
               HARK_SOCKET=os.path.join(d, "s.sock"), XDG_RUNTIME_DIR=d)
    open(os.path.join(d, "script.json"), "w").write("{}")
    args = [HARK, "serve", "--log-format", "json", "--prompter", "script:" + os.path.join(d, "script.json")]
    port = free_port()
    if web:
        args += ["--web", f"127.0.0.1:{port}"]
    daemon = subprocess.Popen(args, env=env, stderr=subprocess.PIPE)
    log = ServeLog(daemon, os.path.join(d, "log"))
    log.wait_for("web surface listening" if web else "hark is serving the operator")
    return daemon, env, port, log


def asked_at(d, question_id):
    for line in open(os.path.join(d, "log")):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("question_id") == question_id and e.get("outcome") == "pending":
            return datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp()
    return None


def rss_kb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])


def read_event(stream):
    """The next SSE event on `stream` as (name, data), skipping comments."""
    name, data = None, []
    while True:
        line = stream.readline().decode().rstrip("\n")
        if line == "":
            if name or data:
                return name, "\n".join(data)
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)


def with_web(d):
    daemon, env, port, _ = start(d, True)
    pair = json.loads(subprocess.run([HARK, "web", "pair", "--json"], env=env, capture_output=True, check=True).stdout)
    conn = http.client.HTTPConnection("127.0.0.1", port)
    origin = {"Origin": f"http://127.0.0.1:{port}", "Content-Type": "application/json"}
    conn.request("POST", "/api/pair", json.dumps({"code": pair["code"], "device": "bench"}), origin)
    paired = conn.getresponse()
    cookie = paired.getheader("set-cookie").split(";")[0]
    csrf = json.loads(paired.read())["csrf"]
    events = http.client.HTTPConnection("127.0.0.1", port)
    events.request("GET", "/api/events", headers={"Cookie": cookie, "Accept": "text/event-stream"})
    stream = events.getresponse()
    qf = os.path.join(d, "q.json"); open(qf, "w").write(QS)
    spawn_to_event, asked_to_event = [], []
    for i in range(45):
        t0 = time.time()
        asker = subprocess.Popen([HARK, "ask", "--session", f"b{i}", "--file", qf], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            name, data = read_event(stream)
            if name == "added":
                break
        t = time.time()
        item = json.loads(data)
        item = item.get("item", item)
        asked = asked_at(d, item["id"])
        if i >= 5:
            spawn_to_event.append((t - t0) * 1000)
            if asked:
                asked_to_event.append((t - asked) * 1000)
        answer(conn, origin, cookie, csrf, item["id"], "Q?")
        asker.wait()
    rss = rss_kb(daemon.pid)
    daemon.terminate(); daemon.wait()
    return spawn_to_event, asked_to_event, rss


def answer(conn, origin, cookie, csrf, item_id, question):
    """Answers `question` of item `item_id` "A" through the API, as a paired page does."""
    conn.request("POST", f"/api/items/{item_id}/reply",
                 json.dumps({"action": "answer", "answers": {question: "A"}}),
                 dict(origin, Cookie=cookie, **{"X-CSRF-Token": csrf}))
    replied = conn.getresponse()
    body = replied.read()
    if replied.status != 200:
        sys.exit(f"the reply was refused: {replied.status} {body!r}")


def without_web(d):
    daemon, env, _, log = start(d, False)
    qf = os.path.join(d, "q.json"); open(qf, "w").write(QS)
    for i in range(45):
        asker = subprocess.Popen([HARK, "ask", "--session", f"b{i}", "--file", qf], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Answered from the command line once the daemon says it waits.
        log.wait_for(f'"session_id":"b{i}"')
        listed = json.loads(subprocess.run([HARK, "inbox", "--json"], env=env, capture_output=True).stdout)
        subprocess.run([HARK, "answer", listed[0]["id"], "--pick", "A"], env=env, capture_output=True, check=True)
        asker.wait()
    rss = rss_kb(daemon.pid)
    daemon.terminate(); daemon.wait()
    return rss


class WebDriver:
    """Headless Chromium through chromedriver's W3C WebDriver API."""

    def __init__(self, profile):
        self.port = free_port()
        self.driver = subprocess.Popen(["chromedriver", f"--port={self.port}"],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for line in self.driver.stdout:
            if b"started successfully" in line:
                break
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-extensions", f"--user-data-dir={profile}"]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request(method, path, json.dumps(body) if body is not None else None,
                     {"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        value = answer.get("value")
        if isinstance(value, dict) and value.get("error"):
            raise SystemExit(f"webdriver {path}: {value['error']}: {value.get('message')}")
        return value

    def goto(self, url):
        self.call("POST", f"/session/{self.session}/url", {"url": url})

    def run(self, script, *args):
        """Runs `script` asynchronously (its last argument is the callback)."""
        return self.call("POST", f"/session/{self.session}/execute/async", {"script": script, "args": list(args)})

    def quit(self):
        try:
            self.call("DELETE", f"/session/{self.session}")
        finally:
            self.driver.terminate(); self.driver.wait()


# Installed in the page once it shows the modal: stamps, by question text,
# the `added` event on a stream of its own, and the modal drawing it.
STAMPS = """
const done = arguments[0];
const now = () => performance.timeOrigin + performance.now();
const bench = window.__bench = {added: {}, drawn: {}, wake: () => {}};
const es = new EventSource('/api/events');
es.addEventListener('added', (e) => {
  let item = JSON.parse(e.data); item = item.item || item;
  bench.added[item.request.questions[0].question] = {id: item.id, at: now()};
  bench.wake();
});
const text = document.getElementById('question-text');
new MutationObserver(() => {
  const q = text.textContent.trim();
  if (q && !(q in bench.drawn)) { bench.drawn[q] = now(); bench.wake(); }
}).observe(document.getElementById('modal'), {subtree: true, childList: true, characterData: true});
es.addEventListener('open', () => done(true));
"""

# Resolves once the question `q` was both received and drawn.
STAMPED = """
const [q, done] = arguments;
const bench = window.__bench;
const check = () => {
  if (q in bench.added && q in bench.drawn) { done({id: bench.added[q].id, added: bench.added[q].at, drawn: bench.drawn[q]}); return true; }
  return false;
};
if (!check()) bench.wake = () => { if (check()) bench.wake = () => {}; };
"""


def with_browser(d):
    daemon, env, port, _ = start(d, True)
    url = f"http://127.0.0.1:{port}"
    browser = WebDriver(os.path.join(d, "profile"))
    try:
        pair = json.loads(subprocess.run([HARK, "web", "pair", "--json"], env=env, capture_output=True, check=True).stdout)
        browser.goto(f"{url}/pair.html")
        browser.run("""const [code, done] = arguments;
            fetch('/api/pair', {method: 'POST', headers: {'Content-Type': 'application/json'},
              body: JSON.stringify({code, device: 'bench browser'})}).then((r) => done(r.status));""", pair["code"])
        browser.goto(f"{url}/")
        browser.run(STAMPS)
        # A second device answers, so the browser only receives.
        pair = json.loads(subprocess.run([HARK, "web", "pair", "--json"], env=env, capture_output=True, check=True).stdout)
        conn = http.client.HTTPConnection("127.0.0.1", port)
        origin = {"Origin": url, "Content-Type": "application/json"}
        conn.request("POST", "/api/pair", json.dumps({"code": pair["code"], "device": "bench"}), origin)
        paired = conn.getresponse()
        cookie = paired.getheader("set-cookie").split(";")[0]
        csrf = json.loads(paired.read())["csrf"]
        to_event, to_drawn = [], []
        for i in range(45):
            q = f"Question {i}?"
            qs = json.loads(QS); qs["questions"][0]["question"] = q
            qf = os.path.join(d, f"q{i}.json"); open(qf, "w").write(json.dumps(qs))
            asker = subprocess.Popen([HARK, "ask", "--session", f"b{i}", "--file", qf], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            stamped = browser.run(STAMPED, q)
            asked = asked_at(d, stamped["id"])
            if i >= 5 and asked:
                to_event.append(stamped["added"] - asked * 1000)
                to_drawn.append(stamped["drawn"] - asked * 1000)
            answer(conn, origin, cookie, csrf, stamped["id"], q)
            asker.wait()
    finally:
        browser.quit()
        daemon.terminate(); daemon.wait()
    return to_event, to_drawn


def p90(xs):
    return sorted(xs)[int(0.9 * len(xs))]


if "--browser" in sys.argv[2:]:
    d = tempfile.mkdtemp()
    try:
        to_event, to_drawn = with_browser(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("asked(log)->added event in Chromium ms median %.2f p90 %.2f n=%d" % (statistics.median(to_event), p90(to_event), len(to_event)))
    print("asked(log)->question drawn in the page ms median %.2f p90 %.2f" % (statistics.median(to_drawn), p90(to_drawn)))
    sys.exit(0)

a, b = tempfile.mkdtemp(), tempfile.mkdtemp()
try:
    spawn_to_event, asked_to_event, rss_web = with_web(a)
    rss_plain = without_web(b)
finally:
    shutil.rmtree(a, ignore_errors=True); shutil.rmtree(b, ignore_errors=True)
print("asked(log)->SSE added ms median %.2f p90 %.2f n=%d" % (statistics.median(asked_to_event), p90(asked_to_event), len(asked_to_event)))
print("spawn hark ask->SSE added ms median %.2f p90 %.2f" % (statistics.median(spawn_to_event), p90(spawn_to_event)))
print("daemon VmRSS after 45 asks: %.1f MB without --web, %.1f MB with (+%.1f MB)" % (rss_plain / 1024, rss_web / 1024, (rss_web - rss_plain) / 1024))
