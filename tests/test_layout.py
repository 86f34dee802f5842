"""The package's layout holds: the code is clean under the project's ruff
configuration, the lowest layers import nothing above them, and no module
imports another that imports it back."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "colosim"
LOW = ("kernels", "io")
BASE = ("_jit", "errors", "_version")


def imports():
    """Module -> the colosim modules it imports (at any depth of its code)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = path.name == "__init__.py"
        if package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, package)
    edges = {}
    for name, (path, package) in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if package else name.split(".")[:-1]
                    base = base[: len(base) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [module] + [f"{module}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name and t != "colosim":
                    found.add(t)
        edges[name] = found
    return edges


def test_kernels_and_io_import_nothing_above_them():
    bad = [f"{m} -> {t}" for m, ts in imports().items() if len(m.split(".")) > 1 and m.split(".")[1] in LOW
           for t in ts if not (t.split(".")[1] == m.split(".")[1] or t.split(".")[1] in BASE)]
    assert bad == []


def test_no_import_cycle():
    edges = imports()
    state = {}

    def visit(m, path):
        state[m] = "open"
        for t in edges[m]:
            assert state.get(t) != "open", " -> ".join(path + [t])
            if t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in edges:
        if m not in state:
            visit(m, [m])


def test_code_is_clean_under_ruff():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (pip install -e '.[test]' installs it)")
    done = subprocess.run([ruff, "check", "colosim", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_cli_asks_glibc_to_keep_freed_memory_with_parameters_it_accepts():
    """mallopt answers 0 to a parameter or value it refuses: on glibc both
    settings must be taken; elsewhere the call says it did nothing."""
    import platform
    import sys

    from colosim.resources import keep_freed_memory

    applied = keep_freed_memory()
    assert applied is (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc")
