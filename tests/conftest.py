"""Fixtures of the project's own tests."""
