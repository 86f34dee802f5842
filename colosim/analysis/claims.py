"""The paper's Section 5 claims judged on results rows (SPEC §12).

The claims are pure functions of results rows (:func:`evaluate_claims`),
with SPEC §12's tolerances: a violation frequency holds within a factor of 3
of the paper's, or when both lie below three times the sweep's resolution
``1 / sum over instances of (m_abs × |E|)``; a machine count or a share
holds within ±5% (relative). Claims of another kind (a ratio, a dominance, a
"stays similar") state their comparison in the table. Machine counts the
paper gives for 1,000-task instances are compared after scaling by
``n / 1000``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.results import BASE_CASE
from ..model.estimators import family, same_estimator
from ..model.grid import evaluation_columns
from .summary import rebalancing_gains

PAPER_TASKS = 1000  # tasks per instance in the paper (Section 5.1)

HOLDS, FAILS, MISSING = "holds", "does not hold", "not evaluated"


@dataclass(frozen=True)
class Results:
    """One experiment's rows with what the claims need to know of the run:
    R (for |E|) and tasks per instance (to scale machine counts)."""

    rows: list[dict]
    realizations: int
    tasks: int


@dataclass(frozen=True)
class Claim:
    source: str  # paper section / figure
    claim: str  # what the paper states, in colosim's words
    paper: str
    colosim: str
    comparison: str  # how the verdict is computed
    verdict: str  # HOLDS, FAILS or MISSING


def frequency_holds(ours: float, paper: float, resolution: float) -> bool:
    """SPEC §12: within a factor of 3, or both below 3 × resolution."""
    if ours < 3 * resolution and paper < 3 * resolution:
        return True
    return ours > 0 and paper > 0 and 1 / 3 <= ours / paper <= 3


def count_holds(ours: float, paper: float) -> bool:
    """SPEC §12: a machine count or a share within ±5% (relative)."""
    return abs(ours - paper) <= 0.05 * abs(paper)


def similar_frequencies(a: float, res_a: float, b: float, res_b: float) -> bool:
    """Two of colosim's frequencies agree by SPEC §12's rule for a
    frequency: within a factor of 3, or each below 3 × its resolution."""
    if a < 3 * res_a and b < 3 * res_b:
        return True
    return a > 0 and b > 0 and 1 / 3 <= a / b <= 3


def resolution(rows: list[dict], realizations: int) -> float:
    """``1 / sum over rows of m_abs × |E|``: the smallest non-zero mean
    violation frequency the rows can show (SPEC §12)."""
    total = sum(r["m_abs"] * evaluation_columns(r["clairvoyance"], realizations) for r in rows)
    return 1.0 / total


def pick(res: Results | None, estimator: str, **keys) -> list[dict]:
    """Rows of one grid point: the base case, with ``keys`` overriding."""
    if res is None:
        return []
    want = dict(BASE_CASE, **keys)
    return [r for r in res.rows
            if same_estimator(r["estimator"], estimator) and all(r[k] == v for k, v in want.items())]


def mean(rows, metric="q") -> float:
    return float(np.mean([r[metric] for r in rows]))


def median(rows, metric) -> float:
    return float(np.median([r[metric] for r in rows]))


def fmt(v: float) -> str:
    if v == 0:
        return "0"
    return f"{v:.1e}" if abs(v) < 1e-2 or abs(v) >= 1e4 else f"{v:.3g}"


def _verdict(ok: bool) -> str:
    return HOLDS if ok else FAILS


def _missing(source, claim, paper, why) -> Claim:
    return Claim(source, claim, paper, "—", why, MISSING)


def claim_machine_count(res, source, claim, estimator, paper, stat):
    """A machine count (mean or median m_abs), paper value for 1,000 tasks."""
    rows = pick(res, estimator)
    paper_text = f"{paper:.1f}"
    if not rows:
        return _missing(source, claim, paper_text, f"no {estimator} rows at the base case")
    scaled = paper * res.tasks / PAPER_TASKS
    ours = mean(rows, "m_abs") if stat == "mean" else median(rows, "m_abs")
    scaled_note = "" if res.tasks == PAPER_TASKS else f" (paper × {res.tasks}/1000 = {scaled:.3g})"
    return Claim(source, claim, paper_text + scaled_note, f"{ours:.3g}",
                 f"{stat} m_abs over {len(rows)} instances within ±5% of the paper's",
                 _verdict(count_holds(ours, scaled)))


def claim_frequency(res, source, claim, estimator, paper, **keys):
    rows = pick(res, estimator, **keys)
    if not rows:
        return _missing(source, claim, fmt(paper), f"no {estimator} rows")
    ours, r = mean(rows), resolution(rows, res.realizations)
    return Claim(source, claim, fmt(paper), f"{fmt(ours)} (resolution {fmt(r)})",
                 f"mean q over {len(rows)} instances within ×3 of the paper's, or both < 3 × resolution",
                 _verdict(frequency_holds(ours, paper, r)))


def claim_never(res, source, claim, estimator="max"):
    rows = pick(res, estimator)
    if not rows:
        return _missing(source, claim, "q = 0", "no max / perc:100 rows")
    nonzero = sum(r["q"] > 0 for r in rows)
    return Claim(source, claim, "q = 0",
                 f"q > 0 on {nonzero} of {len(rows)} instances (max q {fmt(max(r['q'] for r in rows))})",
                 "q = 0 on every instance", _verdict(nonzero == 0))


def medians_by_estimator(rows) -> dict[str, tuple[float, float]]:
    out: dict[str, list] = {}
    for r in rows:
        out.setdefault(r["estimator"], []).append(r)
    return {k: (median(v, "m"), median(v, "q")) for k, v in out.items()}


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Pareto dominance in (m, q), both to be minimized."""
    return a[0] <= b[0] and a[1] <= b[1] and (a[0] < b[0] or a[1] < b[1])


