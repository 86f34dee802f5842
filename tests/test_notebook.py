"""The example notebook runs: each code cell, in order, in one namespace
(as a kernel would), in a scratch folder."""

import json
from pathlib import Path

import matplotlib

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "examples" / "quickstart.ipynb"


def test_the_quickstart_notebook_runs(tmp_path, monkeypatch):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    cells = [c for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    assert len(cells) >= 5
    namespace: dict = {"__name__": "__main__"}
    for i, cell in enumerate(cells):
        exec(compile("".join(cell["source"]), f"{NOTEBOOK.name}[cell {i}]", "exec"), namespace)
    work = tmp_path / "colosim-quickstart"
    assert (work / "store.h5").is_file() and (work / "sweep.csv").is_file()
    assert (work / "plan" / "plan.csv").is_file() and (work / "plan" / "frontier.png").stat().st_size > 10_000
    assert (work / "figures" / "fig08_m_vs_q_gpa_av_perc.png").stat().st_size > 10_000
    assert len(namespace["sweep"].summary) == 6 and namespace["result"].families
    assert all(cell["outputs"] == [] and cell["execution_count"] is None for cell in cells)  # stored clean
