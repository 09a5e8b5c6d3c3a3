"""The embedded simulated GPU cluster."""
