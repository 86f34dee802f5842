"""The model: the estimator table, fleets, grid points and metrics: what a
grid point is and what it scores, without any file or kernel loop."""
