"""What the broker keeps on disk besides the partition logs: cluster identity, topic metadata, producer-id blocks.

Layout of `data_dir`, beside Kafka-format partition directories `<topic>-<partition>/`::

    meta.properties                  cluster.id and node.id, as Kafka writes them
    _kafkalite/topics/<topic>.json   {"name", "topic_id", "partitions", "internal", "config"}
    _kafkalite/producer-ids          the end of the block of idempotent-producer ids handed out (decimal)
    <topic>-<n>.<id>-delete/         a deleted topic's partition, renamed first, removed in the background

Every file is replaced atomically (write temp, fsync, rename, fsync the directory), so a crash leaves either the old
or the new version, never a torn one. Calls block on the disk: the broker runs them in a worker thread.
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafkalite.storage import read_file, write_atomically

logger = logging.getLogger("kafkalite.broker")

META_DIR = "_kafkalite"
DELETED_SUFFIX = "-delete"


def new_cluster_id() -> str:
    """22 characters of URL-safe base64, as Kafka's cluster ids are."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class MetadataStore:
    """The broker's small files under one data directory."""

    def __init__(self, data_dir: Path, *, fsync: bool) -> None:
        self.data_dir = data_dir
        self._fsync = fsync
        self._topics_dir = data_dir / META_DIR / "topics"
        self._producer_ids = data_dir / META_DIR / "producer-ids"

    def prepare(self) -> None:
        """Create the layout and finish removing topics deleted before a crash."""
        self._topics_dir.mkdir(parents=True, exist_ok=True)
        for leftover in self.data_dir.glob(f"*{DELETED_SUFFIX}"):
            logger.info("Removing the remains of a deleted topic: %s", leftover.name)
            shutil.rmtree(leftover, ignore_errors=True)

    def cluster_id(self, node_id: int) -> str:
        """The cluster id from meta.properties, written with a new id on first start."""
        path = self.data_dir / "meta.properties"
        properties = read_file(path)
        if properties is not None:
            for line in properties.decode().splitlines():
                if line.startswith("cluster.id="):
                    return line.split("=", 1)[1].strip()
        cluster_id = new_cluster_id()
        write_atomically(path, f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n".encode(), fsync=self._fsync)
        return cluster_id

    def topic_documents(self) -> Iterator[dict[str, Any]]:
        """Every saved topic's document; an unreadable file is logged and skipped."""
        for path in sorted(self._topics_dir.glob("*.json")):
            try:
                document = json.loads(read_file(path) or b"{}")
                if not isinstance(document, dict) or "name" not in document:
                    raise ValueError("not a topic document")
            except ValueError as exc:
                logger.error("Skipping unreadable topic metadata %s: %s", path, exc)
                continue
            yield document

    def save_topic(self, document: dict[str, Any]) -> None:
        path = self._topics_dir / f"{document['name']}.json"
        write_atomically(path, json.dumps(document, indent=1).encode(), fsync=self._fsync)

    def delete_topic(self, name: str, topic_id: uuid.UUID, partitions: int) -> None:
        """Rename the partition directories aside, drop the metadata, then remove the directories."""
        doomed = []
        for index in range(partitions):
            source = self.data_dir / f"{name}-{index}"
            if source.exists():
                target = self.data_dir / f"{name}-{index}.{topic_id.hex}{DELETED_SUFFIX}"
                source.rename(target)
                doomed.append(target)
        (self._topics_dir / f"{name}.json").unlink(missing_ok=True)
        for path in doomed:
            shutil.rmtree(path, ignore_errors=True)

    def producer_id_limit(self) -> int | None:
        saved = read_file(self._producer_ids)
        return None if saved is None else int(saved.decode())

    def save_producer_id_limit(self, limit: int) -> None:
        write_atomically(self._producer_ids, str(limit).encode(), fsync=self._fsync)
