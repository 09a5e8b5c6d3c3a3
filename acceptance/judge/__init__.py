"""Pure verdicts: measured vs baseline vs margin."""
