"""Figures of the characterization (paper Section 3): analogues of
Figures 1–6 and of Table 1.

Each ``figure_*`` function takes the numbers computed by
:mod:`colosim.analysis.characterize` (the same numbers that go to the
figure's CSV, :mod:`colosim.analysis.characterize_report`) and returns a
:class:`~matplotlib.figure.Figure`; :func:`save_png` writes it atomically.
CPU usage is in normalized units (1 = the largest machine).
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy.stats import norm

from ..io.atomic import atomic_path

CPU = "CPU units; 1 = largest machine"


def _figure(width=6.4, height=4.2, **kwargs) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained", **kwargs)
    FigureCanvasAgg(fig)
    return fig


def save_png(fig: Figure, path, dpi: int = 120) -> None:
    """Write ``fig`` as a PNG at ``path`` atomically."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi)


def figure_mean_convergence(ks, stats) -> Figure:
    """Fig. 1: box plot (quartiles, Tukey whiskers) of the relative
    difference between the mean of k instantaneous records and the mean of
    the averages, for each k."""
    fig = _figure()
    ax = fig.add_subplot()
    boxes = [dict(label=str(k), whislo=s["whislo"], q1=s["q1"], med=s["median"], q3=s["q3"],
                  whishi=s["whishi"], fliers=[]) for k, s in zip(ks, stats) if s["n"] > 0]
    if boxes:
        ax.bxp(boxes, showfliers=False, label="median; box: quartiles; whiskers: 1.5 IQR")
    ax.axhline(0.0, color="grey", lw=0.8, ls="--", label="no difference")
    ax.set_xlabel("number k of instantaneous records averaged")
    ax.set_ylabel("relative difference of means (fraction)")
    ax.set_title("Mean convergence (cf. paper Fig. 1)")
    ax.legend(loc="upper right", fontsize="small")
    return fig


def figure_std_cdf(quantiles, std_inst, std_avg) -> Figure:
    """Fig. 2: CDFs of the per-task standard deviations."""
    fig = _figure()
    ax = fig.add_subplot()
    ax.plot(std_inst, quantiles, label="instantaneous (inst)")
    ax.plot(std_avg, quantiles, label="5-minute average (avg)")
    ax.set_xlabel(f"per-task std of usage ({CPU})")
    ax.set_ylabel("fraction of tasks (CDF)")
    ax.set_ylim(0, 1)
    ax.set_xlim(left=0)
    ax.set_title("Variability of tasks (cf. paper Fig. 2)")
    ax.legend(loc="lower right")
    return fig


def figure_std_vs_mean(mean_inst, std_inst, mean_avg, std_avg, lines) -> Figure:
    """Fig. 3: per-task std against mean, with the least-squares lines."""
    fig = _figure()
    ax = fig.add_subplot()
    for kind, mx, sx, color in (("inst", mean_inst, std_inst, "C0"), ("avg", mean_avg, std_avg, "C1")):
        ok = np.isfinite(mx) & np.isfinite(sx)
        ax.scatter(mx[ok], sx[ok], s=2, alpha=0.25, color=color, rasterized=True,
                   label=f"tasks, {kind}")
        line = lines[kind]
        if np.isfinite(line.slope):
            xs = np.array([0.0, float(np.nanmax(mx[ok]))])
            ax.plot(xs, line.slope * xs + line.intercept, color=color, lw=1.8,
                    label=f"{kind} line: {line.slope:.3f} x {line.intercept:+.4f}")
    ax.set_xlabel(f"per-task mean usage ({CPU})")
    ax.set_ylabel(f"per-task std ({CPU})")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title("Standard deviation vs mean (cf. paper Fig. 3)")
    ax.legend(loc="upper left", fontsize="small", markerscale=4)
    return fig


def figure_clusters(centroids, shares) -> Figure:
    """Fig. 4: the k-means centroids (average histogram of each cluster)."""
    k = len(centroids)
    cols = 4
    rows = int(np.ceil(k / cols))
    fig = _figure(11, 2.2 * rows + 0.6)
    # one x and one y scale: the clusters are compared with each other
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    edges = np.arange(centroids.shape[1] + 1) / centroids.shape[1]
    right = centroid_range(centroids, edges)
    for j, ax in enumerate(axes.flat):
        if j >= k:
            ax.set_visible(False)
            continue
        ax.stairs(centroids[j], edges, fill=True, color="C0", label=f"share {100 * shares[j]:.1f}%")
        ax.set_title(f"({chr(ord('a') + j)})", fontsize="small")
        ax.legend(loc="upper right", fontsize="x-small", handlelength=0.8)
        ax.set_xlim(0, right)
        if j % cols == 0:
            ax.set_ylabel("probability")
        if j // cols == rows - 1:
            ax.set_xlabel("inst. usage (CPU units)")
    fig.suptitle("k-means centroids of per-task usage histograms (cf. paper Fig. 4)")
    return fig


