"""The shipped configs (the paper's Section 5 experiments, the newer
studies under ``beyond/``, the plan's base case and the quickstart), found
wherever colosim is installed: inside the package (``colosim/configs/`` of
a wheel) or, from a source checkout, the repository's ``configs/`` folder.

``colosim configs list`` prints them; ``colosim configs copy NAME [DEST]``
writes one where it can be edited, never replacing a file without
``--force``.
"""

from __future__ import annotations

from pathlib import Path

from .errors import InputError

#: The configs that are the paper's own experiments (Section 5), by name.
PAPER_CONFIGS = ("baseline", "capacity", "clairvoyance", "firstfit_vs_bestfit", "inst_vs_avg", "rebalancing")


def configs_dir() -> Path:
    """The folder of the shipped configs."""
    here = Path(__file__).resolve().parent
    for folder in (here / "configs", here.parent / "configs"):
        if (folder / "clairvoyance.toml").is_file():
            return folder
    raise InputError("the shipped configs were not found (a broken installation: reinstall colosim)")


def shipped() -> dict[str, Path]:
    """Every shipped config by name: ``clairvoyance``, ``beyond/fleet``, …
    (its path below :func:`configs_dir`, without ``.toml``)."""
    root = configs_dir()
    return {p.relative_to(root).with_suffix("").as_posix(): p for p in sorted(root.rglob("*.toml"))}


def describe(path: Path, width: int = 90) -> str:
    """A config's opening comment, to the end of its first sentence and at
    most ``width`` characters: what the config is."""
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        words.extend(line.lstrip("#").split())
    text = " ".join(words)
    if ". " in text:
        text = text[: text.index(". ") + 1]
    if len(text) > width:
        text = text[: width - 1].rsplit(" ", 1)[0] + "…"
    return text


def find(name: str) -> Path:
    """The shipped config ``name`` (``clairvoyance``, ``clairvoyance.toml``
    or ``beyond/fleet``)."""
    configs = shipped()
    key = name[:-5] if name.endswith(".toml") else name
    if key not in configs:
        raise InputError(f"{name!r}: no shipped config of that name (see `colosim configs list`)")
    return configs[key]


def copy(name: str, dest: Path | None, *, force: bool = False) -> Path:
    """Write shipped config ``name`` to ``dest`` (a file, or a folder to
    put it in; default: the working directory), atomically."""
    from .io.atomic import write_text_atomic

    source = find(name)
    target = Path(dest) if dest is not None else Path(source.name)
    if target.is_dir():
        target = target / source.name
    if target.exists() or target.is_symlink():
        if not force:
            raise InputError(f"{target}: exists (use --force to replace it)")
        if not target.is_file():
            raise InputError(f"{target}: not a regular file, not replaced")
    if not target.parent.is_dir():
        raise InputError(f"{target.parent}: no such folder")
    write_text_atomic(target, source.read_text(encoding="utf-8"))
    return target
