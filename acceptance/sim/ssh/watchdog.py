"""Ends the simulated hosts when the process that started them is gone, even after a SIGKILL.

Run as ``python -I -S watchdog.py OWNER_PID FOLDER``: polls the owner; when it has gone, ends
sshd and every process of the simulated hosts' sessions (their environment names FOLDER in
``SIM_SSH_DIR``), then removes FOLDER. Standard library only.
"""

import contextlib
import os
import shutil
import signal
import sys
import time

DAEMON_PID = "daemon.pid"


def _session_pids(folder: str) -> list[int]:
    wanted = ("SIM_SSH_DIR=" + folder).encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if wanted in handle.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def end(folder: str) -> None:
    """Stop sshd and every session process of the simulated hosts in `folder`; remove the folder."""
    try:  # the pid this machine knows sshd by (sshd.pid may hold its pid inside its own PID namespace)
        with open(os.path.join(folder, DAEMON_PID)) as handle:
            os.kill(int(handle.read().strip()), signal.SIGKILL)  # unshare ignores SIGTERM; its namespace ends
    except (OSError, ValueError):
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _session_pids(folder)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        if pids:
            time.sleep(0.5)
    shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    owner, folder = int(sys.argv[1]), sys.argv[2]
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            break
        if not os.path.isdir(folder):
            return
        time.sleep(0.5)
    end(folder)


if __name__ == "__main__":
    main()
