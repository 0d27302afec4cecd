#!/usr/bin/env python3
# ask -> push published: a local stand-in for ntfy (one write per response),
# `hark serve` with [web] and [push] detail = "full", 40 sequential `hark ask`s
# each answered by its first button as the ntfy app would fire it. Prints the
# medians (after 5 warm-ups) from spawning `hark ask`, and from the daemon's
# `operator.question.asked` log line, to the publish reaching the receiver.
# Usage: bench/push.py target/release/hark
import json, os, socket, subprocess, sys, threading, time, http.server, queue, urllib.request, tempfile, statistics
from datetime import datetime
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_log import ServeLog
q = queue.Queue()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        t = time.time()
        body = self.rfile.read(int(self.headers["content-length"]))
        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
        q.put((t, json.loads(body)))
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
d = tempfile.mkdtemp()
cfg = os.path.join(d, "c.toml")
open(cfg, "w").write(f'[web]\nlisten = "127.0.0.1:{port}"\npublic_url = "http://127.0.0.1:{port}"\n[push]\nntfy = {{ server = "http://127.0.0.1:{srv.server_port}", topic = "t" }}\ndetail = "full"\n')
env = dict(os.environ, HARK_CONFIG=cfg, HARK_DATA_DIR=os.path.join(d, "data"), HARK_SOCKET=os.path.join(d, "s.sock"), XDG_RUNTIME_DIR=d)
open(os.path.join(d, "script.json"), "w").write("{}")
hark = sys.argv[1]
daemon = subprocess.Popen([hark, "serve", "--log-format", "json", "--prompter", "script:" + os.path.join(d, "script.json")], env=env, stderr=subprocess.PIPE)
ServeLog(daemon, os.path.join(d, "log")).wait_for("web surface listening")
qs = json.dumps({"questions": [{"question": "Q?", "header": "H", "multiSelect": False, "options": [{"label": "A", "description": ""}, {"label": "B", "description": ""}]}]})
qf = os.path.join(d, "q.json"); open(qf, "w").write(qs)
spawn_to_push, asked_to_push = [], []
for i in range(40):
    t0 = time.time()
    asker = subprocess.Popen([hark, "ask", "--session", f"b{i}", "--file", qf], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    t, m = q.get(timeout=10)
    spawn_to_push.append((t - t0) * 1000)
    asked = None
    for line in open(os.path.join(d, "log")):
        try: e = json.loads(line)
        except Exception: continue
        if e.get("question_id") == m["sequence_id"] and e.get("outcome") == "pending":
            asked = datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp()
    if asked: asked_to_push.append((t - asked) * 1000)
    a = m["actions"][0]
    urllib.request.urlopen(urllib.request.Request(a["url"], data=b"", method="POST")).read()
    asker.wait(); q.get(timeout=10)  # the follow-up
daemon.terminate(); daemon.wait()
import shutil; shutil.rmtree(d, ignore_errors=True)
print("spawn->push ms median %.2f p90 %.2f" % (statistics.median(spawn_to_push[5:]), sorted(spawn_to_push[5:])[int(0.9*35)]))
if asked_to_push: print("asked(log)->push ms median %.2f p90 %.2f n=%d" % (statistics.median(asked_to_push[5:]), sorted(asked_to_push[5:])[int(0.9*len(asked_to_push[5:]))], len(asked_to_push)))
