"""kward's own files are input: `fsutil.open_own` / `read_own` refuse what is not a
regular file of this user, and never block or follow a link."""

from __future__ import annotations

import errno
import os

import pytest

from kward import fsutil


def test_reads_a_regular_file_up_to_its_limit(tmp_path):
    path = tmp_path / "core.json"
    path.write_bytes(b"[]")
    assert fsutil.read_own(path, 10) == b"[]"
    with pytest.raises(OSError) as info:
        fsutil.read_own(path, 1)
    assert info.value.errno == errno.EFBIG and "larger than 1 bytes" in str(info.value)
    assert str(path) in str(info.value)


def test_a_symlink_is_refused_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_bytes(b"secret")
    link = tmp_path / "core.json"
    link.symlink_to(target)
    with pytest.raises(OSError) as info:
        fsutil.read_own(link, 100)
    assert info.value.errno == errno.ELOOP and "symbolic link" in str(info.value)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="symbolic link"):
        fsutil.read_own(zero, 100)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "core.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        fsutil.read_own(fifo, 100)  # no writer: a blocking open would never return
    with pytest.raises(OSError, match="not a regular file"):
        os.close(fsutil.open_own(fifo, fsutil.APPEND_OWN))  # no reader: ENXIO, not a wait
    lock = tmp_path / "lock"
    os.mkfifo(lock)
    with pytest.raises(OSError, match="not a regular file"):
        with fsutil.file_lock(lock):
            pass


def test_devices_and_directories_are_refused(tmp_path):
    with pytest.raises(OSError, match="not a regular file"):
        fsutil.read_own("/dev/zero", 100)
    with pytest.raises(OSError):
        fsutil.read_own(tmp_path, 100)


def test_a_missing_file_is_file_not_found_and_append_creates_it_private(tmp_path):
    with pytest.raises(FileNotFoundError):
        fsutil.read_own(tmp_path / "nope", 100)
    path = tmp_path / "events.jsonl"
    fd = fsutil.open_own(path, fsutil.APPEND_OWN)
    try:
        os.write(fd, b"x\n")
        assert os.get_blocking(fd)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"x\n" and (path.stat().st_mode & 0o777) == 0o600
