"""Files of the characterization (paper Section 3): analogues of Figures
1–6, the CSVs behind them, ``table1.csv``, ``clusters.csv`` and ``report.md``.

Each ``figure_*`` function takes the numbers computed by
:mod:`colosim.characterize` (the same numbers that go to the figure's CSV)
and returns a :class:`~matplotlib.figure.Figure`; :func:`save_png` writes it
atomically. :func:`write_outputs` writes every file. CPU usage is in
normalized units (1 = the largest machine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy.stats import norm

from ..characterize import (
    HISTOGRAM_BINS,
    Characterization,
    Progress,
    _no_progress,
    ad_critical_value,
    ad_critical_value_stephens,
    box_stats,
)
from ..errors import InputError
from ..io.atomic import atomic_path, write_text_atomic

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
    axes = fig.subplots(rows, cols, sharex=True, squeeze=False)
    edges = np.arange(centroids.shape[1] + 1) / centroids.shape[1]
    for j, ax in enumerate(axes.flat):
        if j >= k:
            ax.set_visible(False)
            continue
        ax.stairs(centroids[j], edges, fill=True, color="C0", label=f"share {100 * shares[j]:.1f}%")
        ax.set_title(f"({chr(ord('a') + j)})", fontsize="small")
        ax.legend(loc="upper right", fontsize="x-small", handlelength=0.8)
        ax.set_xlim(0, 1)
        if j % cols == 0:
            ax.set_ylabel("probability")
        if j // cols == rows - 1:
            ax.set_xlabel("inst. usage (CPU units)")
    fig.suptitle("k-means centroids of per-task usage histograms (cf. paper Fig. 4)")
    return fig


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
        bp = ax.boxplot(data, positions=pos, widths=width * 0.9, showfliers=False, patch_artist=True,
                        manage_ticks=False)
        for box in bp["boxes"]:
            box.set_facecolor(f"C{p}")
            box.set_alpha(0.6)
        ax.plot([], [], color=f"C{p}", lw=6, alpha=0.6, label=f"{percentiles[p]:g}th percentile")
    ax.axhline(0.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(sizes)), [str(s) for s in sizes])
    ax.set_xlabel("number of tasks in the sample")
    ax.set_ylabel("relative error of the Gaussian estimate")
    ax.set_title("Gaussian prediction of percentiles of the total usage (cf. paper Fig. 6)")
    ax.legend(fontsize="small", ncols=2)
    return fig


# ---------------------------------------------------------------- files

# The paper's values (Section 3; SPEC §9, §12).
PAPER = {
    "slope_inst": 0.36, "intercept_inst": 0.015, "slope_avg": 0.31, "intercept_avg": 0.010,
    "ks_share": 0.30, "share_min": 0.014, "share_max": 0.176,
    "ad_50": 0.78, "ad_500": 0.09, "total_500": 13.5,
}

OUTPUT_FILES = (
    "fig1_mean_convergence.png", "fig1_mean_convergence.csv",
    "fig2_std_cdf.png", "fig2_std_cdf.csv",
    "fig3_std_vs_mean.png", "fig3_std_vs_mean.csv", "fig3_lines.csv",
    "ks_time_invariance.csv",
    "fig4_clusters.png", "clusters.csv",
    "fig5_sums.png", "fig5_sums.csv",
    "table1.png", "table1.csv",
    "fig6_percentile_error.png", "fig6_percentile_error.csv",
    "report.md",
)


def _cell(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


def _write_csv(path, header, rows) -> None:
    lines = [",".join(header)]
    lines.extend(",".join(_cell(v) for v in row) for row in rows)
    write_text_atomic(path, "\n".join(lines) + "\n")


def _pct(v, digits=1) -> str:
    return "n/a" if v is None or not np.isfinite(v) else f"{100 * v:.{digits}f}%"


def _num(v, digits=3) -> str:
    return "n/a" if v is None or not np.isfinite(v) else f"{v:.{digits}f}"


def write_outputs(result: Characterization, out_dir, *, task_id=None,
                  progress: Optional[Progress] = None) -> list:
    """Write the CSVs, PNG figures and ``report.md`` into ``out_dir``.

    The folder is created if needed; each file is written atomically under a
    fixed name (:data:`OUTPUT_FILES`), other files in the folder are left
    alone. Returns the paths written.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: --out exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    steps = 5 + (result.clusters is not None) + 2 * (result.sums is not None) + (result.percentiles is not None)
    advance = (progress or _no_progress)("Writing figures and tables", steps)

    def done(*names):
        written.extend(out / n for n in names)
        advance(1)

    # Fig. 1
    ks = list(result.convergence)
    stats = [box_stats(result.convergence[k]) for k in ks]
    _write_csv(out / "fig1_mean_convergence.csv",
               ["k", "tasks", "whislo", "q1", "median", "q3", "whishi", "mean"],
               [[k, s["n"], s["whislo"], s["q1"], s["median"], s["q3"], s["whishi"], s["mean"]]
                for k, s in zip(ks, stats)])
    save_png(figure_mean_convergence(ks, stats), out / "fig1_mean_convergence.png")
    done("fig1_mean_convergence.csv", "fig1_mean_convergence.png")

    # Figs. 2-3
    m = result.moments
    quantiles = np.linspace(0.0, 1.0, 1001)
    ok_i, ok_a = np.isfinite(m.std_inst), np.isfinite(m.std_avg)
    q_inst = np.quantile(m.std_inst[ok_i], quantiles)
    q_avg = np.quantile(m.std_avg[ok_a], quantiles)
    _write_csv(out / "fig2_std_cdf.csv", ["cdf", "std_inst", "std_avg"],
               zip(quantiles, q_inst, q_avg))
    save_png(figure_std_cdf(quantiles, q_inst, q_avg), out / "fig2_std_cdf.png")
    done("fig2_std_cdf.csv", "fig2_std_cdf.png")
    task_id = result.task_id if task_id is None else task_id
    tid = np.asarray(task_id) if task_id is not None else np.column_stack(
        [np.arange(result.n_tasks), np.zeros(result.n_tasks, dtype=np.int64)])
    _write_csv(out / "fig3_std_vs_mean.csv",
               ["job_id", "task_index", "records", "mean_inst", "std_inst", "mean_avg", "std_avg"],
               ([int(tid[i, 0]), int(tid[i, 1]), int(m.lengths[i]), m.mean_inst[i], m.std_inst[i],
                 m.mean_avg[i], m.std_avg[i]] for i in range(result.n_tasks)))
    _write_csv(out / "fig3_lines.csv",
               ["data", "slope", "intercept", "rvalue", "tasks", "paper_slope", "paper_intercept"],
               [[k, ln.slope, ln.intercept, ln.rvalue, ln.n, PAPER[f"slope_{k}"], PAPER[f"intercept_{k}"]]
                for k, ln in result.lines.items()])
    save_png(figure_std_vs_mean(m.mean_inst, m.std_inst, m.mean_avg, m.std_avg, result.lines),
                   out / "fig3_std_vs_mean.png")
    done("fig3_std_vs_mean.csv", "fig3_lines.csv", "fig3_std_vs_mean.png")

    # Section 3.3
    _write_csv(out / "ks_time_invariance.csv",
               ["delta", "tasks_tested", "tasks_rejected", "share_rejected", "paper_share"],
               [[d, v.tested, v.rejected, v.share, PAPER["ks_share"]] for d, v in result.invariance.items()])
    done("ks_time_invariance.csv")

    # Fig. 4
    if result.clusters is not None:
        c = result.clusters
        header = ["cluster", "label", "tasks", "share"] + [f"h{j:02d}" for j in range(HISTOGRAM_BINS)]
        _write_csv(out / "clusters.csv", header,
                   [[j, chr(ord("a") + j), int(c.counts[j]), float(c.shares[j]), *c.centroids[j]]
                    for j in range(len(c.counts))])
        save_png(figure_clusters(c.centroids, c.shares), out / "fig4_clusters.png")
        done("clusters.csv", "fig4_clusters.png")

    # Table 1, Fig. 5
    if result.sums is not None:
        s = result.sums
        n_rep = s.a2.shape[0]
        _write_csv(out / "table1.csv",
                   ["n_tasks", "samples", "rejected", "share_rejected", "undefined",
                    "share_rejected_scipy_current", "mean_a2", "median_a2", "mean_total_usage"],
                   [[int(s.sizes[j]), n_rep, int(s.rejected[j]), float(s.share[j]), int(s.undefined[j]),
                     float(s.rejected_stephens[j] / n_rep), float(np.nanmean(s.a2[:, j])) if
                     np.isfinite(s.a2[:, j]).any() else float("nan"),
                     float(np.nanmedian(s.a2[:, j])) if np.isfinite(s.a2[:, j]).any() else float("nan"),
                     float(s.total_mean[:, j].mean())] for j in range(s.sizes.size)])
        save_png(figure_table1(s.sizes, s.share, s.rejected_stephens / n_rep), out / "table1.png")
        done("table1.csv", "table1.png")
        e = result.examples
        lo, hi = float(e.sums.min()), float(e.sums.max())
        edges = np.linspace(lo, hi if hi > lo else lo + 1e-9, 61)
        dens = np.array([np.histogram(v, bins=edges, density=True)[0] for v in e.sums])
        _write_csv(out / "fig5_sums.csv",
                   ["sample", "n_tasks", "bin_left", "bin_right", "density", "mu", "sigma"],
                   [[j, e.size, edges[b], edges[b + 1], dens[j, b], e.mu[j], e.sigma[j]]
                    for j in range(len(dens)) for b in range(len(edges) - 1)])
        save_png(figure_sums(e.size, edges, dens, e.mu, e.sigma), out / "fig5_sums.png")
        done("fig5_sums.csv", "fig5_sums.png")

    # Fig. 6
    if result.percentiles is not None:
        p = result.percentiles
        err = p.error
        _write_csv(out / "fig6_percentile_error.csv",
                   ["sample", "n_tasks", "percentile", "gaussian", "empirical", "rel_error"],
                   ([r, int(p.sizes[i]), float(p.percentiles[k]), p.gaussian[r, i, k], p.empirical[r, i, k],
                     err[r, i, k]] for r in range(err.shape[0]) for i in range(err.shape[1])
                    for k in range(err.shape[2])))
        save_png(figure_percentile_error(p.sizes, p.percentiles, err),
                       out / "fig6_percentile_error.png")
        done("fig6_percentile_error.csv", "fig6_percentile_error.png")

    write_text_atomic(out / "report.md", render_report(result, stats))
    done("report.md")
    return written


