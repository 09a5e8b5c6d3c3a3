"""Recovery acceptance harness for multi-node GPU training clusters."""

__version__ = "0.1.0"
