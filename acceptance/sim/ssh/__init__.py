"""Simulated bare-metal hosts for ``--cluster=sim-ssh``: one real sshd on loopback, tool shims, the simulator.

`hosts` starts them for a run; `sshd` (config, keys, the daemon), `shims` (what the sessions'
PATH finds), `client` (the shims' side), `server` (the simulator's side), `nvsmi` (nvidia-smi's
output), `watchdog` (ends them with the process that started them). Nothing is imported here.
"""
