"""The files of a characterization (paper Section 3): the CSVs behind
Figures 1–6, ``table1.csv``, ``clusters.csv``, the figures and
``report.md`` with the paper's values beside colosim's."""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..figures.characterization import (
    figure_clusters,
    figure_mean_convergence,
    figure_percentile_error,
    figure_std_cdf,
    figure_std_vs_mean,
    figure_sums,
    figure_table1,
    save_png,
)
from ..io.atomic import write_text_atomic
from ..io.outputs import PNG, claim, claim_dir, lock, text_kind
from ..io.results import format_value
from ..progress import Progress, no_progress
from .characterize import (
    HISTOGRAM_BINS,
    Characterization,
    ad_critical_value,
    ad_critical_value_stephens,
    box_stats,
)

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


def _write_csv(path, header, rows) -> None:
    lines = [",".join(header)]
    lines.extend(",".join(format_value(v) for v in row) for row in rows)
    write_text_atomic(path, "\n".join(lines) + "\n")


def _pct(v, digits=1) -> str:
    return "n/a" if v is None or not np.isfinite(v) else f"{100 * v:.{digits}f}%"


def _num(v, digits=3) -> str:
    return "n/a" if v is None or not np.isfinite(v) else f"{v:.{digits}f}"


def write_outputs(result: Characterization, out_dir, *, task_id=None, other: Characterization | None = None,
                  progress: Progress = no_progress) -> list:
    """Write the CSVs, PNG figures and ``report.md`` into ``out_dir``.

    The folder is created if needed; each file is written atomically under a
    fixed name (:data:`OUTPUT_FILES`), other files in the folder are left
    alone. With ``other`` (the same trace under the window-quantiles
    sampling), its files go to the subfolder :data:`WINDOW_QUANTILES_DIR` and
    the report's table shows both. Returns the paths written.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"out_dir {out} exists and is not a folder", param="out_dir")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    steps = 5 + (result.clusters is not None) + 2 * (result.sums is not None) + (result.percentiles is not None)
    advance = progress("Writing figures and tables", steps)

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

    if other is not None:
        written.extend(write_outputs(other, out / WINDOW_QUANTILES_DIR, task_id=task_id, progress=progress))
    write_text_atomic(out / "report.md", render_report(result, stats, other=other))
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


#: the subfolder of ``--out`` that holds the window-quantiles characterization
#: when both samplings are reported
WINDOW_QUANTILES_DIR = "window-quantiles"

_SAMPLING_TEXT = {
    "sample": "each record's instantaneous value is the trace's one sampled second of the window (the paper's data)",
    "window-quantiles": ("each record's instantaneous value is one second drawn from the window's per-second CPU "
                         "distribution (its percentiles interpolated, docs/spec.md \"Window-quantile "
                         "realizations\"); averages are the trace's"),
}


def render_report(result: Characterization, fig1_stats=None, *, other: Characterization | None = None) -> str:
    """``report.md``: settings, the paper-vs-colosim table, the figures.

    With ``other`` (the same trace under the window-quantiles sampling), the
    table has a column for each sampling and ``other``'s files are named."""
    st = result.settings
    out = ["# Trace characterization (paper Section 3)", ""]
    out.append(f"Series: {st['source']}; {result.n_tasks} tasks, {result.n_records} records. "
               f"Realization-based analyses (Table 1, Figs. 5-6) use the {st['store']}.")
    out.append(f"Instantaneous data: {_SAMPLING_TEXT[st.get('sampling', 'sample')]}.")
    out.append(f"Seed {st['seed']}; {st['repetitions']} random samples per size; samples are **nested** "
               "(the sample of N + 10 tasks extends the one of N tasks, SPEC §9); "
               f"k-means with {st['n_init']} initializations.")
    out.append("")
    out.append("## Paper vs this trace")
    out.append("")
    if other is None:
        out.append("| quantity | paper | this trace |")
        out.append("|---|---|---|")
        out.extend(f"| {a} | {b} | {c} |" for a, b, c in headline(result))
    else:
        theirs = {a: c for a, _, c in headline(other)}
        out.append("The paper's values are those of the Google 2011 trace (one sampled second per window). "
                   "This trace is shown twice: with its own sampled seconds, as the paper, and with one second "
                   "drawn from each window's per-second distribution. Every file of the second characterization "
                   f"is in `{WINDOW_QUANTILES_DIR}/`; its realization-based analyses use the "
                   f"{other.settings['store']}.")
        out.append("")
        out.append("| quantity | paper (2011) | this trace, sampled second | this trace, window quantiles |")
        out.append("|---|---|---|---|")
        out.extend(f"| {a} | {b} | {c} | {theirs.get(a, 'n/a')} |" for a, b, c in headline(result))
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


#: what ``run_characterization(sampling=...)`` takes
SAMPLING_CHOICES = ("auto", "sample", "window-quantiles", "both")