def claim_no_pareto(res, source, claim):
    """No family among GPA, av and perc (perc < 100) dominates another: for
    no ordered pair of families (A, B) is every B point dominated by some A
    point, with points the per-estimator medians of (m, q)."""
    rows = [r for r in pick_all(res) if family(r["estimator"]) in ("gpa", "av", "perc")]
    med = medians_by_estimator(rows)
    fams = {}
    for spec, p in med.items():
        fams.setdefault(family(spec), []).append(p)
    if len(fams) < 2:
        return _missing(source, claim, "no family dominates", "needs at least two of GPA, av, perc")
    dominating = [f"{a} over {b}" for a in fams for b in fams if a != b
                  and all(any(dominates(pa, pb) for pa in fams[a]) for pb in fams[b])]
    dominated_points = sum(any(dominates(p2, p) for s2, p2 in med.items() if family(s2) != family(s))
                           for s, p in med.items())
    value = ("family dominance: " + ", ".join(dominating)) if dominating else "no family dominates"
    value += f"; {dominated_points} of {len(med)} estimators dominated by another family's estimator"
    return Claim(source, claim, "no family dominates", value,
                 "per-estimator medians of (m, q) at the base case; family A dominates B when every B point is "
                 "Pareto-dominated by some A point (perc 100 excluded)", _verdict(not dominating))


def pick_all(res) -> list[dict]:
    if res is None:
        return []
    return [r for r in res.rows if all(r[k] == v for k, v in BASE_CASE.items())]


def claim_comparable(res, source, claim, estimators):
    groups = [pick(res, e) for e in estimators]
    if not all(groups):
        return _missing(source, claim, "comparable (m, q)", "missing one of " + ", ".join(estimators))
    ms = [median(g, "m") for g in groups]
    qs = [median(g, "q") for g in groups]
    # a median over instances resolves 1 / (median m_abs × |E|); use the
    # per-instance resolution of each point
    rs = [1.0 / (median(g, "m_abs") * evaluation_columns(g[0]["clairvoyance"], res.realizations)) for g in groups]
    m_ok = max(ms) <= 1.05 * min(ms)
    q_ok = all(similar_frequencies(qs[i], rs[i], qs[j], rs[j])
               for i in range(len(qs)) for j in range(i + 1, len(qs)))
    value = "; ".join(f"{e}: m {m:.3f}, q {fmt(q)}" for e, m, q in zip(estimators, ms, qs))
    return Claim(source, claim, "comparable (m, q)", value,
                 "median m within 5% (max/min ≤ 1.05) and median q pairwise within ×3 "
                 "(or both < 3 × one instance's resolution)", _verdict(m_ok and q_ok))


