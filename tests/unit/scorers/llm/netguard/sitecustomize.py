"""Loaded by every Python process started with this folder on PYTHONPATH: logs where it tries to connect.

An audit hook (PEP 578) sees every name lookup and connect, from any library, whatever HTTP client it
uses; each is appended as ``host port`` to the file named by ``SPANSCORE_TEST_NET_LOG``. Judge worker
processes inherit the environment, so they log too.
"""

import os
import sys

_LOG = os.environ.get("SPANSCORE_TEST_NET_LOG")


def _hook(event: str, args: tuple) -> None:  # type: ignore[type-arg]
    if event == "socket.getaddrinfo":
        target = (args[0], args[1])
    elif event == "socket.connect" and isinstance(args[1], tuple):
        target = tuple(args[1][:2])
    else:
        return
    with open(_LOG, "a", encoding="utf-8") as log:  # type: ignore[arg-type]
        log.write(f"{os.getpid()} {target[0]} {target[1]}\n")


if _LOG:
    sys.addaudithook(_hook)