def centroid_range(centroids, edges, mass: float = 0.995) -> float:
    """The right end of Figure 4's x range: the upper edge of the bin by
    which every centroid holds ``mass`` of its probability (a small margin
    beyond), never past the last edge."""
    centroids = np.asarray(centroids, dtype=np.float64)
    if centroids.size == 0:
        return float(edges[-1])
    total = centroids.sum(axis=1, keepdims=True)
    cdf = np.cumsum(centroids, axis=1) / np.where(total > 0, total, 1.0)
    last = int(max(np.searchsorted(row, mass * row[-1]) for row in cdf))
    step = float(edges[1] - edges[0])
    return float(min(edges[-1], edges[min(last + 1, len(edges) - 1)] + step))


def figure_sums(size, edges, densities, mu, sigma) -> Figure:
    """Fig. 5: empirical densities of the total usage of a few random
    samples of tasks, with the fitted Gaussians N(mu_j, sigma_j)."""
    fig = _figure()
    ax = fig.add_subplot()
    fine = np.linspace(edges[0], edges[-1], 400)
    for j in range(len(densities)):
        color = f"C{j}"
        ax.stairs(densities[j], edges, color=color, label=f"sample {j + 1}: empirical")
        if sigma[j] > 0:
            ax.plot(fine, norm.pdf(fine, mu[j], sigma[j]), color=color, ls="--",
                    label=f"sample {j + 1}: N({mu[j]:.2f}, {sigma[j]:.2f})")
    ax.set_xlabel(f"total instantaneous usage of {size} tasks ({CPU})")
    ax.set_ylabel("probability density (1 / CPU)")
    ax.set_title(f"Sums of {size} random tasks (cf. paper Fig. 5)")
    ax.legend(fontsize="small")
    return fig


def figure_table1(sizes, share, share_stephens) -> Figure:
    """Table 1 drawn: A-D rejection share against the number of tasks."""
    fig = _figure()
    ax = fig.add_subplot()
    ax.plot(sizes, 100 * np.asarray(share), marker="o", ms=3, label="rejected at 5% (SPEC §9 critical value)")
    ax.plot(sizes, 100 * np.asarray(share_stephens), ls=":", label="rejected at 5% (SciPy's current critical value)")
    ax.axhline(5.0, color="grey", lw=0.8, ls="--", label="5% (expected if Gaussian)")
    ax.set_xlabel("number of tasks N in the sample")
    ax.set_ylabel("samples whose sum is rejected as Gaussian (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Anderson-Darling normality of sums (cf. paper Table 1)")
    ax.legend(fontsize="small")
    return fig


def figure_percentile_error(sizes, percentiles, error) -> Figure:
    """Fig. 6: relative error of the Gaussian percentile prediction, one box
    per (number of tasks, percentile)."""
    fig = _figure(8, 4.4)
    ax = fig.add_subplot()
    n_p = len(percentiles)
    width = 0.8 / n_p
    for p in range(n_p):
        data = [e[np.isfinite(e)] for e in error[:, :, p].T]
        pos = np.arange(len(sizes)) + (p - (n_p - 1) / 2) * width
        # the median in black, thick and above the box, to stand out on every box colour
        bp = ax.boxplot(data, positions=pos, widths=width * 0.9, showfliers=False, patch_artist=True,
                        manage_ticks=False, medianprops={"color": "black", "lw": 2.2, "zorder": 4,
                                                         "solid_capstyle": "butt"})
        for box in bp["boxes"]:
            box.set_facecolor(f"C{p}")
            box.set_alpha(0.6)
        ax.plot([], [], color=f"C{p}", lw=6, alpha=0.6, label=f"{percentiles[p]:g}th percentile")
    ax.axhline(0.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(sizes)), [str(s) for s in sizes])
    ax.set_xlabel("number of tasks in the sample")
    ax.set_ylabel("relative error of the Gaussian estimate")
    ax.set_title("Gaussian prediction of percentiles of the total usage (cf. paper Fig. 6)")
    ax.plot([], [], color="black", lw=2.2, label="median")
    ax.legend(fontsize="small", ncols=2)
    return fig
