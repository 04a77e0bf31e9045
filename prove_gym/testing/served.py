"""``prove-gym serve`` over HTTP in a subprocess, for tests that drive it like a client.

>>> served = ServedHTTP(["calendar", "--seed", "7"])  # doctest: +SKIP
>>> served.url("/mcp")  # doctest: +SKIP
'http://127.0.0.1:41234/mcp'
>>> served.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence

__all__ = ["ServedHTTP"]


class ServedHTTP:
    """``python -m prove_gym serve ARGS --transport http --port 0`` in a subprocess.

    The constructor returns once the server says where it listens (``base``), or raises
    ``TimeoutError`` with what it printed; its stderr is drained on a thread so it never
    blocks, and kept in ``log``. :meth:`stop` terminates it, then kills it if it lingers.

    Args:
        args: What follows ``serve``: server names and flags (``--seed``, ``--auth-token-env``).
        env: Extra environment variables for the process (a token, say).
        timeout: Seconds to wait for it to listen.
    """

    def __init__(
        self, args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 60
    ) -> None:
        command = [sys.executable, "-m", "prove_gym", "serve", *args]
        command += ["--transport", "http", "--port", "0"]
        self.proc = subprocess.Popen(
            command, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise TimeoutError(f"prove-gym serve did not start: {''.join(self.log)}") from None
            match = re.search(r"listening on (http://\S+)", line)
            if match:
                self.base = match.group(1)
                return

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            self.lines.put(line)

    def url(self, path: str = "/mcp") -> str:
        """The address of ``path`` on the running server."""
        return f"{self.base}{path}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
