"""Helpers the tests share (the browser's own are in browser_support)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
