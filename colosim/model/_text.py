"""Canonical text of numbers in specs (SPEC §5): ``repr(float)`` without a
trailing ``.0`` (``0.01``, ``1``, ``99.9``, ``1e-05``)."""


def number_text(value: float) -> str:
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text
