#!/usr/bin/env python3
"""A scripted stand-in for the Gemini API (generativelanguage v1beta), for
driving the real Gemini CLI (`gemini -p`) offline.

It emulates what `gemini -p` needs from GOOGLE_GEMINI_BASE_URL:
  POST /v1beta/models/M:streamGenerateContent?alt=sse  streamed (SSE, one
                                  `data:` line, a GenerateContentResponse)
  POST /v1beta/models/M:generateContent                the same, plain JSON
  POST /v1beta/models/M:countTokens                    {"totalTokens": N}
  anything else                   404 with a Google-style error body
A request whose tools declare a scripted function (the agent's main loop;
with --always, any request with tools) gets the next scripted call
(--tool-json, in the order given): step N answers a request whose `contents`
already hold N functionCall parts, and once the steps run out, the --final
text. A --tool-json list is one model turn with several functionCall parts
(parallel calls), counted as that many steps. A step's "{{result.FIELD}}" is
FIELD of the last functionResponse (its `output` text, unwrapped from the
CLI's <untrusted_context> tags, parsed as JSON). A request with
`generationConfig.responseMimeType` application/json (the CLI's side
queries: the model router's complexity score, next-speaker and loop checks,
session summaries) gets JSON built from its schema (`from_schema`). Any
other request gets the --final text. Every request is appended to --log as
one JSON line (method, path, body), so the functionResponse parts the CLI
sent back can be read.

Function names are the ones the model sees: the tool `ask` of MCP server
`operator` is `mcp_operator_ask` in Gemini CLI 0.61.0 (docs/src/agents/gemini.md).

  python3 mock_gemini.py --port-file P --log L --final "Using SQLite." \\
      --tool-json '{"name":"mcp_operator_ask","args":{"questions":[…]}}'
  GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:$(cat P) GEMINI_API_KEY=x \\
      gemini -p go --skip-trust --output-format stream-json
  (with ~/.gemini/settings.json holding
   {"security":{"auth":{"selectedType":"gemini-api-key"}},
    "privacy":{"usageStatisticsEnabled":false}, "mcpServers":{…}})

Stdlib only; it serves until killed.
"""

import argparse
import json
import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mock_common import MockHandler, add_server_args, fill, serve  # noqa: E402

MODEL = "gemini-mock"
USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
UNTRUSTED = ("<untrusted_context>", "</untrusted_context>")


def response(parts):
    """One GenerateContentResponse holding `parts` as the model's turn."""
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": USAGE,
        "modelVersion": MODEL,
        "responseId": f"mock_{uuid.uuid4().hex[:12]}",
    }


def from_schema(schema, key=""):
    """A value that fits a JSON schema (OpenAPI-style upper-case `type`
    names too). The side queries are steered so the run ends: `next_speaker`
    is "user", an enum takes its first value, a boolean is false, and a
    number its `minimum`, else 1 (the router wants a score of 1 to 100)."""
    schema = schema or {}
    kind = str(schema.get("type", "object")).lower()
    if key == "next_speaker":
        return "user"
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        return {k: from_schema(v, k) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return "mock"


def function_names(body):
    """The names of the functions the request declares."""
    return {d.get("name") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []}


def last_result(body):
    """The last functionResponse's `response`, as the request carried it; a
    successful call's `output` text without the <untrusted_context> tags the
    CLI wraps an MCP tool's text in."""
    last = None
    for c in body.get("contents", []):
        for p in c.get("parts") or []:
            if "functionResponse" in p:
                last = p["functionResponse"].get("response")
    output = last.get("output") if isinstance(last, dict) else None
    if isinstance(output, str):
        text = output.strip()
        if text.startswith(UNTRUSTED[0]) and text.endswith(UNTRUSTED[1]):
            text = text[len(UNTRUSTED[0]):-len(UNTRUSTED[1])].strip()
        return text
    return last


class Script:
    def __init__(self, steps, final, always=False):
        self.steps = steps
        self.final = final
        self.always = always

    def reply(self, body):
        """The parts answering one generateContent body."""
        config = body.get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            return [{"text": json.dumps(from_schema(schema))}]
        wanted = {c["name"] for s in self.steps for c in s}
        scripted = (self.always and "tools" in body) or wanted & function_names(body)
        if not wanted or not scripted:
            return [{"text": self.final}]
        done = sum(
            1
            for c in body.get("contents", [])
            if c.get("role") == "model"
            for p in c.get("parts") or []
            if "functionCall" in p
        )
        start = 0
        for step in self.steps:
            if start >= done:
                last = last_result(body)
                return [
                    {
                        "functionCall": {
                            "id": f"call_mock_{start + i}_{uuid.uuid4().hex[:8]}",
                            "name": c["name"],
                            "args": fill(c.get("args", {}), last),
                        }
                    }
                    for i, c in enumerate(step)
                ]
            start += len(step)
        return [{"text": self.final}]


def handler(script):
    class Handler(MockHandler):
        def not_found(self):
            self.send_json(404, {"error": {"code": 404, "message": "mock: not found", "status": "NOT_FOUND"}})

        def do_GET(self):
            self.record(None)
            self.not_found()

        def do_POST(self):
            body = self.json_body()
            path = self.route()
            if path.endswith(":countTokens"):
                return self.send_json(200, {"totalTokens": 10})
            if path.endswith(":generateContent"):
                return self.send_json(200, response(script.reply(body)))
            if not path.endswith(":streamGenerateContent"):
                return self.not_found()
            # Google's SSE carries no `event:` names, only `data:` lines.
            data = json.dumps(response(script.reply(body)))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(f"data: {data}\r\n\r\n".encode())
            self.wfile.flush()
            self.close_connection = True
            return None

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_args(parser)
    calls = lambda t: v if isinstance(v := json.loads(t), list) else [v]  # noqa: E731
    parser.add_argument("--tool-json", dest="steps", action="append", type=calls, help='{"name":…,"args":…} or a list of them (one model turn)')
    parser.add_argument("--final", default="All done.", help="the text that ends the run")
    parser.add_argument("--always", action="store_true", help="make the scripted calls even where the request does not declare them (any request with tools)")
    args = parser.parse_args()
    serve(handler(Script(args.steps or [], args.final, args.always)), args)


if __name__ == "__main__":
    main()