def claim_first_fit_best_fit(res, source, claim):
    if res is None or len({r["algorithm"] for r in res.rows}) < 2:
        return _missing(source, claim, "Δm_abs ≤ 1, Δq < 1%", "needs first-fit and best-fit rows")
    base = {k: v for k, v in BASE_CASE.items() if k != "algorithm"}
    rows = [r for r in res.rows if all(r[k] == v for k, v in base.items())]
    by = {}
    for r in rows:
        by.setdefault((r["estimator"], r["algorithm"]), {})[r["instance"]] = r
    specs = sorted({k[0] for k in by})
    worst_dm, worst_dq, bad = 0, 0.0, []
    for s in specs:
        ff, bf = by.get((s, "first-fit"), {}), by.get((s, "best-fit"), {})
        common = sorted(set(ff) & set(bf))
        if not common:
            continue
        worst_dm = max(worst_dm, max(abs(ff[k]["m_abs"] - bf[k]["m_abs"]) for k in common))
        qf, qb = (float(np.mean([d[k]["q"] for k in common])) for d in (ff, bf))
        rf, rb = (resolution([d[k] for k in common], res.realizations) for d in (ff, bf))
        if not (qf < 3 * rf and qb < 3 * rb):
            rel = abs(qf - qb) / max(qf, qb)
            worst_dq = max(worst_dq, rel)
            if rel >= 0.01:
                bad.append(s)
    ok = worst_dm <= 1 and not bad
    value = f"max Δm_abs {worst_dm}; max relative Δ(mean q) {100 * worst_dq:.2g}%"
    if bad:
        value += " (≥ 1% for " + ", ".join(bad) + ")"
    return Claim(source, claim, "Δm_abs ≤ 1, Δq < 1%", value,
                 "per instance |m_abs(FF) − m_abs(BF)| ≤ 1, and per estimator |q̄(FF) − q̄(BF)| < 1% of the "
                 "larger (both < 3 × resolution also passes)", _verdict(ok))


def claim_avg_ratio(res, source, claim, fam, paper_low, paper_high, paper_text):
    """Ratio of mean q estimated from avg to mean q from inst, geometric mean
    over the family's estimators at headroom 1 (estimators with q = 0 from
    inst data are left out: no ratio). Holds within the paper's range
    widened by ±20%."""
    if res is None:
        return _missing(source, claim, paper_text, "no inst_vs_avg results")
    specs = [s for s in dict.fromkeys(r["estimator"] for r in res.rows) if family(s) == fam]
    ratios, parts = [], []
    for s in specs:
        qi, qa = pick(res, s, data="inst"), pick(res, s, data="avg")
        if not qi or not qa or mean(qi) == 0:
            continue
        ratios.append(mean(qa) / mean(qi))
        parts.append(f"{s} ×{ratios[-1]:.2g}")
    if not ratios:
        return _missing(source, claim, paper_text, f"no {fam} estimator with q > 0 from inst data")
    gm = float(np.exp(np.mean(np.log(np.maximum(ratios, 1e-300)))))
    ok = 0.8 * paper_low <= gm <= 1.2 * paper_high
    return Claim(source, claim, paper_text, f"×{gm:.2g} ({', '.join(parts)})",
                 f"geometric mean over {fam} of q̄(avg)/q̄(inst) at headroom 1 within the paper's range ±20% "
                 f"[{0.8 * paper_low:.3g}, {1.2 * paper_high:.3g}]", _verdict(ok))


