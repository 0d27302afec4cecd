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
argument "{{result.FIELD}}" is FIELD of the last output (../mock_common.py). Every
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
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mock_common import MockHandler, add_server_args, fill, serve  # noqa: E402

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


def handler(steps, final):
    class Handler(MockHandler):
        def not_found(self):
            self.send_json(404, {"error": {"type": "invalid_request_error", "message": f"mock: no {self.path}"}})

        def do_GET(self):
            self.record(None)
            if self.route().endswith("/models"):
                return self.send_json(200, {"object": "list", "data": [], "models": []})
            self.not_found()

        def do_POST(self):
            body = self.json_body()
            if not self.route().endswith("/responses"):
                return self.not_found()
            self.send_sse(sse_events(reply_items(steps, final, body)))

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(parser)
    parser.add_argument(
        "--call-json",
        dest="steps",
        action="append",
        type=json.loads,
        help='one function call: {"name":…,"namespace":…?,"arguments":{…}} (repeatable)',
    )
    parser.add_argument("--final", default="All done.", help="the text that ends the turn")
    args = parser.parse_args()
    serve(handler(args.steps or [], args.final), args)

if __name__ == "__main__":
    main()
