"""The tool shims on the PATH of the simulated hosts' sessions (pure text, and one writer).

``nvidia-smi`` (``-q`` too), ``dcgmi``, ``dmesg``, the nccl-tests binaries, ``ib_write_bw`` and the training job
(``python .../pretrain_*.py``) ask the simulator (`client.py`). An MPI rank, or a torchrun-style
node rank, first writes its host into a rendezvous folder; only rank 0 runs the client, so 128
ranks cost 128 tiny shell processes. ``nv-hostengine`` is a real background process per host
(``ps`` shows it as ``nv-hostengine``) that ``dcgmi`` needs, like the real one. ``hostname`` and
``lsb_release`` say what the simulated host is; ``journalctl`` finds no journal. Everything else on the host is real.
"""

from __future__ import annotations

import shlex
import shutil
import stat
import sys
from pathlib import Path

from acceptance.tools.nccl import COLLECTIVES

CLIENT = Path(__file__).with_name("client.py")

_RENDEZVOUS = """\
if [ -n "${OMPI_COMM_WORLD_RANK:-}" ]; then
  rv="$SIM_SSH_DIR/rendezvous/${OMPI_MCA_ess_base_jobid:-${PMIX_NAMESPACE:-job}}"
  rank=$OMPI_COMM_WORLD_RANK
elif [ -n "${NODE_RANK:-}" ] && [ -n "${NNODES:-}" ]; then
  rv="$SIM_SSH_DIR/rendezvous/torch-${MASTER_ADDR:-}-${MASTER_PORT:-}-$NNODES"
  rank=$NODE_RANK
fi
if [ -n "${rv:-}" ]; then
  mkdir -p "$rv" && printf '%s\\n' "$SIM_SSH_NODE" > "$rv/.$rank" && mv "$rv/.$rank" "$rv/$rank"
  [ "$rank" = 0 ] || exit 0
fi
"""


def client_shim(tool: str, python: str, *, gather: bool) -> str:
    """A shim that runs the client for `tool` (after the rank rendezvous when `gather`)."""
    head = f"#!/bin/sh\n# {tool} of a simulated host: asks the recovery-acceptance simulator what it prints here\n"
    call = f'exec {shlex.quote(python)} -I -S {shlex.quote(str(CLIENT))} {shlex.quote(tool)} "$@"\n'
    return head + (_RENDEZVOUS if gather else "") + call


def python_shim(python: str, real_python: str) -> str:
    """``python``: the simulator's training job for ``pretrain_*.py``, the real interpreter otherwise."""
    return (
        "#!/bin/sh\n# python on a simulated host: the simulated training job for pretrain_*.py\n"
        "sim=\n"
        'for a in "$@"; do case "${a##*/}" in pretrain_*.py) sim=1;; esac; done\n'
        f'[ -n "$sim" ] || exec {shlex.quote(real_python)} "$@"\n'
        + _RENDEZVOUS
        + f'exec {shlex.quote(python)} -I -S {shlex.quote(str(CLIENT))} python "$@"\n'
    )


_NV_HOSTENGINE = """\
#!/bin/bash
# nv-hostengine of a simulated host: a background process per host that dcgmi needs, like the real one
state="$SIM_SSH_DIR/hostengine/$SIM_SSH_NODE.pid"
pidfile=
term=
while [ $# -gt 0 ]; do
  case "$1" in
    --pid) pidfile=$2; shift ;;
    --pid=*) pidfile=${1#--pid=} ;;
    -t|--term) term=1 ;;
  esac
  shift
done
mkdir -p "${state%/*}"
running() { [ -s "$state" ] && kill -0 "$(cat "$state")" 2>/dev/null; }
if [ -n "$term" ]; then
  if running && kill "$(cat "$state")"; then rm -f "$state"; echo "Host engine successfully terminated."; exit 0; fi
  echo "Unable to terminate host engine."; exit 1
fi
if running; then echo "Host engine already running with pid $(cat "$state")"; exit 1; fi
setsid bash -c 'exec -a nv-hostengine sleep 2147483647' < /dev/null > /dev/null 2>&1 &
echo $! > "$state"
[ -z "$pidfile" ] || echo $! > "$pidfile"
echo "Started host engine version @DCGM@ using port number: 5555"
"""


def nv_hostengine(dcgm_version: str) -> str:
    return _NV_HOSTENGINE.replace("@DCGM@", dcgm_version)


# A simulated host keeps no journal: the kernel log is its (simulated) dmesg, never this machine's.
JOURNALCTL = (
    '#!/bin/sh\n# journalctl of a simulated host: no journal\necho "No journal files were found." >&2\nexit 1\n'
)
HOSTNAME = '#!/bin/sh\n# hostname of a simulated host\necho "$SIM_SSH_NODE"\n'


def lsb_release(description: str) -> str:
    return (
        "#!/bin/sh\n# lsb_release of a simulated host\n"
        f'case "$*" in *d*) echo {shlex.quote(description)} ;; *) echo "No LSB modules are available." ;; esac\n'
    )


def shims(python: str, real_python: str, os_image: str, dcgm_version: str) -> dict[str, str]:
    """Name → script of every shim."""
    out = {f"{c}_perf": client_shim(f"{c}_perf", python, gather=True) for c in COLLECTIVES}
    out.update({
        "nvidia-smi": client_shim("nvidia-smi", python, gather=False),
        "dcgmi": client_shim("dcgmi", python, gather=False),
        "ib_write_bw": client_shim("ib_write_bw", python, gather=False),
        "dmesg": client_shim("dmesg", python, gather=False),
        "journalctl": JOURNALCTL,
        "python": python_shim(python, real_python),
        "python3": python_shim(python, real_python),
        "nv-hostengine": nv_hostengine(dcgm_version),
        "hostname": HOSTNAME,
        "lsb_release": lsb_release(os_image),
    })  # fmt: skip
    return out


def write_shims(folder: Path, os_image: str, dcgm_version: str) -> Path:
    """Write the shims into ``folder/bin``; the folder to put first on the sessions' PATH."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    real = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable
    for name, text in shims(sys.executable, real, os_image, dcgm_version).items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir
