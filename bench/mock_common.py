"""What the two mock model APIs share: the HTTP side (each request logged as
a JSON line, JSON and SSE replies, the port written once listening), and a
scripted step's input naming a field of the last tool result as
"{{result.FIELD}}" (a studio's `question_id`, to answer it), filled in when
the step is sent. Stdlib only."""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def add_server_args(parser):
    """The options every mock takes: where it listens and logs."""
    parser.add_argument("--port", type=int, default=0, help="0 picks a free one")
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--log", required=True, help="append each request as a JSON line")


class MockHandler(BaseHTTPRequestHandler):
    """A request handler whose every request is logged to `log_path`."""

    protocol_version = "HTTP/1.1"
    log_path = None
    log_lock = threading.Lock()

    def log_message(self, *_):
        pass

    def record(self, body):
        with self.log_lock, open(self.log_path, "a") as log:
            log.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

    def json_body(self):
        """The request's JSON body, logged."""
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode(errors="replace")}
        self.record(body)
        return body

    def route(self):
        """The request's path without its query."""
        return self.path.split("?")[0]

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events):
        """Streams `events`, (name, data) pairs, then closes the connection."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def serve(handler, args):
    """Serves `handler` (a MockHandler subclass) on 127.0.0.1 as `args`
    (from add_server_args) says, until killed."""
    handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


def find(value, field):
    """FIELD of the first JSON object in `value` that has it: `value` may be
    that object, JSON text of it, or a list or object holding either (a tool
    result's content blocks)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, dict):
        if field in value:
            return value[field]
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = find(item, field)
            if found is not None:
                return found
    return None


def fill(value, last):
    """`value` with each "{{result.FIELD}}" string replaced by FIELD of
    `last`, the last tool result as the API carried it."""
    if isinstance(value, dict):
        return {k: fill(v, last) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, last) for v in value]
    if isinstance(value, str) and value.startswith("{{result.") and value.endswith("}}"):
        return find(last, value[len("{{result."):-2])
    return value
