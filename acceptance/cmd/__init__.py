"""Subcommands of the `acceptance` CLI, one module each, each exposing `register(subparsers)`."""
