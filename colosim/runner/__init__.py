"""Running: the sweep driver, its backends, and the paper's whole Section 5
(``colosim reproduce``)."""
