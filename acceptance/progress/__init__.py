"""Live progress of running workloads in pytest's terminal: lines (`status`), drawing (`display`), hooks (`plugin`)."""
