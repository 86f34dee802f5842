"""Calibrate and validate the synthetic population against SPEC §12.

Measures every row of the SPEC §12 table on a modest sample (instances of
1,000 tasks drawn from an unbounded population, R realizations per task
realized in memory by the SPEC §8 recipe) and prints measured vs paper;
``fit`` searches the model's free parameters (Nelder-Mead on log-parameters,
common random numbers so that the objective is deterministic) to minimize a
weighted misfit over all rows at once.

Usage (from the project root)::

    python benchmarks/calibrate_population.py measure --instances 8 --clusters
    python benchmarks/calibrate_population.py fit-shape --evals 120 --model '{...}'
    python benchmarks/calibrate_population.py fit --instances 2 --evals 70 --model '{...}'

``--model`` overrides PopulationModel fields (JSON); stage 1 (``fit-shape``)
fits the record-level rows, stage 2 (``fit``) the rest with packing.

Packing uses ``colosim.run`` (best-fit, rebalancing, c = 1, full
clairvoyance) when the package has it, otherwise a plain best-fit without
rebalancing (the paper reports rebalancing changes q by a few per cent).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
from scipy import stats

import colosim
from colosim.sources.population import PopulationModel, SyntheticPopulation
from colosim.sources.realize import draw_indices

# SPEC §12 (paper values). q values are per-unit frequencies.
PAPER = {
    "sum500": 13.5,
    "av1_m_abs": 28.0,
    "inst_slope": 0.36,
    "inst_intercept": 0.015,
    "avg_slope": 0.31,
    "avg_intercept": 0.010,
    "ks_share": 0.30,
    "cluster_min": 0.014,
    "cluster_max": 0.176,
    "ad_50": 0.78,
    "ad_500": 0.09,
    "q_cantelli_1": 3e-4,
    "q_cantelli_1.7": 2e-6,
    "q_cantelli_4.4": 0.0,
    "q_perc_99": 2e-8,
    "q_perc_95": 5e-6,
    "q_perc_90": 7e-5,
    "q_gpa_0.001": 1.6e-3,
    "m_gpa_0.1": 35.0,
    "m_gpa_0.001": 47.0,
    "avg_over_inst_gpa": 2.5,
}

ESTIMATORS_Q = ["cantelli:1", "cantelli:1.7", "cantelli:4.4", "perc:99", "perc:95", "perc:90", "gpa:0.001"]
GPA_RHOS = [0.1, 0.05, 0.01, 0.001]


# ----------------------------------------------------------------- packing
def pack_and_count(x, y, estimator, data="inst"):
    """(m_abs, q) for one instance, c = 1, best-fit, full clairvoyance."""
    r = colosim.run(x, y, estimator=estimator, capacity=1.0, algorithm="best-fit",
                    clairvoyance=1.0, data=data, rebalance=True, headroom=1.0)
    return int(r.m_abs), float(r.q)


# ----------------------------------------------------------- measurements
def std_lines(series):
    """Least-squares std ~ mean lines (Fig. 3): (slope, intercept) inst, avg."""
    mi = np.array([s[0].astype(np.float64).mean() for s in series])
    si = np.array([s[0].astype(np.float64).std() for s in series])
    ma = np.array([s[1].astype(np.float64).mean() for s in series])
    sa = np.array([s[1].astype(np.float64).std() for s in series])
    return np.polyfit(mi, si, 1), np.polyfit(ma, sa, 1)


def ks_share(series, delta=12, seed=0):
    """Share of tasks rejecting time invariance (SPEC §9, Section 3.3)."""
    rng = np.random.default_rng(seed)
    rejected = tested = 0
    for inst, _ in series:
        nw = len(inst) // delta
        if nw < 2:
            continue
        a, b = rng.choice(nw, 2, replace=False)
        p = stats.ks_2samp(inst[a * delta:(a + 1) * delta], inst[b * delta:(b + 1) * delta]).pvalue
        tested += 1
        rejected += p < 0.05
    return rejected / max(tested, 1)


def histograms(series):
    """Per-task histograms of inst usage, 100 bins of 0.01 (SPEC §9)."""
    h = np.zeros((len(series), 100))
    for i, (inst, _) in enumerate(series):
        b = np.minimum(99, np.floor(100 * inst.astype(np.float64))).astype(np.int64)
        h[i] = np.bincount(b, minlength=100) / len(b)
    return h


def cluster_shares(series, seed=0):
    from sklearn.cluster import KMeans

    h = histograms(series)
    km = KMeans(n_clusters=16, n_init=4, random_state=seed).fit(h)
    shares = np.bincount(km.labels_, minlength=16) / len(h)
    return np.sort(shares), float(h[:, 30:].sum(axis=1).mean())


def ad_rejects(total: np.ndarray) -> bool:
    """A-D normality (estimated mean, std) rejected at 5% (SPEC §9)."""
    w = np.sort(total)
    n = len(w)
    sd = w.std(ddof=1)
    if sd == 0:
        return True
    z = (w - w.mean()) / sd
    i = np.arange(1, n + 1)
    # Anderson-Darling A^2 with estimated mean and std (as scipy.stats.anderson)
    a2 = -n - np.sum((2 * i - 1) / n * (stats.norm.logcdf(z) + stats.norm.logsf(z[::-1])))
    return a2 > 0.787 / (1 + 4 / n - 25 / n**2)


def measure(model: PopulationModel, seed=1, n_instances=4, n_tasks=1000, n_realizations=10_000,
            pack=True, clusters=False, ad_samples=20, n_char=2000, quiet=True):
    """Every SPEC §12 row that a sample of this size can measure."""
    pop = SyntheticPopulation(n_instances * n_tasks, seed=seed, model=model)
    out: dict = {}
    rng = np.random.default_rng([seed, 99])
    totals50, totals500, inst_means = [], [], []
    packing = {}
    all_series = []
    for inst_k in range(n_instances):
        rows = np.arange(inst_k * n_tasks, (inst_k + 1) * n_tasks)
        series = [pop.task(int(k)) for k in rows]
        if len(all_series) < n_char:
            all_series.extend(series[: n_char - len(all_series)])
        x = np.empty((n_tasks, n_realizations), dtype=np.float32)
        y = np.empty_like(x)
        for j, (si, sa) in enumerate(series):
            ix, iy = draw_indices(seed, int(rows[j]), len(si), n_realizations, "independent")
            x[j] = si[ix]
            y[j] = sa[iy]
        inst_means.append(x.astype(np.float64).mean(axis=1))
        for _ in range(ad_samples):
            order = rng.permutation(n_tasks)
            totals50.append(ad_rejects(x[order[:50]].astype(np.float64).sum(axis=0)))
            totals500.append(ad_rejects(x[order[:500]].astype(np.float64).sum(axis=0)))
        if pack:
            for est in ["av:1"] + ESTIMATORS_Q[:-1] + [f"gpa:{r:g}" for r in GPA_RHOS]:
                packing.setdefault((est, "inst"), []).append(pack_and_count(x, y, est, "inst"))
            for r in GPA_RHOS:
                packing.setdefault((f"gpa:{r:g}", "avg"), []).append(pack_and_count(x, y, f"gpa:{r:g}", "avg"))
        if not quiet:
            print(f"  instance {inst_k} done", file=sys.stderr)
    out["sum500"] = 500 * float(np.concatenate(inst_means).mean())
    (out["inst_slope"], out["inst_intercept"]), (out["avg_slope"], out["avg_intercept"]) = std_lines(all_series)
    out["ks_share"] = ks_share(all_series, seed=seed)
    out["ad_50"] = float(np.mean(totals50))
    out["ad_500"] = float(np.mean(totals500))
    if clusters:
        shares, above = cluster_shares(all_series, seed=seed)
        out["cluster_min"], out["cluster_max"] = float(shares[0]), float(shares[-1])
        out["hist_mass_above_0.3"] = above
    if pack:
        def mean_q(est, data="inst"):
            return float(np.mean([q for _, q in packing[(est, data)]]))

        def mean_m(est):
            return float(np.mean([m for m, _ in packing[(est, "inst")]]))

        def median_m(est):
            return float(np.median([m for m, _ in packing[(est, "inst")]]))

        out["av1_m_abs"] = mean_m("av:1")
        for est in ESTIMATORS_Q:
            name, par = est.split(":")
            out[f"q_{name}_{par}"] = mean_q(est)
        out["m_gpa_0.1"] = median_m("gpa:0.1")
        out["m_gpa_0.001"] = median_m("gpa:0.001")
        ratios = [mean_q(f"gpa:{r:g}", "avg") / max(mean_q(f"gpa:{r:g}"), 1e-12) for r in GPA_RHOS]
        out["avg_over_inst_gpa"] = float(np.exp(np.mean(np.log(np.maximum(ratios, 1e-12)))))
        for r in GPA_RHOS:
            out[f"q_gpa_{r:g}_inst"] = mean_q(f"gpa:{r:g}")
            out[f"q_gpa_{r:g}_avg"] = mean_q(f"gpa:{r:g}", "avg")
        m_abs_total = sum(m for m, _ in packing[("av:1", "inst")])
        out["resolution_av1"] = 1.0 / (m_abs_total * n_realizations)
        out["resolution_cantelli_1.7"] = 1.0 / (sum(m for m, _ in packing[("cantelli:1.7", "inst")]) * n_realizations)
        out["resolution_perc_99"] = 1.0 / (sum(m for m, _ in packing[("perc:99", "inst")]) * n_realizations)
    return out


# ------------------------------------------------------------------ misfit
def misfit(out: dict) -> float:
    """Weighted squared misfit over the SPEC §12 rows (log scale for
    frequencies and counts, relative for slopes, absolute for shares)."""
    terms = []

    def rel(key, w=1.0, tol=0.05):
        terms.append(w * ((out[key] / PAPER[key] - 1) / tol) ** 2)

    def logq(key, floor, w=1.0):
        # a factor of 3 counts as one tolerance unit
        v = max(out[key], floor)
        p = max(PAPER[key], floor)
        terms.append(w * (math.log(v / p) / math.log(3)) ** 2)

    rel("sum500", 2.0)
    rel("inst_slope", 1.0, 0.2)
    rel("inst_intercept", 1.0, 0.2)
    rel("avg_slope", 1.0, 0.2)
    rel("avg_intercept", 1.0, 0.2)
    terms.append(((out["ks_share"] - 0.30) / 0.05) ** 2)
    terms.append(((out["ad_50"] - 0.78) / 0.08) ** 2)
    terms.append(((out["ad_500"] - 0.09) / 0.05) ** 2)
    if "av1_m_abs" in out:
        rel("av1_m_abs", 2.0)
        rel("m_gpa_0.1", 1.0)
        rel("m_gpa_0.001", 1.0)
        res = out.get("resolution_av1", 1e-7)
        logq("q_cantelli_1", 3 * res)
        logq("q_cantelli_1.7", 3 * res)
        logq("q_perc_99", 3 * res)
        logq("q_perc_95", 3 * res)
        logq("q_perc_90", 3 * res)
        logq("q_gpa_0.001", 3 * res, 2.0)
        terms.append((math.log(max(out["avg_over_inst_gpa"], 1e-3) / 2.5) / math.log(1.5)) ** 2)
    return float(sum(terms))


# Stage 2: the parameters that shape tails and the spread of task sizes,
# fitted to every row (packing included; tens of seconds per evaluation).
FREE = ["mean_sigma", "mean_max", "cv_sigma", "share_concentration", "p_on", "shape_min"]


def median_for_mean(mean: float, sigma: float, cap: float) -> float:
    """The log-normal median whose capped mean E[min(X, cap)] is ``mean``
    (so that 500 tasks sum to the paper's 13.5 by construction)."""
    from scipy.optimize import brentq

    def capped_mean(med):
        m = math.log(med)
        if sigma == 0:
            return min(med, cap)
        below = math.exp(m + sigma**2 / 2) * stats.norm.cdf((math.log(cap) - m - sigma**2) / sigma)
        return below + cap * stats.norm.sf((math.log(cap) - m) / sigma)

    return brentq(lambda med: capped_mean(med) - mean, 1e-8, cap)


def _to_model(theta, base: PopulationModel) -> PopulationModel:
    vals = dict(zip(FREE, np.exp(theta)))
    vals["mean_max"] = min(1.0, vals["mean_max"])
    vals["shape_min"] = min(vals["shape_min"], vals["p_on"])
    vals["mean_median"] = median_for_mean(PAPER["sum500"] / 500, vals["mean_sigma"], vals["mean_max"])
    return base.replace(**{k: float(v) for k, v in vals.items()})


SHAPE_FREE = ["cv_ref", "cv_exponent", "multi_share", "level_share", "dwell_max"]


def measure_shape(model: PopulationModel, seed=1, n_tasks=3000):
    """The record-level rows only (std ~ mean lines, KS share): cheap."""
    pop = SyntheticPopulation(n_tasks, seed=seed, model=model)
    series = [pop.task(k) for k in range(n_tasks)]
    (s_i, i_i), (s_a, i_a) = std_lines(series)
    return {"inst_slope": s_i, "inst_intercept": i_i, "avg_slope": s_a, "avg_intercept": i_a,
            "ks_share": ks_share(series, seed=seed)}


def misfit_shape(out: dict) -> float:
    terms = [((out[k] / PAPER[k] - 1) / 0.1) ** 2
             for k in ("inst_slope", "inst_intercept", "avg_slope", "avg_intercept")]
    terms.append(((out["ks_share"] - 0.30) / 0.03) ** 2)
    return float(sum(terms))


def fit_shape(base: PopulationModel, evals: int, seed: int):
    """Stage 1: the parameters that set the per-task std and time variation,
    fitted to the record-level rows (a few seconds per evaluation)."""
    from scipy.optimize import minimize

    theta0 = np.log([getattr(base, k) for k in SHAPE_FREE])
    best = {"f": np.inf, "model": base}
    t0 = time.time()

    def f(theta):
        vals = dict(zip(SHAPE_FREE, np.exp(theta)))
        vals["multi_share"] = min(1.0, vals["multi_share"])
        vals["level_share"] = min(1.0, vals["level_share"])
        vals["dwell_max"] = max(1.0, vals["dwell_max"])
        model = base.replace(**{k: float(v) for k, v in vals.items()})
        out = measure_shape(model, seed=seed)
        val = misfit_shape(out)
        if val < best["f"]:
            best.update(f=val, model=model, out=out)
            print(f"[{time.time() - t0:5.0f}s] {val:8.3f} "
                  + " ".join(f"{k}={getattr(model, k):.4g}" for k in SHAPE_FREE) + " | "
                  + " ".join(f"{k}={v:.3g}" for k, v in out.items()), flush=True)
        return val

    simplex = np.vstack([theta0] + [theta0 + 0.3 * np.eye(len(SHAPE_FREE))[i] for i in range(len(SHAPE_FREE))])
    minimize(f, theta0, method="Nelder-Mead",
             options={"maxfev": evals, "initial_simplex": simplex, "xatol": 1e-3, "fatol": 1e-3})
    return best


def fit(base: PopulationModel, n_instances: int, evals: int, seed: int, pack: bool):
    from scipy.optimize import minimize

    theta0 = np.log([getattr(base, k) for k in FREE])
    best = {"f": np.inf, "model": base}
    t0 = time.time()

    def f(theta):
        model = _to_model(theta, base)
        out = measure(model, seed=seed, n_instances=n_instances, pack=pack)
        val = misfit(out)
        if val < best["f"]:
            best.update(f=val, model=model, out=out)
            print(f"[{time.time() - t0:7.0f}s] misfit {val:8.3f}  "
                  + " ".join(f"{k}={getattr(model, k):.4g}" for k in FREE), flush=True)
            print("    " + " ".join(f"{k}={v:.3g}" for k, v in out.items() if not k.startswith("res")), flush=True)
        return val

    # a simplex of +0.3 in each log-parameter (the default would be tiny at 0)
    simplex = np.vstack([theta0] + [theta0 + 0.3 * np.eye(len(FREE))[i] for i in range(len(FREE))])
    minimize(f, theta0, method="Nelder-Mead",
             options={"maxfev": evals, "initial_simplex": simplex, "xatol": 1e-3, "fatol": 1e-3})
    return best


def print_table(out: dict, file=sys.stdout):
    print(f"{'quantity':<22} {'measured':>12} {'paper':>12}", file=file)
    for key, paper in PAPER.items():
        if key in out:
            print(f"{key:<22} {out[key]:>12.4g} {paper:>12.4g}", file=file)
    for key in sorted(set(out) - set(PAPER)):
        print(f"{key:<22} {out[key]:>12.4g} {'':>12}", file=file)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["measure", "fit-shape", "fit"])
    ap.add_argument("--instances", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--clusters", action="store_true")
    ap.add_argument("--no-pack", action="store_true")
    ap.add_argument("--evals", type=int, default=100)
    ap.add_argument("--model", help="JSON of PopulationModel fields to override")
    args = ap.parse_args(argv)
    base = PopulationModel()
    if args.model:
        base = base.replace(**json.loads(args.model))
    if args.command == "measure":
        t = time.time()
        out = measure(base, seed=args.seed, n_instances=args.instances, pack=not args.no_pack,
                      clusters=args.clusters, quiet=False)
        print(f"# {args.instances} instances x 1000 tasks, R = 10000, seed {args.seed}, "
              f"packing by colosim.run; "
              f"{time.time() - t:.0f} s; misfit {misfit(out):.3f}")
        print_table(out)
    elif args.command == "fit-shape":
        best = fit_shape(base, args.evals, args.seed)
        print("best misfit", best["f"])
        print(json.dumps({k: getattr(best["model"], k) for k in SHAPE_FREE}, indent=1))
    else:
        best = fit(base, args.instances, args.evals, args.seed, not args.no_pack)
        print("best misfit", best["f"])
        print(json.dumps({k: getattr(best["model"], k) for k in FREE}, indent=1))
        print_table(best["out"])


if __name__ == "__main__":
    main()
