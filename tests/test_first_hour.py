"""A newcomer's first hour: shipped configs, version, help, dry runs, the
terminal display, paths relative to the config, the summary table."""

from __future__ import annotations

import io
import re
import typing
from pathlib import Path

import numba
import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from colosim import __version__
from colosim import cli as cli_module
from colosim.cli import app
from colosim.config import load_config
from colosim.runner.reproduce import SCALES, load_configs
from colosim.runner.sweep import default_output
from colosim.shipped import PAPER_CONFIGS, configs_dir, describe, shipped
from colosim.terminal import STEP_LINE, Display

from .conftest import write_config

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def invoke(*args, **kwargs):
    return runner.invoke(app, list(args), **kwargs)


def commands():
    """Every leaf command of the app: (words, click command)."""
    found, todo = [], [((), typer.main.get_command(app))]
    while todo:
        words, group = todo.pop()
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                todo.append(((*words, name), command))
            else:
                found.append(((*words, name), command))
    return sorted(found, key=lambda c: c[0])


# ---------------------------------------------------------------- configs ---

def test_every_config_of_the_repository_is_shipped_and_loads():
    names = shipped()
    on_disk = {p.relative_to(ROOT / "configs").with_suffix("").as_posix() for p in (ROOT / "configs").rglob("*.toml")}
    assert set(names) == on_disk and "quickstart" in names
    assert set(PAPER_CONFIGS) <= set(names)
    for name, path in names.items():
        load_config(path, grid_required=not name.startswith("plan/"))
        assert describe(path), name  # each says what it is


def test_the_package_lists_every_subpackage_and_ships_the_configs():
    from colosim.config import tomllib

    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "colosim").rglob("__init__.py")}
    folders = [p.name for p in (ROOT / "configs").iterdir() if p.is_dir()]
    shipped_dirs = {"colosim.configs", *(f"colosim.configs.{name}" for name in folders)}
    assert set(setup["packages"]) == packages | shipped_dirs
    assert setup["package-dir"]["colosim.configs"] == "configs"


