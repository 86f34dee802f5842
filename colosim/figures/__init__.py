"""Figures (matplotlib, Agg canvas): one module per kind of figure.

Figures are built on :class:`matplotlib.figure.Figure` with an Agg canvas, so
no GUI backend and no pyplot global state are involved, and saved atomically.
"""