def headline(result: Characterization) -> list[tuple[str, str, str]]:
    """(quantity, paper, colosim) rows of the report's summary table."""
    rows = []
    for kind, name in (("inst", "instantaneous"), ("avg", "average")):
        ln = result.lines[kind]
        rows.append((f"std ~ mean slope, {name} (Fig. 3)", f"{PAPER[f'slope_{kind}']:.2f}", _num(ln.slope)))
        rows.append((f"std ~ mean intercept, {name} (Fig. 3)", f"{PAPER[f'intercept_{kind}']:.3f}",
                     _num(ln.intercept, 4)))
    for d, v in result.invariance.items():
        paper = "about 30%" if d == 12 else "similar to Delta = 12"
        rows.append((f"KS rejection of time invariance, Delta = {d} (§3.3)", paper,
                     f"{_pct(v.share)} of {v.tested} tasks"))
    if result.clusters is not None:
        sh = result.clusters.shares
        rows.append(("k-means (k = 16) cluster shares (Fig. 4)", "1.4% to 17.6%",
                     f"{_pct(sh.min())} to {_pct(sh.max())}"))
        mass = result.clusters.centroids[:, 30:].sum(axis=1) @ result.clusters.shares
        rows.append(("histogram mass above 0.30 CPU (Fig. 4)", "mostly 0", _pct(mass, 2)))
    if result.sums is not None:
        for n in (50, 500):
            at = result.sums.at(n)
            paper = "78%" if n == 50 else "about 9%"
            rows.append((f"A-D rejection at N = {n} (Table 1)", paper,
                         _pct(at[0]) if at else "not computed (N not among the sizes run)"))
        largest = int(result.sums.sizes[-1])
        if largest not in (50, 500):
            at = result.sums.at(largest)
            rows.append((f"A-D rejection at N = {largest}, the largest N run (Table 1)",
                         "high below 100 tasks", f"{_pct(at[0])} (mean total usage {_num(at[1], 2)})"))
        at = result.sums.at(500)
        rows.append(("mean total usage of N = 500 tasks (Fig. 5)", "13.5",
                     _num(at[1], 2) if at else "not computed (N not among the sizes run)"))
    if result.percentiles is not None:
        p = result.percentiles
        err = p.error
        med = np.nanmedian(err, axis=0)
        q1, q3 = np.nanpercentile(err, 25, axis=0), np.nanpercentile(err, 75, axis=0)
        rows.append(("Gaussian percentile error, median over samples (Fig. 6)", "close to 0",
                     f"{_num(np.nanmin(med))} to {_num(np.nanmax(med))} across sizes and percentiles"))
        ends = sorted({0, len(p.sizes) - 1})
        k99 = int(np.argmin(np.abs(p.percentiles - 99.0)))
        rows.append((f"Gaussian percentile error, IQR at the {p.percentiles[k99]:g}th percentile (Fig. 6)",
                     "smaller for more tasks",
                     ", ".join(f"{_num(q3[i, k99] - q1[i, k99])} at N = {p.sizes[i]}" for i in ends)))
        k_top = int(np.argmax(p.percentiles))
        rows.append((f"Gaussian error at the {p.percentiles[k_top]:g}th percentile, median (Fig. 6)",
                     "negative (rare events underestimated)",
                     ", ".join(f"{_num(med[i, k_top])} at N = {p.sizes[i]}" for i in ends)))
    return rows


