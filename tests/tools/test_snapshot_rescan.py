"""`snapshot.rescan` driven by a real `DirWatcher` finds what two full walks find, and leaves
the snapshot as a full walk would: random batches of file and directory operations
(create, write, delete, chmod, renames across directories, directories made, removed,
moved and replaced by files, skipped trees) on a real tree, compared after each batch;
and its cap."""

import os
import random
import shutil
import sys
from pathlib import Path

import pytest

from kward.tools import snapshot
from kward.tools.fswatch import DirWatcher

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux only")


def files_and_dirs(root: Path):
    files, dirs = [], []
    for path, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in snapshot.SKIP_DIRS]
        dirs += [Path(path, d) for d in subdirs]
        files += [Path(path, n) for n in names]
    return files, dirs


def operate(rng: random.Random, root: Path, step: int) -> None:
    files, dirs = files_and_dirs(root)
    pick = rng.random()
    where = rng.choice([root, *dirs])
    if pick < 0.25 or not files:
        (where / f"f{step}").write_text("x" * rng.randint(0, 5))
    elif pick < 0.4:
        with open(rng.choice(files), "a") as f:
            f.write("more")
    elif pick < 0.5:
        rng.choice(files).unlink()
    elif pick < 0.55:
        os.chmod(rng.choice(files), rng.choice([0o600, 0o755]))
    elif pick < 0.65:
        os.rename(rng.choice(files), where / f"moved{step}")
    elif pick < 0.75:
        (where / f"d{step}" / "e").mkdir(parents=True)
        (where / f"d{step}" / "e" / "inner").write_text("i")
    elif pick < 0.8 and dirs:
        shutil.rmtree(rng.choice(dirs))
    elif pick < 0.87 and dirs:
        source = rng.choice(dirs)
        target = rng.choice([root, *[d for d in dirs if not str(d).startswith(str(source))]])
        os.rename(source, target / f"r{step}")
    elif pick < 0.93 and dirs:
        victim = rng.choice(dirs)
        shutil.rmtree(victim)
        victim.write_text("now a file")
    else:
        (where / "node_modules" / f"p{step}").mkdir(parents=True, exist_ok=True)
        (where / "node_modules" / f"p{step}" / "i.js").write_text("")


@pytest.mark.parametrize("seed", range(6))
def test_rescan_finds_what_two_walks_find(tmp_path, seed):
    rng = random.Random(seed)
    root = tmp_path / "ws"
    for d in ("a/b", "a/c", "d"):
        (root / d).mkdir(parents=True)
        (root / d / "f").write_text(d)
    kept = snapshot.take(str(root))
    watcher = DirWatcher(str(root), skip=lambda parent, name: name in snapshot.SKIP_DIRS)
    try:
        for batch in range(12):
            before = snapshot.take(str(root))
            for i in range(rng.randint(1, 6)):
                operate(rng, root, batch * 10 + i)
            act = watcher.collect()
            assert not act.unknown
            found = snapshot.rescan(str(root), kept, act.dirty, act.new_dirs)
            after = snapshot.take(str(root))
            assert found == snapshot.diff(before, after), (seed, batch)
            assert kept.dirs == after.dirs and kept.count == after.count
            assert {k: v for k, v in kept.subdirs.items() if v} == {k: v for k, v in after.subdirs.items() if v}
    finally:
        watcher.close()


def test_rescan_past_the_cap_says_capped(tmp_path):
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    kept = snapshot.take(str(root), max_entries=10)
    for i in range(12):
        (root / "a" / f"f{i}").write_text("")
    assert snapshot.rescan(str(root), kept, ["a/"], max_entries=10) == [] and kept.capped


def test_rescan_never_follows_a_symlink_swapped_in(tmp_path):
    root = tmp_path / "ws"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f").write_text("f")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    kept = snapshot.take(str(root))
    shutil.rmtree(root / "a")
    os.symlink(outside, root / "a")
    assert snapshot.rescan(str(root), kept, ["", "a/"]) == [("a", "added"), ("a/f", "deleted")]
    assert "a/" not in kept.dirs
