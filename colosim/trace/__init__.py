"""Trace formats: one module per format (Google 2011, Google 2019) and the
synthetic population that stands in for the Google 2011 long tasks."""
