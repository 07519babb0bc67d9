"""`filesystem_sync`: when one `syncfs` may stand in for `fdatasync`, read from the kernel's release and the mounts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkalite.storage import filesystem_sync
from kafkalite.storage.filesystem_sync import filesystem_types, kernel_version


@pytest.mark.parametrize(
    ("release", "version"),
    [
        ("6.1.0-18-amd64", (6, 1)),
        ("5.10.0", (5, 10)),
        ("4.19.0-xyz", (4, 19)),
        ("6.8.0-1012-aws", (6, 8)),
        ("5.15.153.1-microsoft-standard-WSL2", (5, 15)),
        ("5.17-rc1", (5, 17)),
        ("5.4_custom2", (5, 4)),
        ("5.1rc7", (5, 1)),
        ("3.10.0-1160.el7.x86_64", (3, 10)),
        ("garbage", (0, 0)),
    ],
)
def test_the_kernel_version_is_the_leading_major_and_minor(release: str, version: tuple[int, int]) -> None:
    assert kernel_version(release) == version


def test_the_release_before_5_17_is_not_enough() -> None:
    assert kernel_version("5.16.20") < filesystem_sync.SYNCFS_REPORTS_ALL_ERRORS_SINCE <= kernel_version("5.17.0")


MOUNTINFO = """\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid shared:2 - proc proc rw
40 22 0:45 / /mnt/c rw,noatime - 9p drvfs rw,dirsync,aname=drvfs
41 22 0:46 / /srv/data rw,relatime shared:7 opt:1 - xfs /dev/sdb1 rw
42 22 254:0 /home /home rw - ext4 /dev/vda rw
43 22 broken line without a separator
"""


def test_mount_types_are_read_by_device() -> None:
    assert filesystem_types(MOUNTINFO) == {(254, 0): "ext4", (0, 21): "proc", (0, 45): "9p", (0, 46): "xfs"}


def test_only_local_block_filesystems_are_synced_whole() -> None:
    assert {"ext4", "xfs", "btrfs", "f2fs"} == filesystem_sync.SYNCFS_FILESYSTEMS
    assert "9p" not in filesystem_sync.SYNCFS_FILESYSTEMS


def test_a_data_directory_answers_its_device_exactly_when_its_mount_is_of_a_listed_type(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        device = filesystem_sync.device_for_syncfs(fd)
        if not filesystem_sync.available():
            assert device is None
            return
        st_dev = os.fstat(fd).st_dev
        kind = filesystem_types(Path(filesystem_sync.MOUNTINFO).read_text()).get((os.major(st_dev), os.minor(st_dev)))
        assert device == (st_dev if kind in filesystem_sync.SYNCFS_FILESYSTEMS else None)
    finally:
        os.close(fd)


@pytest.mark.skipif(not filesystem_sync.available(), reason="Linux 5.17+ with syncfs and sync_file_range")
def test_the_calls_succeed_on_a_healthy_file(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        os.write(fd, b"x" * 10_000)
        filesystem_sync.sync_filesystem(fd)
        filesystem_sync.check_written(fd)
        with pytest.raises(OSError, match="Bad file descriptor"):
            filesystem_sync.sync_filesystem(10_000)
    finally:
        os.close(fd)
