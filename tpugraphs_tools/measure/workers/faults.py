"""What a worker reports when a config fails, and test-only fault injection.

A config row's error is the first line that says why (the whole text goes to the worker's
log). Tests stand in for real compiler crashes and hangs through the environment variable
``TGT_TEST_FAULTS`` (JSON, config index → ``crash`` | ``hang`` | ``raise`` | ``crash_run`` |
``native_exit`` | ``native_raise``: native output on fd 2, then exit 1 or raise), read here by
the worker entry points only. No product type carries a fault.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from tpugraphs_tools.measure.workers.logs import first_reason

# An error's text in the log: compiler errors can dump whole modules; the head says why.
ERROR_TEXT_LIMIT = 20000


def error_message(exc: BaseException) -> str:
    """A config row's error: the first line that says why. The whole text goes to this
    worker's stderr, which is the collection's log (workers/logs.py)."""
    text = f"{type(exc).__name__}: {exc}"
    reason = first_reason(text) or type(exc).__name__
    if reason != text.strip():
        print(text if len(text) < ERROR_TEXT_LIMIT else text[:ERROR_TEXT_LIMIT] + "…",
              file=sys.stderr, flush=True)
    return reason


FAULTS_ENV = "TGT_TEST_FAULTS"  # tests only (module docstring)


def injected_faults() -> dict[int, str]:
    """Config index -> injected fault, from ``TGT_TEST_FAULTS`` (tests only; empty otherwise)."""
    raw = os.environ.get(FAULTS_ENV)
    return {int(k): str(v) for k, v in json.loads(raw).items()} if raw else {}


def inject(fault: str | None) -> None:
    """Test hooks standing in for real compiler crashes (SIGILL seen with oneDNN) and hangs."""
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if fault == "hang":
        time.sleep(3600)
    if fault == "raise":
        raise RuntimeError("injected compile failure")
    if fault in ("native_exit", "native_raise"):  # XLA's C++ logging: straight to fd 2
        os.write(2, b"E1205 10:00:00.000000  4242 config_assigner.cc:536] Could not get "
                    b"config for HLO: injected native failure\n"
                    b"    All configs failed during profiling (injected detail line)\n")
        if fault == "native_exit":
            os._exit(1)
        raise RuntimeError("INTERNAL: injected status line\ninjected second line")
