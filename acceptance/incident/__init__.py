"""The incident side, pure: the bundle (the first message), severity and its clocks, lost training time.

- `inputs.parse_input`: one log or evidence text through every parser of `acceptance.tools`;
- `assemble.findings` / `assemble.bundle`: the seven fields, the proposed severity, what is missing;
- `render.to_json` / `markdown.markdown`: ``bundle.json`` and ``bundle.md``;
- `severity`: levels by training impact and their clocks; `clocks.restoration` / `clocks.resolution`:
  the acceptance run's and criterion 5's pass against those clocks;
- `lost_time`: lost training time by term and owner, and the resharding comparison.

No network, clock or filesystem here: the I/O is in `acceptance.cmd.bundle`, `acceptance.cmd.lost_time`
and `acceptance.report.bundle`.
"""
