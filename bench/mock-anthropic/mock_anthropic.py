#!/usr/bin/env python3
"""A scripted stand-in for the Anthropic Messages API, for driving the real
Claude Code CLI (`claude -p`) offline.

It emulates what `claude -p` needs from ANTHROPIC_BASE_URL:
  POST /v1/messages               streamed (SSE: message_start,
                                  content_block_start/delta/stop,
                                  message_delta, message_stop) or plain JSON
  POST /v1/messages/count_tokens  {"input_tokens": N}
  anything else                   404 with an Anthropic-style error body
A request whose tools include a scripted tool (the agent's main loop) gets
the next scripted call (--bash and --tool-json, in the order given): step N
answers a request that already holds N tool calls in its `messages`, and once
the steps run out, the --final text. A --tool-json list is one message with
several tool calls (parallel tool use), counted as that many steps. A step's
input string "{{result.FIELD}}" is FIELD of the last tool result's JSON text
(a `question_id` to answer, say). Any other request (titles, summaries,
side queries) gets the --final text too. Every request is appended to --log
as one JSON line (method, path, body), so the tool_result blocks Claude Code
sent back can be read.

Measured against Claude Code 2.1.332 with DISABLE_TELEMETRY=1 and
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1: it asks for nothing but
POST /v1/messages?beta=true, streamed.

  python3 mock_anthropic.py --port-file P --log L \
      --bash 'touch /tmp/x && echo done' \
      --tool-json '{"name":"Bash","input":{"command":"id","dangerouslyDisableSandbox":true}}'
  ANTHROPIC_BASE_URL=http://127.0.0.1:$(cat P) ANTHROPIC_API_KEY=x claude -p go ...

Stdlib only; it serves until killed.
"""

import argparse
import json
import os
import sys
import threading
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mock_common import MockHandler, add_server_args, fill, serve  # noqa: E402

MODEL = "claude-mock"


def message(content, stop_reason):
    return {
        "id": f"msg_mock_{uuid.uuid4().hex}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def sse_events(content, stop_reason):
    """The stream of events that builds `content`, as the API sends it."""
    start = message([], None)
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(content):
        if block["type"] == "text":
            empty = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            empty = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    yield "message_stop", {"type": "message_stop"}


def last_result(body):
    """The last tool_result's content, as the request carried it."""
    last = None
    for m in body.get("messages", []):
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    last = b.get("content")
    return last


class Script:
    def __init__(self, steps, final):
        self.steps = steps
        self.final = final
        self.lock = threading.Lock()

    def reply(self, body):
        """The content and stop reason answering one /v1/messages body."""
        tools = {t.get("name") for t in body.get("tools") or []}
        wanted = {c["name"] for s in self.steps for c in s}
        if not wanted or not wanted & tools:
            return [{"type": "text", "text": self.final}], "end_turn"
        # Tool calls already made: Claude Code may merge assistant turns, so count blocks.
        done = sum(
            1
            for m in body.get("messages", [])
            if m.get("role") == "assistant" and isinstance(m.get("content"), list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        )
        start = 0
        for step in self.steps:
            if start >= done:
                last = last_result(body)
                blocks = [
                    {"type": "tool_use", "id": f"toolu_mock_{start + i}_{uuid.uuid4().hex[:8]}", "name": c["name"], "input": fill(c["input"], last)}
                    for i, c in enumerate(step)
                ]
                return blocks, "tool_use"
            start += len(step)
        return [{"type": "text", "text": self.final}], "end_turn"


def handler(script):
    class Handler(MockHandler):
        def do_GET(self):
            self.record(None)
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock"}})

        def do_POST(self):
            body = self.json_body()
            path = self.route()
            if path.endswith("/v1/messages/count_tokens"):
                return self.send_json(200, {"input_tokens": 10})
            if not path.endswith("/v1/messages"):
                return self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "mock"}})
            content, stop = script.reply(body)
            if not body.get("stream"):
                return self.send_json(200, message(content, stop))
            self.send_sse(sse_events(content, stop))

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(parser)
    bash = lambda c: [{"name": "Bash", "input": {"command": c, "description": "scripted"}}]  # noqa: E731
    calls = lambda t: v if isinstance(v := json.loads(t), list) else [v]  # noqa: E731
    parser.add_argument("--bash", dest="steps", action="append", type=bash, help="a Bash call (repeatable)")
    parser.add_argument("--tool-json", dest="steps", action="append", type=calls, help='{"name":…,"input":…} or a list of them (one message)')
    parser.add_argument("--final", default="All done.", help="the text that ends the run")
    args = parser.parse_args()
    serve(handler(Script(args.steps or [], args.final)), args)

if __name__ == "__main__":
    main()