def run_characterization(out_dir, *, series=None, synthetic: int | None = None, population_seed: int = 2017,
                         store=None, sampling: str = "auto", progress: Progress = no_progress, force: bool = False,
                         **options) -> tuple[Characterization, list]:
    """Characterize a series file (``series``) or ``synthetic`` tasks of the
    built-in population (seed ``population_seed``), with an optional store
    file for the realization-based analyses, and write every file into
    ``out_dir``. ``options`` go to :func:`colosim.analysis.characterize.characterize`;
    they are checked, and the outputs claimed (files of an earlier
    characterization are replaced only with ``force``), before any work.

    ``sampling``: ``sample`` (the trace's sampled seconds, the paper's),
    ``window-quantiles`` (seconds drawn from each window's distribution),
    ``both`` (the first in ``out_dir``, the second in its subfolder
    :data:`WINDOW_QUANTILES_DIR`, one report), or ``auto``: ``both`` for a
    series with per-window distributions and no store, else ``sample``.

    Returns the characterization (the sampled seconds' when both) and the
    paths written.
    """
    from ..io.series import open_series
    from ..io.store import open_store
    from ..sources.population import SyntheticPopulation
    from .characterize import characterize

    if (series is None) == (synthetic is None):
        raise InputError("give either a series file or a number of synthetic tasks (not both)")
    if sampling not in SAMPLING_CHOICES:
        raise InputError(f"sampling must be one of {', '.join(SAMPLING_CHOICES)}, not {sampling!r}",
                         param="sampling")
    if sampling in ("window-quantiles", "both") and store is not None:
        raise InputError(f"sampling {sampling!r} realizes its own in-memory store from the series; give no store",
                         param="sampling")
    if sampling in ("window-quantiles", "both") and synthetic is not None:
        raise InputError(f"sampling {sampling!r} needs per-window CPU distributions; the built-in population "
                         "has none", param="sampling")
    _check_options(store is not None, options)
    with contextlib.ExitStack() as stack:
        quantiles = False
        if series is not None:
            quantiles = stack.enter_context(open_series(series)).has_quantiles
        if sampling in ("window-quantiles", "both") and not quantiles:
            raise InputError(f"sampling {sampling!r} needs per-window CPU distributions (a series ingested "
                             f"from Google 2019 data with percentiles); {series} has none", param="sampling")
        if sampling == "auto":
            sampling = "both" if quantiles and store is None else "sample"
    out = claim_outputs(out_dir, [series, store], force=force, both=sampling == "both")
    with contextlib.ExitStack() as stack:
        if synthetic is not None:
            if isinstance(synthetic, bool) or not isinstance(synthetic, int) or synthetic < 1:
                raise InputError(f"synthetic must be >= 1, not {synthetic!r}", param="synthetic")
            source = SyntheticPopulation(synthetic, population_seed)
            name = (f"built-in synthetic population ({synthetic} tasks, seed {population_seed}, "
                    f"model v{source.source['model_version']})")
        else:
            source = stack.enter_context(open_series(series))
            name = str(series)
        store_file = stack.enter_context(open_store(store)) if store is not None else None
        first = "window-quantiles" if sampling == "window-quantiles" else "sample"
        result = characterize(source, store_file, progress=progress, name=name, sampling=first, **options)
        other = None
        if sampling == "both":
            other = characterize(source, None, progress=progress, name=name, sampling="window-quantiles",
                                 **options)
        with lock(out, can_wait=False):
            written = write_outputs(result, out, other=other, progress=progress)
    return result, written


#: The first line of each output's text, by file (PNG files are checked by
#: their signature): what ``--force`` may replace.
_HEADS = {
    "fig1_mean_convergence.csv": "k,tasks,", "fig2_std_cdf.csv": "cdf,std_inst,",
    "fig3_std_vs_mean.csv": "job_id,task_index,", "fig3_lines.csv": "data,slope,",
    "ks_time_invariance.csv": "delta,tasks_tested,", "clusters.csv": "cluster,label,",
    "table1.csv": "n_tasks,samples,", "fig5_sums.csv": "sample,n_tasks,bin_left,",
    "fig6_percentile_error.csv": "sample,n_tasks,percentile,", "report.md": "# Trace characterization",
}


def claim_outputs(out_dir, inputs, *, force: bool = False, both: bool = False) -> Path:
    """Check every file a characterization writes into ``out_dir``
    (:func:`colosim.io.outputs.claim`) before any work; with ``both``, those
    of the subfolder :data:`WINDOW_QUANTILES_DIR` too."""
    out = claim_dir(out_dir, inputs=inputs)
    folders = [out]
    if both:
        folders.append(claim_dir(out / WINDOW_QUANTILES_DIR, inputs=inputs))
    for folder in folders:
        for name in OUTPUT_FILES:
            kind = PNG if name.endswith(".png") else text_kind(_HEADS[name], f"{name} of a characterization")
            claim(folder / name, kind=kind, inputs=inputs, force=force)
    return out


def _check_options(with_store: bool, options: dict) -> None:
    """The options that are used late in a characterization (the in-memory
    store's size) checked first, with the memory that store needs."""
    for name, minimum in (("store_tasks", 1), ("realizations", 2), ("repetitions", 1), ("n_init", 1), ("seed", 0)):
        v = options.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < minimum):
            raise InputError(f"{name} must be an integer >= {minimum}, not {v!r}", param=name)
    if not with_store:
        from ..resources import check_memory

        tasks, r = options.get("store_tasks", 5000), options.get("realizations", 10000)
        check_memory(8 * tasks * r, f"an in-memory store of {tasks:_} tasks x {r:_} realizations")
