"""A code-scorer worker process (``python -m spanscore.scoring.code_worker PARENT_PID``).

The service's ``CodeScorerPool`` sends a batch of jobs over stdin, each a scorer's name and options (as
``registry.build`` takes them) and the run. The worker builds each scorer once per name and options, runs
the jobs in order, and answers each with its ``ScoreResult`` as soon as it is done. Frames are a 4-byte
big-endian length and a pickle, both ways; only the service writes to this process, and only this process writes back.

A scorer that never returns is the parent's to end: it kills this process at the job's deadline. The
worker dies with its parent too (``PR_SET_PDEATHSIG`` on Linux), so a killed service leaves no worker
spinning, and it exits when its stdin closes.
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import signal
import struct
import sys
from typing import IO, Any

from spanscore.run import Run
from spanscore.scorers.base import Scorer
from spanscore.scorers.registry import build, code_builtins

HEADER = struct.Struct(">I")
_PR_SET_PDEATHSIG = 1


def read_frame(stream: IO[bytes]) -> Any | None:
    """The next object, or None at the end of the stream."""
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (length,) = HEADER.unpack(header)
    return pickle.loads(stream.read(length))


def frame(message: Any) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def _die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent goes; exit at once if it already went."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)


def _warm_up() -> None:
    """Run each built-in once on a small run before the worker says it is ready.

    Loading a lexicon (lemminflect's takes over a second) then happens at start, not inside the first
    job's deadline.
    """
    sample = Run(input="What was the weather like?", output="It was raining, and I am sorry.")
    for name in code_builtins():
        try:
            build(name).run(sample)
        except Exception:  # a built-in that needs options is warmed by its first job instead
            continue


def _answer(request: dict[str, Any], scorers: dict[tuple[str, str], Scorer]) -> tuple[str, Any]:
    name, options = request["scorer"], request["options"]
    key = (name, json.dumps(options, sort_keys=True, default=repr))
    try:
        scorer = scorers.get(key) or scorers.setdefault(key, build(name, **options))
        return "ok", scorer.run(request["run"])
    except Exception as exc:  # a scorer that cannot be built here is that job's error, not the worker's end
        return "error", f"{type(exc).__name__}: {exc}"


def main() -> None:
    _die_with_parent(int(sys.argv[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C at the terminal is the service's to handle
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a scorer prints goes to stderr, never into the replies
    sys.stdout = sys.stderr
    requests = os.fdopen(os.dup(0), "rb")
    hello = read_frame(requests)
    if hello is None:
        return
    sys.path[:0] = [entry for entry in hello["path"] if entry not in sys.path]  # the service's import path
    _warm_up()
    replies.write(frame("ready"))
    replies.flush()
    scorers: dict[tuple[str, str], Scorer] = {}
    while (request := read_frame(requests)) is not None:
        for job in request["jobs"]:  # one reply per job, each as soon as it is done: the parent times each one
            reply = _answer(job, scorers)
            try:
                body = frame(reply)
            except Exception as exc:  # a step value that cannot travel: the job fails, the worker goes on
                body = frame(("error", f"the result of scorer {job['scorer']!r} cannot be sent back: {exc}"))
            replies.write(body)
            replies.flush()


if __name__ == "__main__":
    main()
