"""Shared by tests/ and acceptance/ runs: nothing but the path of ../shared."""
