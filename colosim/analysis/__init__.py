"""Analyses: the characterization of a trace (paper Section 3), summaries
of results and the paper's Section 5 claims judged on them."""