def test_configs_list_and_copy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = invoke("configs", "list")
    assert res.exit_code == 0 and "quickstart" in res.stdout and "beyond/fleet" in res.stdout
    assert invoke("configs", "copy", "quickstart").exit_code == 0
    assert (tmp_path / "quickstart.toml").read_text() == (configs_dir() / "quickstart.toml").read_text()
    (tmp_path / "sub").mkdir()
    assert invoke("configs", "copy", "beyond/fleet.toml", "sub").exit_code == 0
    assert (tmp_path / "sub" / "fleet.toml").is_file()
    # never replaced without --force; an unknown name is one line naming it
    (tmp_path / "quickstart.toml").write_text("# mine\n")
    res = invoke("configs", "copy", "quickstart")
    assert res.exit_code == 2 and "exists" in res.stderr and "--force" in res.stderr
    assert (tmp_path / "quickstart.toml").read_text() == "# mine\n"
    assert invoke("configs", "copy", "quickstart", "--force").exit_code == 0
    assert (tmp_path / "quickstart.toml").read_text() != "# mine\n"
    res = invoke("configs", "copy", "no-such")
    assert res.exit_code == 2 and "'no-such'" in res.stderr and len(res.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quickstart.toml", "sub"]  # no temporaries left


def test_reproduce_finds_the_shipped_configs_from_any_directory(tmp_path, monkeypatch):
    import colosim.runner.reproduce as reproduce_module

    monkeypatch.chdir(tmp_path)
    configs = load_configs(configs_dir(), "tiny")
    assert {c.path.stem for c in configs} >= set(PAPER_CONFIGS)
    seen = {}

    def fake(out, **kwargs):
        seen.update(kwargs)
        return Path(out) / "REPORT.md"
    monkeypatch.setattr(reproduce_module, "reproduce", fake)
    assert invoke("reproduce", "--out", "rep", "--scale", "tiny").exit_code == 0
    assert Path(seen["configs_dir"]) == configs_dir() and seen["scale"] == "tiny"
    assert invoke("reproduce", "--out", "rep", "--configs", "mine").exit_code == 0
    assert seen["configs_dir"] == Path("mine")


# ------------------------------------------------------------------- help ---

def test_version():
    res = invoke("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"colosim {__version__}"


@pytest.mark.parametrize("words", [c[0] for c in commands()], ids=" ".join)
def test_help_wraps_at_80_columns_with_an_example_and_no_bool_metavar(words):
    res = invoke(*words, "--help", terminal_width=80, env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert "<bool>" not in res.stdout
    assert re.search(r"^  Examples?:$", res.stdout, re.MULTILINE), res.stdout
    assert "colosim " + " ".join(words) in res.stdout  # the example runs this command


def test_options_of_fixed_values_are_choices():
    from colosim.runner.backends import BACKENDS
    from colosim.sources.ingest import ON_BAD_LINES
    from colosim.sources.realize import SAMPLINGS

    assert typing.get_args(cli_module.Scale) == tuple(SCALES)
    assert typing.get_args(cli_module.Backend) == BACKENDS
    assert typing.get_args(cli_module.Sampling) == SAMPLINGS
    assert typing.get_args(cli_module.OnBadLines) == ON_BAD_LINES
    res = invoke("reproduce", "--out", "x", "--scale", "huge")
    assert res.exit_code == 2 and "--scale" in res.stderr and "'paper'" in res.stderr
    res = invoke("generate", "--out", "x.h5", "--sampling", "sideways")
    assert res.exit_code == 2 and "--sampling" in res.stderr and "'time-aligned'" in res.stderr


def _readme_table() -> dict[tuple[str, ...], set[str]]:
    """The README's command table: each row's command words and the options it names."""
    table = {}
    for line in (ROOT / "README.md").read_text().splitlines():
        m = re.match(r"\| `colosim ((?:[a-z][a-z0-9-]* ?)+)(.*?)` \|", line)
        if m:
            table[tuple(m.group(1).split())] = set(re.findall(r"--[a-z][a-z-]*", m.group(2)))
    return table


def test_the_readme_command_table_names_every_command_and_option():
    table = _readme_table()
    real = {words: {o for p in c.params if p.param_type_name == "option" for o in p.opts if o.startswith("--")}
            - {"--help"} for words, c in commands()}
    assert set(table) == set(real)
    for words, options in real.items():
        assert table[words] == options, (words, options ^ table[words])


def test_the_readme_table_check_can_fail(monkeypatch):
    real = _readme_table()
    assert ("sweep",) in real and "--dry-run" in real[("sweep",)]
    assert real[("sweep",)] != real[("sweep",)] - {"--dry-run"}  # a missing option is a difference


# --------------------------------------------------------------- dry run ---

def test_dry_run_says_what_a_sweep_would_do_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "qs.toml").write_text((configs_dir() / "quickstart.toml").read_text())
    before = sorted(tmp_path.rglob("*"))
    res = invoke("sweep", "qs.toml", "--dry-run")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "7 points x 20 instances of 200 tasks = 140 packings" in out
    assert "1,000 realizations per task" in out and "would be made" in out and "40.0 MB" in out
    assert "free there" in out and "kernels:" in out and "estimated time: about" in out
    assert f"results: {Path('results') / 'qs.csv'}" in out
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, not even the cache folder


def test_dry_run_of_an_existing_store_and_bad_input(tmp_path, small_store):
    config = write_config(tmp_path, 'estimator = ["gpa:0.01", "av:1"]\ncapacity = [1.0, 2.0]', count=3, tasks=10)
    res = invoke("sweep", str(config), "--dry-run")
    assert res.exit_code == 0, res.output
    assert "4 points x 3 instances" in res.stdout and ", exists" in res.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text(config.read_text().replace("count = 3", "count = 0"))
    res = invoke("sweep", str(bad), "--dry-run")
    assert res.exit_code == 2 and "instances.count" in res.stderr


def test_the_estimate_grows_with_the_work():
    from colosim.runner.dry_run import estimate_seconds

    base = estimate_seconds(4480, 50, 1000, 10_000)
    assert 80 < base < 110  # the paper grid's measured ~92-105 s on 2 cores, which the fit reproduces
    assert estimate_seconds(4480, 100, 1000, 10_000) == pytest.approx(2 * base)
    assert estimate_seconds(10, 50, 1000, 10_000) < base and estimate_seconds(4480, 50, 2000, 10_000) > base


# ------------------------------------------------------------ paths -------

def test_output_path_is_relative_to_the_config(tmp_path, monkeypatch):
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "c.toml").write_text((configs_dir() / "quickstart.toml").read_text() + '\n[output]\npath = "out/r.csv"\n')
    monkeypatch.chdir(tmp_path)
    assert default_output(load_config(folder / "c.toml")) == folder / "out" / "r.csv"
    assert default_output(load_config(configs_dir() / "quickstart.toml")) == Path("results") / "quickstart.csv"


def test_a_sweep_writes_its_output_beside_the_config(tmp_path, small_store, monkeypatch):
    config = write_config(tmp_path, 'estimator = ["av:1"]', count=2, tasks=10)
    config.write_text(config.read_text() + '\n[output]\npath = "res/out.csv"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = invoke("sweep", str(config))
    assert res.exit_code == 0, res.output
    assert (tmp_path / "res" / "out.csv").is_file() and not any(elsewhere.iterdir())
    head = res.stdout
    for column in ("instances", "machines (m_abs)", "m (normalized)", "q_max", "q resolution"):
        assert column in head, head


# ---------------------------------------------------------------- display ---

def _display(terminal: bool):
    buffer = io.StringIO()
    return Display(Console(file=buffer, force_terminal=terminal, width=100)), buffer


def test_without_a_terminal_each_finished_step_is_one_line_with_its_time():
    display, buffer = _display(terminal=False)
    with display:
        advance = display("sweep quick.toml", 3)
        advance(2)
        display.log("a note")
        assert buffer.getvalue() == "a note\n"  # no bar, no partial line
        advance(1)
        shards = display("task_usage (2 shards)", 2_500_000, unit="B")
        shards(2_500_000)
        display("plan: search step 1", 10)(4)  # ends short: its line comes at the end
    lines = buffer.getvalue().splitlines()
    assert lines[0] == "a note" and len(lines) == 4
    assert re.fullmatch(r"sweep quick\.toml: 3 in [0-9]+\.[0-9] s", lines[1])
    assert re.fullmatch(r"task_usage \(2 shards\): 2\.5 MB in [0-9]+\.[0-9] s", lines[2])
    assert re.fullmatch(r"plan: search step 1: 4/10 in [0-9]+\.[0-9] s", lines[3])
    assert all(STEP_LINE.fullmatch(line) for line in lines[1:]) and not STEP_LINE.fullmatch("a note")


def test_on_a_terminal_a_bar_closes_when_its_step_ends():
    display, buffer = _display(terminal=True)
    with display:
        advance = display("realizing x.h5", 2)
        assert display.bars is not None and len(display.bars.tasks) == 1
        advance(2)
        assert display.bars is None  # closed, leaving its line
        other = display("sweep c.toml", 1)
        assert display.bars is not None
        other(1)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())  # without the terminal's controls
    drawn = re.split(r"[\r\n]", text)  # each drawing of the display's line, and each line printed above it
    assert any(re.fullmatch(r"realizing x\.h5: 2 in [0-9.]+ s", line) for line in drawn), text
    assert any(re.fullmatch(r"sweep c\.toml: 1 in [0-9.]+ s", line) for line in drawn), text


def test_an_error_leaves_no_bar_and_no_step_line():
    display, buffer = _display(terminal=False)
    with pytest.raises(RuntimeError), display:
        display("sweep c.toml", 5)(2)
        raise RuntimeError("boom")
    assert buffer.getvalue() == ""


def test_a_compilation_is_announced_once_and_timed():
    display, buffer = _display(terminal=False)

    def kernel(a, b):  # a fresh function: compiled here, never cached
        return a * b + 1

    with display:
        numba.njit(kernel)(2, 3)
        numba.njit(kernel)(2.0, 3.0)
    text = buffer.getvalue()
    assert text.count("compiling kernels (once") == 1
    assert re.search(r"compiled kernels in [0-9]+ s \(cached for later runs\)", text)
    quiet, buffer = _display(terminal=False)
    compiled = numba.njit(kernel)
    compiled(2, 3)
    with quiet:
        compiled(4, 5)  # already compiled: nothing to say
    assert buffer.getvalue() == ""
