"""Direct labels without collisions, and a check that a figure's texts do
not overlap (measured with the figure's renderer)."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text


def repel(wanted, gap: float, low: float = 0.0, high: float = 1.0) -> list[float]:
    """Positions as near ``wanted`` as possible (least squares), in the same
    order as ``wanted`` ranks them, at least ``gap`` apart and within
    ``[low, high]`` (spread evenly when they cannot fit). Deterministic:
    ties keep their input order."""
    n = len(wanted)
    if n == 0:
        return []
    order = sorted(range(n), key=lambda i: (wanted[i], i))
    if (n - 1) * gap > high - low:
        step = (high - low) / max(n - 1, 1)
        spread = [low + k * step for k in range(n)]
        out = [0.0] * n
        for k, i in enumerate(order):
            out[i] = spread[k]
        return out
    # z_k = w_k + k * gap with w non-decreasing: isotonic regression (pool adjacent violators)
    target = [wanted[i] - k * gap for k, i in enumerate(order)]
    blocks: list[list[float]] = []  # [mean, count]
    for t in target:
        blocks.append([t, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, c2 = blocks.pop()
            m1, c1 = blocks.pop()
            blocks.append([(m1 * c1 + m2 * c2) / (c1 + c2), c1 + c2])
    w = [m for m, c in blocks for _ in range(int(c))]
    top = high - (n - 1) * gap
    out = [0.0] * n
    for k, i in enumerate(order):
        out[i] = min(max(w[k], low), top) + k * gap
    return out


def renderer(fig):
    """The figure's renderer (an Agg canvas attached when it has none)."""
    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def label_right(ax, items, fontsize: float = 7.0, pad: float = 1.2) -> list:
    """Label points at the right edge of ``ax``, outside it, one label per
    ``(x, y, text, color)`` item (data coordinates), each joined to its
    point by a thin line, spread vertically so that no two overlap.
    Call it once the figure is laid out (the spacing uses the axes' height
    in pixels); the y limits are fixed here."""
    fig = ax.get_figure(root=True)
    r = renderer(fig)
    ax.set_ylim(*ax.get_ylim())
    ax.set_xlim(*ax.get_xlim())
    probe = Text(0, 0, "Ag", fontsize=fontsize, figure=fig)
    height = probe.get_window_extent(r).height * pad / max(ax.get_window_extent(r).height, 1.0)
    to_axes = ax.transScale + ax.transLimits
    # at one height, the point farther left gets the higher label: leader lines that do not cross
    items = sorted(items, key=lambda it: (float(to_axes.transform((it[0], it[1]))[1]), -it[0]))
    wanted = [float(to_axes.transform((x, y))[1]) for x, y, _, _ in items]
    ys = repel(wanted, height, height / 2, 1 - height / 2)
    out = []
    for (x, y, text, color), ly in zip(items, ys):
        out.append(ax.annotate(text, xy=(x, y), xytext=(1.03, ly), textcoords="axes fraction", va="center",
                               ha="left", fontsize=fontsize, color=color, annotation_clip=False,
                               arrowprops={"arrowstyle": "-", "color": color, "lw": 0.5, "alpha": 0.45,
                                           "shrinkA": 0, "shrinkB": 3}))
    return out


def _in_view(axis, tick) -> bool:
    lo, hi = sorted(axis.get_view_interval())
    loc = tick.get_loc()
    span = hi - lo if hi > lo else 1.0
    return lo - 1e-9 * span <= loc <= hi + 1e-9 * span


def figure_texts(fig) -> list[tuple[Text, object]]:
    """Every visible, non-empty text the figure draws, each with a group:
    tick labels are grouped by their axis (the labels of one axis are laid
    out by matplotlib and not compared with each other), every other text
    is its own group."""
    fig.draw_without_rendering()
    ticks: dict[int, object] = {}
    every_tick: set[int] = set()
    out = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for lab in (tick.label1, tick.label2):
                    every_tick.add(id(lab))
                    if _in_view(axis, tick):
                        ticks[id(lab)] = axis
    for t in fig.findobj(Text):
        if not t.get_visible() or not t.get_text().strip():
            continue
        a = t.axes
        if a is not None and not a.get_visible():
            continue
        group = ticks.get(id(t))
        if group is None and id(t) in every_tick:
            continue  # a tick label out of view: not drawn
        out.append((t, group if group is not None else id(t)))
    return out


def overlapping_texts(fig, tolerance: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of texts of ``fig`` whose rendered bounding boxes overlap by
    more than ``tolerance`` pixels both ways (tick labels of one axis not
    compared with each other)."""
    texts = figure_texts(fig)
    r = renderer(fig)
    boxes = [(t, g, t.get_window_extent(r)) for t, g in texts]
    out = []
    for i in range(len(boxes)):
        ti, gi, bi = boxes[i]
        for j in range(i + 1, len(boxes)):
            tj, gj, bj = boxes[j]
            if gi == gj:
                continue
            dx = min(bi.x1, bj.x1) - max(bi.x0, bj.x0)
            dy = min(bi.y1, bj.y1) - max(bi.y0, bj.y0)
            if dx > tolerance and dy > tolerance:
                out.append((ti.get_text(), tj.get_text()))
    return out

