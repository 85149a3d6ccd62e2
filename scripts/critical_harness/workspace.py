"""The temporary copies: one snapshot, a copy per job, cleanup, and stale copies of dead runs."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

# .venvs: scripts/test_pythons.sh's venvs, one per Python, hundreds of megabytes each.
ROOT_EXCLUDES = frozenset({".git", ".venv", ".venvs", "venv", ".tox", ".nox", "mutants"})
CACHE_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"})


def _copy_ignore(root: Path) -> Callable[[str, list[str]], set[str]]:
    root = root.resolve()

    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = {name for name in names if name in CACHE_DIRS}
        if Path(directory).resolve() == root:
            skip |= {name for name in names if name in ROOT_EXCLUDES}
        return skip

    return ignore


def make_copy(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest, ignore=_copy_ignore(root), symlinks=True)
    return dest


COPIES_PREFIX = "critical-mutants-"
OWNER_FILE = "owner"


def identity(pid: int) -> str | None:
    """pid and kernel start time: a pid the kernel gave to a later process does not match."""
    try:
        return f"{pid} {Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        return None


def remove_stale_copies(where: Path) -> list[Path]:
    """Remove the temporary copies of runs whose process is gone (a SIGKILLed harness leaves its own)."""
    removed = []
    for folder in where.glob(f"{COPIES_PREFIX}*"):
        owner = folder / OWNER_FILE
        try:
            recorded = owner.read_text(encoding="utf-8").strip()
            pid = int(recorded.split()[0])
        except (OSError, ValueError, IndexError):
            # no owner written yet: a run between making the folder and naming itself, unless long dead
            with contextlib.suppress(OSError):
                if time.time() - folder.stat().st_mtime > 3600:
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(folder)
            continue
        if not _still_running(pid, recorded):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _still_running(pid: int, recorded: str) -> bool:
    if Path("/proc/self/stat").is_file():
        return identity(pid) == recorded
    try:  # no /proc: a live pid is taken as the owner
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_tree(tmp: Path) -> None:
    # a child killed a moment ago may still be closing files in it: try again briefly
    for _ in range(50):
        shutil.rmtree(tmp, ignore_errors=True)
        if not tmp.exists():
            return
        time.sleep(0.1)
