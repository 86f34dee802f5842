"""The compiled kernels' cache: named after the contents of every file
with kernels, so that an edit to a kernel that others call compiles those
afresh instead of loading their old machine code (Numba checks a cached
function against its own file only)."""

import os
import shutil
import time
from pathlib import Path

import numba
import pytest

import colosim
from colosim import _jit
from colosim.kernels import stats

PACKAGE = Path(colosim.__file__).resolve().parent


def test_every_module_with_kernels_is_in_the_digest():
    with_kernels = {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")
                    if "_jit import" in p.read_text() or p.name == "_jit.py"}
    covered = {p.relative_to(PACKAGE).as_posix() for pattern in _jit.KERNEL_SOURCES for p in PACKAGE.glob(pattern)}
    assert with_kernels, "no module imports _jit: the scan is wrong"
    assert with_kernels <= covered, f"modules with kernels outside KERNEL_SOURCES: {sorted(with_kernels - covered)}"


def _copy_sources(dst: Path) -> None:
    for pattern in (*_jit.KERNEL_SOURCES, "cli.py"):
        for p in PACKAGE.glob(pattern):
            target = dst / p.relative_to(PACKAGE)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)


def test_digest_follows_every_kernel_file_and_nothing_else(tmp_path):
    _copy_sources(tmp_path)
    first = _jit.sources_digest(tmp_path)
    assert first == _jit.sources_digest(PACKAGE)
    cli = tmp_path / "cli.py"
    cli.write_text(cli.read_text() + "\n# not a kernel\n")
    assert _jit.sources_digest(tmp_path) == first
    for name in ("kernels/_sort.py", "kernels/stats.py", "io/_checks.py", "_jit.py"):
        path = tmp_path / name
        text = path.read_text()
        path.write_text(text + "\n# edited\n")
        assert _jit.sources_digest(tmp_path) != first, name
        path.write_text(text)
    assert _jit.sources_digest(tmp_path) == first


def test_kernels_are_cached_in_the_folder_of_their_digest():
    folder = _jit.cache_dir()
    assert folder is not None and Path(folder).name == f"numba-{_jit.sources_digest()}"
    assert Path(stats.task_statistics.stats.cache_path).resolve().is_relative_to(Path(folder).resolve())


def test_a_users_numba_cache_dir_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    folder = Path(_jit.cache_dir())
    assert folder == tmp_path / "colosim" / f"numba-{_jit.sources_digest()}" and folder.is_dir()


def test_only_folders_of_other_contents_unused_for_a_day_are_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    base = tmp_path / "colosim"
    old, recent, other = base / "numba-0000000000000000", base / "numba-1111111111111111", base / "keep-me"
    for d in (old, recent, other):
        d.mkdir(parents=True)
        (d / "f.nbi").write_bytes(b"")
    day_ago = time.time() - 2 * 86400
    os.utime(old, (day_ago, day_ago))
    os.utime(other, (day_ago, day_ago))
    current = Path(_jit.cache_dir())
    assert not old.exists()
    assert recent.is_dir() and other.is_dir() and current.is_dir()


def test_decorating_restores_numba_cache_dir_and_caches_in_the_digest_folder(monkeypatch):
    monkeypatch.setattr(numba.config, "CACHE_DIR", "a user's choice")
    f = _jit.jit(lambda a: a + 1)  # decorated, not compiled
    assert numba.config.CACHE_DIR == "a user's choice"
    assert Path(f.stats.cache_path).resolve().is_relative_to(Path(_jit._CACHE_DIR).resolve())
    g = _jit.pjit(inline="never")(lambda a: a)
    assert numba.config.CACHE_DIR == "a user's choice"
    assert Path(g.stats.cache_path).resolve().is_relative_to(Path(_jit._CACHE_DIR).resolve())


def test_a_signature_is_refused():
    with pytest.raises(TypeError, match="by keyword"):
        _jit.jit("int64(int64)")


def test_no_writable_folder_leaves_numba_its_own_choice(tmp_path, monkeypatch):
    monkeypatch.setenv("COLOSIM_CACHE", str(tmp_path / "colosim-cache"))

    def refuse(*args, **kwargs):
        raise PermissionError("read-only")

    monkeypatch.setattr(_jit.tempfile, "TemporaryFile", refuse)
    assert _jit.cache_dir() is None
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    assert _jit.cache_dir() is None
