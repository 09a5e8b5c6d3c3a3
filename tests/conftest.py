"""Fixtures of the project's own tests.

pytester's inline runs drop the modules first imported inside them, and numpy refuses
to be imported twice in one process: import the plugin's whole dependency tree here,
before any inline run, so every run finds it already loaded.
"""

import numpy  # noqa: F401
import pandas  # noqa: F401

import acceptance.run_session  # noqa: F401
