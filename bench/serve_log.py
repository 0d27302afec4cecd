"""The daemon's stderr, followed: each line is written to a log file as it
comes (the benches read timestamps from it afterwards), and waiting for a
line wakes on that line instead of re-reading the file."""
import threading


class ServeLog:
    def __init__(self, daemon, path):
        self._file = open(path, "w")
        self._lines = []
        self._changed = threading.Condition()
        threading.Thread(target=self._follow, args=(daemon.stderr,), daemon=True).start()

    def _follow(self, stream):
        for raw in stream:
            line = raw.decode(errors="replace")
            self._file.write(line)
            self._file.flush()
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._lines.append(None)  # ended
            self._changed.notify_all()

    def wait_for(self, text, timeout=20):
        """Waits until a line contains `text`; raises if the daemon ends or the time runs out."""
        with self._changed:
            found = self._changed.wait_for(
                lambda: None in self._lines or any(text in l for l in self._lines if l), timeout)
            if not found or not any(text in l for l in self._lines if l):
                raise SystemExit(f"the daemon never said {text!r}")
