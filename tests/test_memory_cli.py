"""CPU and memory from the command line (docs/memory.md): config keys, bad
input with exit 2 naming the culprit and nothing written."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from colosim.cli import app

from .conftest import write_config

runner = CliRunner()


@pytest.mark.parametrize("grid, culprit", [
    ("memory_capacity = [0.0]", "grid.memory_capacity value 0.0: memory_capacity must be > 0"),
    ("memory_capacity = [-1]", "grid.memory_capacity value -1: memory_capacity must be > 0"),
    ('memory_capacity = ["big"]', "grid.memory_capacity value 'big' must be a number"),
    ('memory_capacity = [1.0]\nmemory_estimator = ["perc:120"]', "grid.memory_estimator value 'perc:120'"),
    ('memory_capacity = [1.0]\nmemory_estimator = ["gpa-cal:0.01"]', "a calibrated estimator searches CPU's rho"),
    ('memory_capacity = [1.0]\nfit_rule = ["sum"]', "grid.fit_rule value 'sum': fit_rule must be one of cpu, l2, dot"),
    ('capacity = ["1x0.5:1,2:1"]', "either every machine type is a shape CPUxMEMORY or none is"),
    ('capacity = ["1x-1:1"]', "memory capacity must be > 0"),
    ('capacity = ["1x1:1"]\nmemory_capacity = [0.5]', "give memory either in the shapes or as memory_capacity"),
    ("memory_capacity = [0.5]", "has no memory realizations"),  # the store is CPU only
])
def test_bad_memory_config_exits_2_naming_it(tmp_path, small_store, grid, culprit):
    config = write_config(tmp_path, grid)
    out = tmp_path / "r.csv"
    res = runner.invoke(app, ["sweep", str(config), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert culprit in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not out.exists() and not list(tmp_path.glob("r.csv*"))


def test_a_memory_grid_sets_the_source_to_realize_memory(tmp_path):
    from colosim.config import load_config

    path = tmp_path / "m.toml"
    path.write_text('[source]\nkind = "synthetic"\ntasks = 100\nrealizations = 50\nseed = 1\n\n'
                    '[instances]\ncount = 2\ntasks = 10\nseed = 1\n\n[grid]\ncapacity = ["0.5x0.25:1"]\n')
    assert load_config(path).source.memory
    path.write_text(path.read_text().replace('capacity = ["0.5x0.25:1"]', 'capacity = [1.0]'))
    assert not load_config(path).source.memory
    path.write_text(path.read_text().replace("seed = 1\n\n[instances]", 'seed = 1\nmemory = "yes"\n\n[instances]'))
    res = runner.invoke(app, ["sweep", str(path), "--dry-run"])
    assert res.exit_code == 2 and "source.memory must be true or false" in res.output