def render_report(result: Characterization, fig1_stats=None) -> str:
    """``report.md``: settings, the paper-vs-colosim table, the figures."""
    st = result.settings
    out = ["# Trace characterization (paper Section 3)", ""]
    out.append(f"Series `{st['source']}`: {result.n_tasks} tasks, {result.n_records} records. "
               f"Realization-based analyses (Table 1, Figs. 5-6) use the {st['store']}.")
    out.append(f"Seed {st['seed']}; {st['repetitions']} random samples per size; samples are **nested** "
               "(the sample of N + 10 tasks extends the one of N tasks, SPEC §9); "
               f"k-means with {st['n_init']} initializations.")
    out.append("")
    out.append("## Paper vs this trace")
    out.append("")
    out.append("| quantity | paper | this trace |")
    out.append("|---|---|---|")
    out.extend(f"| {a} | {b} | {c} |" for a, b, c in headline(result))
    out.append("")
    if result.notes:
        out.append("Notes:")
        out.append("")
        out.extend(f"- {n}" for n in result.notes)
        out.append("")

    out += ["## Mean convergence (Fig. 1)", "", "![Fig. 1](fig1_mean_convergence.png)", "",
            "| k | tasks | q1 | median | q3 |", "|---|---|---|---|---|"]
    ks = list(result.convergence)
    stats = fig1_stats or [box_stats(result.convergence[k]) for k in ks]
    out.extend(f"| {k} | {s['n']} | {_num(s['q1'])} | {_num(s['median'])} | {_num(s['q3'])} |"
               for k, s in zip(ks, stats))
    out += ["", "Data: `fig1_mean_convergence.csv`.", ""]

    out += ["## Variability (Figs. 2-3)", "", "![Fig. 2](fig2_std_cdf.png)", "",
            "![Fig. 3](fig3_std_vs_mean.png)", "",
            "Least-squares lines (each data against its own per-task means, population std): "
            "`fig3_lines.csv`; per-task values `fig3_std_vs_mean.csv`, CDF `fig2_std_cdf.csv`.", ""]

    out += ["## Time invariance (Section 3.3)", "",
            "Two distinct random windows of Delta records aligned at multiples of Delta, "
            "two-sample KS test (SciPy, exact or asymptotic as it chooses), rejected at 5%.", "",
            "| Delta | tasks tested | rejected | share |", "|---|---|---|---|"]
    out.extend(f"| {d} | {v.tested} | {v.rejected} | {_pct(v.share)} |" for d, v in result.invariance.items())
    out += ["", "Data: `ks_time_invariance.csv`.", ""]

    if result.clusters is not None:
        out += ["## Clusters (Fig. 4)", "", "![Fig. 4](fig4_clusters.png)", "",
                "Shares: " + ", ".join(f"({chr(ord('a') + j)}) {_pct(s)}"
                                       for j, s in enumerate(result.clusters.shares)) + ".",
                "", "Centroids and shares: `clusters.csv`.", ""]

    if result.sums is not None:
        s = result.sums
        n_rep = s.a2.shape[0]
        out += ["## Sums of tasks (Table 1, Fig. 5)", "", "![Table 1](table1.png)", "",
                "![Fig. 5](fig5_sums.png)", "",
                f"A-D statistic of the sum's {s.n_realizations} realizations, rejected at 5% when "
                f"A^2 > 0.787 / (1 + 4/n - 25/n^2) = {ad_critical_value(s.n_realizations):.4f} (SPEC §9). "
                f"SciPy's current 5% value ({ad_critical_value_stephens(s.n_realizations):.3f}) is shown "
                "beside it.", "",
                "| N | rejected (SPEC) | rejected (SciPy current) | mean total usage |", "|---|---|---|---|"]
        out.extend(f"| {int(s.sizes[j])} | {_pct(s.share[j])} | {_pct(s.rejected_stephens[j] / n_rep)} | "
                   f"{_num(float(s.total_mean[:, j].mean()), 2)} |" for j in range(s.sizes.size))
        out += ["", "Data: `table1.csv`, `fig5_sums.csv`.", ""]

    if result.percentiles is not None:
        p = result.percentiles
        err = p.error
        out += ["## Percentile prediction (Fig. 6)", "", "![Fig. 6](fig6_percentile_error.png)", "",
                "Relative error (Gaussian estimate - empirical percentile) / empirical percentile: "
                "median [q1, q3] over samples.", "",
                "| N | " + " | ".join(f"{k:g}th" for k in p.percentiles) + " |",
                "|---|" + "---|" * len(p.percentiles)]
        for i, n in enumerate(p.sizes):
            cells = []
            for k in range(len(p.percentiles)):
                e = err[:, i, k]
                e = e[np.isfinite(e)]
                cells.append("n/a" if e.size == 0 else
                             f"{np.median(e):+.4f} [{np.percentile(e, 25):+.4f}, {np.percentile(e, 75):+.4f}]")
            out.append(f"| {int(n)} | " + " | ".join(cells) + " |")
        out += ["", "Data: `fig6_percentile_error.csv`.", ""]
    return "\n".join(out)
