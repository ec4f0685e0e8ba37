"""Helpers shared by the end-to-end scripts beside this file."""
import socket
import time


def free_port():
    """A loopback port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(what, check, timeout, retry_on=()):
    """Polls `check` every 100 ms until it returns something true, and returns
    that; exceptions of the `retry_on` types count as "not yet"."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
            last = value
        except retry_on as e:
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
