"""Figure 14 (CPU and memory together, docs/memory.md): drawn from rows that
pack memory, refused with a reason for rows of CPU alone, and laid out with
no two labels overlapping."""

import numpy as np

from colosim.engine import instance_metrics
from colosim.figures.memory import memory_rows, treatment
from colosim.figures.results import FIGURES, select, supported_figures
from colosim.model.grid import GridPoint

from .conftest import random_usage
from .test_memory_packing import memory_of

SHAPES = "0.5x0.5:6732,0.5x0.25:3863,0.5x0.75:1001,1x1:795,0.25x0.25:126"
KEYS = ("estimator", "algorithm", "capacity", "clairvoyance", "data", "rebalance", "headroom", "fit_rule",
        "memory_capacity", "memory_estimator")


def rows_of(points, instances=3):
    rows = []
    for k in range(instances):
        rng = np.random.default_rng(k)
        x = random_usage(rng, 80, 200, scale=0.03)
        mem = memory_of(rng, x) * 0.4
        for p, met in zip(points, instance_metrics(x, None, points, memory=mem)):
            r = dict(instance=k, **dict(zip(KEYS, p.keys())), realizations=200, evaluated=200)
            for c in ("m_abs", "m_norm", "m", "q", "q_max", "severity", "oversize", "q_memory", "q_memory_max",
                      "memory_bound"):
                r[c] = getattr(met, c)
            r["q_ci_low"], r["q_ci_high"] = met.q_ci
            rows.append(r)
    return rows


def test_figure_14_needs_rows_that_pack_memory():
    cpu_alone = rows_of([GridPoint.make("gpa:0.01"), GridPoint.make("av:1")], instances=2)
    assert "needs rows that pack memory" in supported_figures(cpu_alone)[14]
    both = rows_of([GridPoint.make("gpa:0.01", capacity="0.5:1"),
                    GridPoint.make("gpa:0.01", capacity=SHAPES, memory_estimator="gpa:0.01")], instances=2)
    assert supported_figures(both)[14] is None


def test_cpu_alone_rows_are_drawn_once_whatever_the_memory_keys():
    points = [GridPoint.make("gpa:0.01", capacity=c, fit_rule=f, memory_estimator=m)
              for c in ("0.5:1", SHAPES) for m in ("max", "perc:99") for f in ("cpu", "l2")]
    rows = rows_of(points)
    chosen = memory_rows(rows, select)
    alone = [r for r in chosen if r["q_memory"] is None]
    assert len(alone) == 3  # one per instance, not one per memory estimator and rule
    assert len({treatment(r) for r in chosen}) == 5


def test_labels_of_figure_14_do_not_overlap():
    points = [GridPoint.make(e, capacity=c, fit_rule=f, memory_estimator=m)
              for e in ("gpa:0.01", "av:1") for c in ("0.5:1", SHAPES) for m in ("max", "gpa:0.01")
              for f in ("cpu", "l2", "dot")]
    fig = FIGURES[14].draw(rows_of(points), 200)
    fig.draw_without_rendering()  # the constrained layout, as saved
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    boxes = [t.get_window_extent(renderer) for t in ax.get_yticklabels() if t.get_text()]
    assert len(boxes) == 7
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b)
    # the tick labels stay inside the figure, left of the first panel
    width = fig.get_window_extent(renderer).width
    assert all(0 <= b.x0 and b.x1 <= ax.get_window_extent(renderer).x0 <= width for b in boxes)
