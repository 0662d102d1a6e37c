"""``python -m atomic_gang_devstack.restart -- CMD ...``: restart CMD when it fails.

What the kubelet does for a Deployment's pod (``restartPolicy: Always``, with
backoff): a provisioner replica that loses its lease exits on purpose, and in a
cluster it comes back. SIGTERM/SIGINT are passed to CMD and end the loop; a clean
exit (0) ends it too.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
from typing import Any

BACKOFF = (1.0, 2.0, 5.0, 10.0)


class _Supervisor:
    def __init__(self, cmd: list[str]) -> None:
        self.cmd = cmd
        self.stopping = False
        self.wake_r, self.wake_w = os.pipe()  # the handler's byte ends the backoff's select
        os.set_blocking(self.wake_w, False)
        self.child: subprocess.Popen[bytes] | None = None

    def on_signal(self, signum: int, _frame: Any) -> None:
        # Runs between two bytecodes of the main thread, even inside itself: make forwards
        # the SIGTERM a process-group kill already delivered. So nothing here may block on
        # a lock: an Event.set here deadlocked on the Event's lock (see atomic_gang.stopping).
        # A flag, a non-blocking write and Popen.poll (which never waits for its lock) cannot.
        self.stopping = True
        with contextlib.suppress(BlockingIOError):
            os.write(self.wake_w, b"\0")
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signum)

    def loop(self) -> int:
        restarts = 0
        while True:
            self.child = subprocess.Popen(self.cmd)
            if self.stopping:  # the signal came before self.child was set: pass it on here
                self.child.terminate()
            code = self.child.wait()
            if self.stopping or code == 0:
                return code
            delay = BACKOFF[min(restarts, len(BACKOFF) - 1)]
            restarts += 1
            print(f"--- restart: exited {code}; again in {delay:.0f}s ({restarts})", flush=True)
            woken, _, _ = select.select([self.wake_r], [], [], delay)  # crash-loop backoff
            if woken:  # only on_signal writes to the pipe
                return code

    def close(self) -> None:
        os.close(self.wake_r)
        os.close(self.wake_w)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cmd = args[1:] if args[:1] == ["--"] else args
    if not cmd:
        sys.stderr.write("usage: python -m atomic_gang_devstack.restart -- CMD ...\n")
        return 2
    sup = _Supervisor(cmd)
    previous = {sig: signal.signal(sig, sup.on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        code = sup.loop()
        return 128 - code if code < 0 else code  # killed by a signal: the shell's convention
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sup.close()


if __name__ == "__main__":
    sys.exit(main())
