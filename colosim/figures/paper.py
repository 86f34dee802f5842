"""What the figures take from the paper: which configs are the paper's
experiments, and the paper's own Section 5 values that the figures overlay
(the same numbers :func:`colosim.analysis.claims.evaluate_claims` judges
colosim against; a test keeps the two in step)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: the stems of the paper's experiment configs (configs/NAME.toml)
PAPER_CONFIGS = frozenset({"baseline", "capacity", "clairvoyance", "firstfit_vs_bestfit", "inst_vs_avg",
                           "rebalancing"})

#: the paper's mean q at the base case (Section 5.2-5.3), per estimator
PAPER_Q = {"cantelli:1": 3e-4, "cantelli:1.7": 2e-6, "cantelli:4.4": 0.0, "perc:99": 2e-8, "perc:95": 5e-6,
           "perc:90": 7e-5, "gpa:0.001": 1.6e-3, "max": 0.0}
#: the paper's mean q of max estimated from 5-minute averages, per headroom (Section 5.3)
PAPER_MAX_AVG_Q = {0.8: 3e-7, 1.0: 5e-5}
#: the paper's mean relative gain of rebalancing per family, Best Fit (Section 5.6)
PAPER_REBALANCING_GAIN = {"gpa": 0.07, "av": 0.07}

#: the style of a value the paper gives
PAPER_STYLE = {"ls": "none", "marker": "*", "ms": 12, "mfc": "gold", "mec": "black", "mew": 0.8, "zorder": 7}


@dataclass(frozen=True)
class Caption:
    """How a figure is titled: ``name`` (the config's name, None when
    unknown), whether the results are of one of the paper's configs
    (titled as the paper's figure), and whether to draw titles at all."""

    name: str | None = None
    paper: bool = False
    title: bool = True

    def heading(self, number: int, section: str, text: str) -> str:
        """``Figure 7 (paper §5.2): text`` for the paper's configs, else
        ``NAME: text (cf. paper Figure 7)``."""
        if self.paper:
            return f"Figure {number} (paper {section}): {text}"
        prefix = f"{self.name}: " if self.name else ""
        return f"{prefix}{text} (cf. paper Figure {number}, {section})"


def caption_for(config: str | Path | None, results: str | Path | None = None, title: bool = True) -> Caption:
    """The caption of results made from ``config`` (a path or name, as the
    results sidecar records it): the paper's figure when the config's file
    stem is one of :data:`PAPER_CONFIGS`, else titled by that stem; without
    a config, by the results file's stem (never as the paper's)."""
    if config:
        stem = Path(str(config)).stem
        return Caption(stem, stem in PAPER_CONFIGS, title)
    return Caption(Path(str(results)).stem if results else None, False, title)
