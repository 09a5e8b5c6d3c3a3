"""Coverage-guided fuzzing of the parsers and loaders (issue 19, part 4); see `targets.py`."""
