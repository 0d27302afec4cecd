#!/usr/bin/env python3
"""Runs an MCP stdio server and logs every line both ways, with times.

  mcp_tee.py LOG -- COMMAND [ARGS...]

Each line the client sends is logged as `C <unix time> <line>`, each the
server sends as `S <unix time> <line>`, then passed on unchanged. Name it as
the server in a client's MCP config to see what the client really sends
(docs/src/agents/claude-code.md used it on `hark mcp-studio`). Stdlib only.
"""

import subprocess
import sys
import threading
import time


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: mcp_tee.py LOG -- COMMAND [ARGS...]")
    log = open(sys.argv[1], "a", buffering=1)
    lock = threading.Lock()

    def record(side, line):
        with lock:
            log.write(f"{side} {time.time():.4f} {line.decode(errors='replace')}")

    server = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def upstream():
        for line in sys.stdin.buffer:
            record("C", line)
            server.stdin.write(line)
            server.stdin.flush()
        server.stdin.close()

    threading.Thread(target=upstream, daemon=True).start()
    for line in server.stdout:
        record("S", line)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.exit(server.wait())


if __name__ == "__main__":
    main()
