"""How long and how many for `kg serve`'s proxy (kg/serve_proxy.py's docstring says why each).

A client's request is read against one deadline for the whole of it, and an upstream answer
against the query's deadline: each socket operation waits only for what is left, so neither a
client dripping bytes nor a server that stalls gains time by sending a little now and then.
"""

from __future__ import annotations

import io
import socket
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ProxyLimits:
    """Each forwarded answer's time, each client request's time, connections served at once."""

    query_timeout_s: float = 30.0
    request_timeout_s: float = 60.0
    max_connections: int = 64


class DeadlineReader(io.RawIOBase):
    """The client's socket, read against one deadline for its whole request: each read waits
    only for what is left of it, so dripping a byte at a time gains nothing."""

    def __init__(self, sock: socket.socket, deadline: float):
        self.sock, self.deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        arm(self.sock, self.deadline)
        return self.sock.recv_into(buffer)


def arm(sock: socket.socket, deadline: float) -> None:
    """Let the next operation on `sock` wait only until `deadline` (TimeoutError if past)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    sock.settimeout(left)
