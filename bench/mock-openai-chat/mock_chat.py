#!/usr/bin/env python3
"""A scripted stand-in for the OpenAI Chat Completions API, for driving the
real OpenCode CLI (`opencode run`) offline through a custom provider
(`"npm": "@ai-sdk/openai-compatible"`, which OpenCode bundles).

It emulates what `opencode run` needs from the provider's `baseURL`:
  POST …/chat/completions  streamed (SSE `data:` chunks of
                           chat.completion.chunk, a usage chunk, then
                           `data: [DONE]`) or plain JSON when not `stream`
  GET  …/models            one model, `m` (OpenCode did not ask for it)
  anything else            404 with an OpenAI-style error body
A request whose `tools` include a scripted tool (the agent's main loop)
gets the next scripted call (--tool-json, in the order given): step N
answers a request whose `messages` already hold N tool calls, and once the
steps run out, the --final text. A --tool-json list is one message with
several tool calls, counted as that many steps. An argument
"{{result.FIELD}}" is FIELD of the last `tool` message's JSON text
(../mock_common.py). Any other request (OpenCode's title request has no
tools) gets the --final text too. Every request is appended to --log as one
JSON line (method, path, body), so the `tool` messages OpenCode sent back
can be read.

Measured against OpenCode 1.18.33 (docs/src/agents/opencode.md): it asks for
nothing but POST /v1/chat/completions, streamed, with
`stream_options: {"include_usage": true}`.

  python3 mock_chat.py --port-file P --log L --final "Using SQLite." \
      --tool-json '{"name":"operator_ask","input":{"questions":[…]}}'
  # opencode.json: "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
  #   "options": {"baseURL": "http://127.0.0.1:PORT/v1", "apiKey": "x"},
  #   "models": {"m": {}}}}, "model": "mock/m"
  opencode run --format json "go"

Stdlib only; it serves until killed.
"""

import argparse
import json
import os
import sys
import threading
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mock_common import MockHandler, add_server_args, fill, serve  # noqa: E402

MODEL = "m"
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def last_result(body):
    """The last `tool` message's content, as the request carried it."""
    last = None
    for m in body.get("messages") or []:
        if m.get("role") == "tool":
            last = m.get("content")
    return last


class Script:
    def __init__(self, steps, final):
        self.steps = steps
        self.final = final
        self.lock = threading.Lock()

    def reply(self, body):
        """(text, tool_calls) answering one chat/completions body: text is
        None when the reply is tool calls."""
        tools = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
        wanted = {c["name"] for s in self.steps for c in s}
        if not wanted or not wanted & tools:
            return self.final, []
        done = sum(
            len(m.get("tool_calls") or [])
            for m in body.get("messages") or []
            if m.get("role") == "assistant"
        )
        start = 0
        for step in self.steps:
            if start >= done:
                last = last_result(body)
                calls = []
                for i, c in enumerate(step):
                    arguments = fill(c.get("input", c.get("arguments", {})), last)
                    calls.append(
                        {
                            "id": f"call_mock_{start + i}_{uuid.uuid4().hex[:8]}",
                            "type": "function",
                            "function": {
                                "name": c["name"],
                                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                            },
                        }
                    )
                return None, calls
            start += len(step)
        return self.final, []


def chunk(completion_id, choices, usage=None):
    value = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": choices,
    }
    if usage is not None:
        value["usage"] = usage
    return value


def stream_chunks(text, calls, include_usage):
    """The chunks that build the reply, as the API streams them."""
    cid = f"chatcmpl-mock-{uuid.uuid4().hex[:12]}"
    if calls:
        for index, call in enumerate(calls):
            head = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}
            delta = {"tool_calls": [head]}
            if index == 0:
                delta = dict(delta, role="assistant", content=None)
            yield chunk(cid, [{"index": 0, "delta": delta, "finish_reason": None}])
            args = {"index": index, "function": {"arguments": call["function"]["arguments"]}}
            yield chunk(cid, [{"index": 0, "delta": {"tool_calls": [args]}, "finish_reason": None}])
        finish = "tool_calls"
    else:
        yield chunk(cid, [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        yield chunk(cid, [{"index": 0, "delta": {"content": text}, "finish_reason": None}])
        finish = "stop"
    yield chunk(cid, [{"index": 0, "delta": {}, "finish_reason": finish}])
    if include_usage:
        yield chunk(cid, [], USAGE)


def completion(text, calls):
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-mock-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": USAGE,
    }


def handler(script):
    class Handler(MockHandler):
        def not_found(self):
            self.send_json(404, {"error": {"type": "invalid_request_error", "message": f"mock: no {self.path}"}})

        def do_GET(self):
            self.record(None)
            if self.route().endswith("/models"):
                return self.send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "mock"}]})
            self.not_found()

        def do_POST(self):
            body = self.json_body()
            if not self.route().endswith("/chat/completions"):
                return self.not_found()
            text, calls = script.reply(body)
            if not body.get("stream"):
                return self.send_json(200, completion(text, calls))
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            # Chat Completions SSE: bare `data:` lines, ended by `data: [DONE]`
            # (mock_common's send_sse names each event and JSON-encodes all).
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for value in stream_chunks(text, calls, include_usage):
                self.wfile.write(f"data: {json.dumps(value)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(parser)
    calls = lambda t: v if isinstance(v := json.loads(t), list) else [v]  # noqa: E731
    parser.add_argument(
        "--tool-json",
        dest="steps",
        action="append",
        type=calls,
        help='one tool call {"name":…,"input":{…}} or a list of them (one message); repeatable',
    )
    parser.add_argument("--final", default="All done.", help="the text that ends the run")
    args = parser.parse_args()
    serve(handler(Script(args.steps or [], args.final)), args)


if __name__ == "__main__":
    main()
