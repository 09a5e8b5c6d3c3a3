"""The agreement, pure: coverage hours and deadlines counted in them, and the Prometheus alert rules
generated from the same definitions criterion 5 and the severity levels use."""