def claim_capacity(res, source, claim):
    if res is None or len({r["capacity"] for r in res.rows}) < 2:
        return _missing(source, claim, "GPA similar, av changes", "needs several capacities")
    caps = sorted({r["capacity"] for r in res.rows})
    specs = [s for s in dict.fromkeys(r["estimator"] for r in res.rows) if family(s) in ("gpa", "av")]
    verdicts, parts = [], []
    for s in specs:
        pts = [(mean(g), resolution(g, res.realizations)) for c in caps if (g := pick(res, s, capacity=c))]
        if len(pts) < 2:
            continue
        hi, lo = max(pts), min(pts)
        similar = similar_frequencies(hi[0], hi[1], lo[0], lo[1])
        want = family(s) == "gpa"
        verdicts.append(similar == want)
        spread = "∞" if lo[0] == 0 and hi[0] > 0 else ("1" if hi[0] == 0 else f"{hi[0] / lo[0]:.2g}")
        parts.append(f"{s} max/min {spread}")
    if not verdicts:
        return _missing(source, claim, "GPA similar, av changes", "no GPA or av rows over capacities")
    return Claim(source, claim, "GPA similar, av changes", "; ".join(parts),
                 "with rebalancing, mean q across capacities: every GPA within ×3 (max/min ≤ 3, or all < 3 × "
                 "resolution), every av beyond ×3", _verdict(all(verdicts)))


def claim_clairvoyance(res, source, claim, observations=100):
    if res is None:
        return _missing(source, claim, "q(100 obs.) ≈ q(clairvoyant)", "no clairvoyance results")
    levels = sorted({r["clairvoyance"] for r in res.rows})
    R = res.realizations
    enough = [lv for lv in levels if lv < 1.0 and R - evaluation_columns(lv, R) >= observations]
    if not enough or 1.0 not in levels:
        return _missing(source, claim, "q(100 obs.) ≈ q(clairvoyant)",
                        f"needs clairvoyance 1 and a level observing ≥ {observations} of R = {R}")
    level = enough[0]
    k = R - evaluation_columns(level, R)
    specs = [s for s in dict.fromkeys(r["estimator"] for r in res.rows) if s == "gpa:0.01" or family(s) == "av"]
    verdicts, parts = [], []
    for s in specs:
        a, b = pick(res, s, clairvoyance=level), pick(res, s)
        if not a or not b:
            continue
        qa, qb = mean(a), mean(b)
        verdicts.append(similar_frequencies(qa, resolution(a, R), qb, resolution(b, R)))
        parts.append(f"{s} {fmt(qa)} vs {fmt(qb)}")
    if not verdicts:
        return _missing(source, claim, "q(100 obs.) ≈ q(clairvoyant)", "no gpa:0.01 or av rows")
    return Claim(source, claim, "q(100 obs.) ≈ q(clairvoyant)",
                 f"clairvoyance {level:g} ({k} obs.): " + "; ".join(parts),
                 f"mean q at the smallest level observing ≥ {observations} realizations within ×3 of mean q at "
                 "clairvoyance 1 (or both < 3 × resolution), for gpa:0.01 and every av", _verdict(all(verdicts)))


def claim_rebalancing(res, source, claim, fam, paper=0.07):
    if res is None or len({r["rebalance"] for r in res.rows}) < 2:
        return _missing(source, claim, f"{100 * paper:.0f}%", "needs runs with and without rebalancing")
    base = {k: v for k, v in BASE_CASE.items() if k != "rebalance"}
    rows = [r for r in res.rows if all(r[k] == v for k, v in base.items()) and family(r["estimator"]) == fam]
    gains = rebalancing_gains(rows)
    values = np.concatenate(list(gains.values())) if gains else np.array([])
    if values.size == 0:
        return _missing(source, claim, f"{100 * paper:.0f}%", f"no {fam} instance with q > 0 without rebalancing")
    ours = float(values.mean())
    return Claim(source, claim, f"{100 * paper:.0f}%",
                 f"{100 * ours:.3g}% (over {values.size} instance × estimator pairs)",
                 "mean over instances and the family's estimators of (q_off − q_on)/q_off, pairs with q_off = 0 "
                 "omitted; a share: within ±5% relative", _verdict(count_holds(ours, paper)))


