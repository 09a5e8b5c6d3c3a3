"""The embedded simulated GPU cluster.

Two systems and their seam: `model` (nodes, GPUs, NICs, fabric, faults → tool outputs in
real formats), `kubeapi` (the Kubernetes API emulator and its controllers), `runtime` (what
one asks of the other), and `embedded` (both started for a `--cluster=sim` session). Nothing
is imported here: each user imports the part it needs.
"""
