"""A real Slurm (munged, slurmctld, one slurmd per simulated node) on loopback, for --cluster=sim-slurm.

`daemons.SimSlurm` starts and stops it in a private folder, with the faults ``node-drain@NODE``,
``slurmd-down@NODE`` and ``node-reserved@NODE``; `config` holds the generated slurm.conf and gres.conf and
what works on Debian 12.
Nothing is imported here: each user imports the part it needs.
"""