def evaluate_claims(results: dict[str, Results]) -> list[Claim]:
    """The paper's Section 5 claims (SPEC §12) judged on the
    experiments' results, keyed by config name: ``baseline``,
    ``firstfit_vs_bestfit``, ``inst_vs_avg``, ``capacity``,
    ``clairvoyance``, ``rebalancing``. A missing experiment or grid point
    gives a claim marked "not evaluated"."""
    b = results.get("baseline")
    out = [
        claim_machine_count(b, "§5.2", "av 1 packs 1,000 tasks into about 28 machines (mean m_abs)", "av:1", 28.0,
                            "mean"),
        claim_frequency(b, "§5.2", "Cantelli b = 1: mean q", "cantelli:1", 3e-4),
        claim_frequency(b, "§5.2", "Cantelli b = 1.7: mean q", "cantelli:1.7", 2e-6),
        claim_frequency(b, "§5.3", "Cantelli b = 4.4: mean q is 0", "cantelli:4.4", 0.0),
        claim_frequency(b, "§5.2", "perc 99: mean q", "perc:99", 2e-8),
        claim_frequency(b, "§5.2", "perc 95: mean q", "perc:95", 5e-6),
        claim_frequency(b, "§5.2", "perc 90: mean q", "perc:90", 7e-5),
        claim_never(b, "§5.2", "max never exceeds capacity"),
        claim_no_pareto(b, "§5.2, Fig. 8", "no estimator family Pareto-dominates among GPA, av and perc"),
        claim_comparable(b, "§5.2, Fig. 8", "perc 70, av 1.25 and GPA 0.1 give comparable (m, q)",
                         ["perc:70", "av:1.25", "gpa:0.1"]),
        claim_comparable(b, "§5.2, Fig. 8", "perc 90, av 2 and GPA 0.001 give comparable (m, q)",
                         ["perc:90", "av:2", "gpa:0.001"]),
        claim_frequency(b, "§5.2, Fig. 9", "GPA ρ = 0.001: mean q", "gpa:0.001", 1.6e-3),
        claim_first_fit_best_fit(results.get("firstfit_vs_bestfit"), "§5.2",
                                 "First Fit and Best Fit: m_abs within one machine, mean q within 1%"),
        claim_avg_ratio(results.get("inst_vs_avg"), "§5.3, Fig. 10",
                        "GPA from 5-minute averages: 2–3× the violations of GPA from instantaneous data",
                        "gpa", 2.0, 3.0, "2–3×"),
        claim_avg_ratio(results.get("inst_vs_avg"), "§5.3, Fig. 10",
                        "Cantelli from averages: about 10× the violations", "cantelli", 10.0, 10.0, "about 10×"),
        claim_capacity(results.get("capacity"), "§5.4, Fig. 11",
                       "GPA's q stays similar across capacities, av's changes"),
        claim_clairvoyance(results.get("clairvoyance"), "§5.5, Fig. 12",
                           "100 observations reach the clairvoyant q (GPA 0.01 and av)"),
        claim_rebalancing(results.get("rebalancing"), "§5.6, Fig. 13", "rebalancing lowers GPA's q by about 7%", "gpa"),
        claim_rebalancing(results.get("rebalancing"), "§5.6, Fig. 13", "rebalancing lowers av's q by about 7%", "av"),
        claim_machine_count(b, "§5.6", "GPA ρ = 0.1: median m_abs 35", "gpa:0.1", 35.0, "median"),
        claim_machine_count(b, "§5.6", "GPA ρ = 0.001: median m_abs 47", "gpa:0.001", 47.0, "median"),
    ]
    return out


def claims_markdown(claims: list[Claim]) -> str:
    """The claims as a Markdown table, with a count of verdicts."""
    lines = ["| # | source | claim | paper | colosim | comparison | verdict |",
             "|---|---|---|---|---|---|---|"]
    for i, c in enumerate(claims, 1):
        cells = [str(i), c.source, c.claim, c.paper, c.colosim, c.comparison,
                 {HOLDS: "**holds**", FAILS: "**does not hold**", MISSING: "not evaluated"}[c.verdict]]
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    n = {v: sum(c.verdict == v for c in claims) for v in (HOLDS, FAILS, MISSING)}
    lines.append("")
    lines.append(f"{n[HOLDS]} of {len(claims)} claims hold, {n[FAILS]} do not, {n[MISSING]} not evaluated.")
    return "\n".join(lines) + "\n"
