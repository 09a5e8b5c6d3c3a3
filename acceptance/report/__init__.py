"""Reports: junit properties, signatures, HTML, evidence."""
