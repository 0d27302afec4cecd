#!/usr/bin/env python3
"""A driving client for `hark mcp-studio` on the official MCP Python SDK
(`mcp`, pinned by scripts/setup): it starts the studio over stdio, calls
`run` with PROMPT and prints one JSON line: the negotiated protocol version,
the elicitations it was sent (their schemas) and the tool results.

  studio_client.py HARK PROMPT elicit    # accepts each elicitation with ANSWERS (JSON)
  studio_client.py HARK PROMPT fallback  # no elicitation: answers awaiting_operator with ANSWERS

ANSWERS comes from the environment variable STUDIO_ANSWERS.
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    hark, prompt, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    answers = json.loads(os.environ["STUDIO_ANSWERS"])
    seen = []

    async def on_elicit(context, params):
        seen.append({"message": params.message, "schema": params.requested_schema})
        return types.ElicitResult(action="accept", content=answers)

    server = StdioServerParameters(command=hark, args=["mcp-studio"], env=dict(os.environ))
    results = []
    async with stdio_client(server) as (read, write):
        callback = on_elicit if mode == "elicit" else None
        async with ClientSession(read, write, elicitation_callback=callback) as session:
            init = await session.initialize()
            result = await session.call_tool("run", {"prompt": prompt, "session": "python-" + mode})
            results.append(json.loads(result.content[0].text))
            if results[-1].get("status") == "awaiting_operator":
                reply = {"question_id": results[-1]["question_id"], "answers": answers}
                result = await session.call_tool("answer", reply)
                results.append(json.loads(result.content[0].text))
    print(json.dumps({"protocol": init.protocol_version, "elicitations": seen, "results": results}, default=str))


asyncio.run(main())
