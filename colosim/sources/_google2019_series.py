"""SPEC §7 steps (1,) 2-5 on Google 2019 records and the series file they
become, shared by the per-task CSVs (:mod:`.google2019`) and the trace's own
tables (:mod:`.google2019_tables`)."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..io.series import SeriesWriter
from .ingest import IngestReport


def file_names(files) -> str:
    """The first three of ``files``, for a message, and how many more."""
    names = ", ".join(str(f) for f in files[:3])
    return names + (f" and {len(files) - 3} more" if len(files) > 3 else "")


def build_series(tasks: dict, counts: dict, output, files, min_records: int, on_bad_lines: str, *,
                 fmt: str, failing: set | None = None, event_counts: dict | None = None) -> IngestReport:
    """SPEC §7 steps (1,) 2-5 on ``tasks`` (key -> records ``(time, machine,
    inst, avg[, mem_avg, mem_max], knots or None)``) and the series file."""
    out = output.path
    report = IngestReport()
    keys = sorted(tasks)
    arrays = {}
    for key in keys:
        rows = tasks[key]
        arr = np.array([r[:2] for r in rows], dtype=np.int64).reshape(-1, 2)
        usage = np.array([r[2:-1] for r in rows], dtype=np.float64)
        quant = np.array([r[-1] for r in rows], dtype=np.float64) if all(r[-1] is not None for r in rows) else None
        arrays[key] = (arr, usage.reshape(len(rows), -1), quant)
    widths = {a[1].shape[1] for a in arrays.values()}
    if len(widths) > 1:  # some files with memory, some without: memory only where every file has it
        arrays = {k: (a, u[:, :2], q) for k, (a, u, q) in arrays.items()}
    memory = bool(arrays) and next(iter(arrays.values()))[1].shape[1] == 4
    quantiles = bool(arrays) and all(q is not None for _a, _u, q in arrays.values())
    if not quantiles:
        arrays = {k: (a, u, None) for k, (a, u, _q) in arrays.items()}
    n0 = sum(len(a[0]) for a in arrays.values())
    report.add_step("input", "instance_usage records read", len(keys), n0)
    if failing is not None:  # step 1: tasks with an EVICT, FAIL, KILL or LOST event
        dropped = [k for k in keys if k in failing]
        dropped_r = sum(len(arrays[k][0]) for k in dropped)
        keys = [k for k in keys if k not in failing]
        n0 -= dropped_r
        report.add_step("failing", "tasks with an EVICT, FAIL, KILL or LOST event dropped", len(keys), n0,
                        len(dropped), dropped_r)
    # step 2: records missing the sampled or the average usage
    fields = ("average_usage.cpus or random_sample_usage.cpus" if fmt == "google2019-tables"
              else "avg_cpu_usage or random_sample_cpu_usage")
    kept = {}
    dropped_r = 0
    for key in keys:
        arr, usage, quant = arrays[key]
        ok = ~np.isnan(usage[:, :2]).any(axis=1)
        dropped_r += int((~ok).sum())
        if ok.any():
            kept[key] = (arr[ok], usage[ok], None if quant is None else quant[ok])
    report.add_step(
        "missing", f"records missing {fields} dropped (tasks left with none)",
        len(kept), n0 - dropped_r, len(keys) - len(kept), dropped_r,
    )
    n2 = n0 - dropped_r
    # step 3: average above 1 -> the record's instantaneous value
    replaced = inst_above = 0
    for _key, (_arr, usage, _quant) in kept.items():
        above = usage[:, 1] > 1
        replaced += int(above.sum())
        inst_above += int((usage[:, 0] > 1).sum())
        usage[above, 1] = usage[above, 0]
    report.add_step("above_1", "averages above 1 replaced by the instantaneous value", len(kept), n2, 0, 0)
    # step 4: zero-usage tasks (on the stored float32 values, as for 2011)
    nonzero = {k: v for k, v in kept.items() if np.any(v[1][:, 0].astype(np.float32) > 0)}
    zero_r = sum(len(v[0]) for k, v in kept.items() if k not in nonzero)
    report.add_step(
        "zero_usage", "tasks with zero instantaneous usage in every record dropped",
        len(nonzero), n2 - zero_r, len(kept) - len(nonzero), zero_r,
    )
    n4 = n2 - zero_r
    # step 5: short tasks
    long_ = {k: v for k, v in nonzero.items() if len(v[0]) >= min_records}
    short_r = sum(len(v[0]) for k, v in nonzero.items() if k not in long_)
    report.add_step(
        "short", f"short tasks (fewer than {min_records} records after step 2) dropped",
        len(long_), n4 - short_r, len(nonzero) - len(long_), short_r,
    )
    out_keys = sorted(long_)
    lengths = np.array([len(long_[k][0]) for k in out_keys], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    duplicates = filled_in = missing = 0
    blocks = []
    for key in out_keys:
        arr, usage, quant = long_[key]
        order = np.lexsort((arr[:, 1], arr[:, 0]))  # by time, then machine
        arr, usage = arr[order], usage[order]
        quant = None if quant is None else quant[order]
        if len(arr) > 1:
            duplicates += int(np.all(arr[1:] == arr[:-1], axis=1).sum())
        if memory:  # a missing mean or maximum from the other; neither: 0 (counted)
            mem_avg, mem_max = usage[:, 2].copy(), usage[:, 3].copy()
            filled_in += int((np.isnan(mem_avg) ^ np.isnan(mem_max)).sum())
            missing += int((np.isnan(mem_avg) & np.isnan(mem_max)).sum())
            mem_avg = np.where(np.isnan(mem_avg), mem_max, mem_avg)
            mem_max = np.where(np.isnan(mem_max), mem_avg, mem_max)
            blocks.append((quant, arr[:, 0], usage[:, 0], usage[:, 1], np.nan_to_num(mem_avg), np.nan_to_num(mem_max)))
        else:
            blocks.append((quant, arr[:, 0], usage[:, 0], usage[:, 1]))
    report.counts.update(
        avg_above_1_replaced=replaced,
        inst_above_1=inst_above,
        duplicates=duplicates,
        bad_lines=counts["bad_lines"],
        min_records=int(min_records),
        on_bad_lines=on_bad_lines,
        files=len(files),
    )
    if memory:
        report.counts.update(memory_filled_in=filled_in, memory_missing=missing)
    if quantiles:  # records read, before the filters
        report.counts.update(distribution_absent=counts["distribution_absent"], max_below_p99=counts["max_below_p99"])
    task_id = np.array(out_keys, dtype=np.int64).reshape(-1, 2)
    if event_counts:
        report.counts.update(event_counts)
    if not out_keys:
        dropped = ", ".join(f"{st['step']} {st['tasks_dropped']:,}" for st in report.steps[1:] if st["tasks_dropped"])
        first = report.steps[0]
        raise InputError(f"{file_names(files)}: no task is left after the filters (read {first['tasks']:,} tasks, "
                         f"{first['records']:,} records; tasks dropped: {dropped or 'none'}); nothing written")
    source = dict(format=fmt, files=[str(p) for p in files] if len(files) <= 50 else f"{len(files)} files")
    output.check()
    with SeriesWriter(out, task_id=task_id, offsets=offsets, source=source, filters=report.to_dict(),
                      memory=memory, quantiles=quantiles) as writer:
        for k, (quant, start_time, inst, avg, *mem) in enumerate(blocks):
            writer.write_records(int(offsets[k]), inst, avg, start_time, *mem, cpu_quantiles=quant)
    return report
