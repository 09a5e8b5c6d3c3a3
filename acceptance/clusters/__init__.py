"""Where workloads run: Kubernetes, SSH."""
