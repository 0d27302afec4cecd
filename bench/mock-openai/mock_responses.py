#!/usr/bin/env python3
"""A scripted stand-in for the OpenAI Responses API, for driving the real
Codex CLI (`codex exec`) offline.

It emulates what `codex exec` needs from a `model_providers` entry's
`base_url` (wire_api "responses"):
  POST …/responses   streamed (SSE: response.created,
                     response.output_item.added/done, response.completed)
  GET  …/models      {"data": [], "models": []}
  anything else      404 with an OpenAI-style error body
Each scripted step (--call-json, in the order given) is one function call:
step N answers a request whose `input` already holds N function call
outputs, and once the steps run out the --final text ends the turn. An
argument "{{result.FIELD}}" is FIELD of the last output (../mock_fill.py). Every
request is appended to --log as one JSON line (method, path, body), so the
outputs Codex sent back can be read.

  python3 mock_responses.py --port-file P --log L \
      --call-json '{"namespace":"mcp__operator","name":"ask","arguments":{"questions":[…]}}'
  codex exec -c model_provider=mock \
      -c 'model_providers.mock={name="mock",base_url="http://127.0.0.1:'$(cat P)'/v1",wire_api="responses"}' …

Stdlib only; it serves until killed.
"""

import argparse
import json
import os
import sys
import threading
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mock_fill import fill  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "gpt-mock"
USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def outputs_so_far(body):
    """How many function calls the conversation has answered already."""
    return sum(
        1
        for item in body.get("input") or []
        if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output")
    )


def reply_items(steps, final, body):
    done = outputs_so_far(body)
    if done < len(steps):
        call = dict(steps[done])
        outputs = [
            item.get("output")
            for item in body.get("input") or []
            if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output")
        ]
        arguments = fill(call.get("arguments", {}), outputs[-1] if outputs else None)
        item = {
            "type": "function_call",
            "id": f"fc_mock_{uuid.uuid4().hex[:12]}",
            "call_id": f"call_mock_{done}_{uuid.uuid4().hex[:8]}",
            "name": call["name"],
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            "status": "completed",
        }
        if call.get("namespace"):
            item["namespace"] = call["namespace"]
        return [item]
    return [
        {
            "type": "message",
            "id": f"msg_mock_{uuid.uuid4().hex[:12]}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": final, "annotations": []}],
        }
    ]


def sse_events(items):
    response_id = f"resp_mock_{uuid.uuid4().hex}"
    base = {"id": response_id, "object": "response", "model": MODEL, "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": base}
    for index, item in enumerate(items):
        yield "response.output_item.added", {"type": "response.output_item.added", "output_index": index, "item": item}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield "response.output_text.delta", {
                "type": "response.output_text.delta",
                "item_id": item["id"],
                "output_index": index,
                "content_index": 0,
                "delta": text,
            }
        yield "response.output_item.done", {"type": "response.output_item.done", "output_index": index, "item": item}
    done = dict(base, status="completed", output=items, usage=USAGE)
    yield "response.completed", {"type": "response.completed", "response": done}


def handler(steps, final, log_path):
    log_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def record(self, body):
            with log_lock, open(log_path, "a") as log:
                log.write(json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n")

        def send_json(self, status, value):
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def not_found(self):
            self.send_json(404, {"error": {"type": "invalid_request_error", "message": f"mock: no {self.path}"}})

        def do_GET(self):
            self.record(None)
            if self.path.split("?")[0].endswith("/models"):
                return self.send_json(200, {"object": "list", "data": [], "models": []})
            self.not_found()

        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"unparsed": raw.decode(errors="replace")}
            self.record(body)
            if not self.path.split("?")[0].endswith("/responses"):
                return self.not_found()
            items = reply_items(steps, final, body)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for name, data in sse_events(items):
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free one")
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--log", required=True, help="append each request as a JSON line")
    parser.add_argument(
        "--call-json",
        dest="steps",
        action="append",
        type=json.loads,
        help='one function call: {"name":…,"namespace":…?,"arguments":{…}} (repeatable)',
    )
    parser.add_argument("--final", default="All done.", help="the text that ends the turn")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(args.steps or [], args.final, args.log))
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
