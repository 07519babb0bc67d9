"""The one interface producers and consumers talk through, and its embedded implementation.

`Producer` and `Consumer` never touch the broker directly: they call a `Transport`. `EmbeddedTransport` calls an
in-process `kafkalite.broker.Broker` with no sockets and no encoding beyond the RecordBatch bytes themselves; a
network transport can implement the same methods over the Kafka protocol so the same client code runs against any
Kafka cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kafkalite.broker import Broker, FetchData
from kafkalite.errors import GroupError, InvalidProducerEpochError, ProducerFencedError, TransactionError
from kafkalite.groups import JoinResult, LeavingMember, SyncResult
from kafkalite.transactions.errors import INVALID_PRODUCER_EPOCH, NAMES, PRODUCER_FENCED


class Transport(Protocol):
    """What the clients need from a broker."""

    def partition_count(self, topic: str) -> int: ...

    def topic_exists(self, topic: str) -> bool: ...

    def check_partition(self, topic: str, partition: int) -> None: ...

    async def produce(self, topic: str, partition: int, batch: bytes, *, acks: int) -> int:
        """Append a RecordBatch; return its base offset."""
        ...

    async def dead_letter(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes | None], ...],
        error: BaseException,
        *,
        offset: int = -1,
        timestamp: int = -1,
        group_id: str | None = None,
    ) -> tuple[str, int, int]:
        """Write to `<topic>.DLQ`; return (dead-letter topic, partition, offset)."""
        ...

    def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int, *, read_committed: bool = False
    ) -> FetchData[bytes]: ...

    async def produce_transactional(self, topic: str, partition: int, batch: bytes, transactional_id: str) -> int:
        """Append a transactional RecordBatch (acks=all); return its base offset."""
        ...

    async def init_transactional_producer(self, transactional_id: str, timeout_ms: int) -> tuple[int, int]:
        """(producer id, epoch) for a transactional id: fences every older instance of it."""
        ...

    async def add_partitions_to_txn(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Sequence[tuple[str, int]]
    ) -> None: ...

    async def add_offsets_to_txn(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None: ...

    async def txn_offset_commit(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        epoch: int,
        offsets: Sequence[tuple[str, int, int]],
        *,
        member_id: str = "",
        generation_id: int = -1,
    ) -> None: ...

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> tuple[int, int]:
        """Commit or abort; return the (producer id, epoch) for the next transaction (bumped, KIP-890 part 2)."""
        ...

    async def wait_for_data(self, partitions: Sequence[tuple[str, int]], timeout_s: float) -> None: ...

    def list_offset(self, topic: str, partition: int, timestamp: int) -> int: ...

    def committed(self, group_id: str, topic: str, partition: int) -> int | None: ...

    async def commit(
        self, group_id: str, member_id: str, generation_id: int, offsets: Sequence[tuple[str, int, int]]
    ) -> int:
        """Store offsets for the group; return a Kafka error code (0 = stored)."""
        ...

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        *,
        protocols: Sequence[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
    ) -> JoinResult: ...

    async def sync_group(
        self, group_id: str, member_id: str, generation_id: int, assignments: dict[str, bytes] | None
    ) -> SyncResult: ...

    def heartbeat(self, group_id: str, member_id: str, generation_id: int) -> int: ...

    def leave_group(self, group_id: str, member_id: str) -> None: ...


class EmbeddedTransport:
    """A `Transport` over an in-process broker."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def partition_count(self, topic: str) -> int:
        return len(self.broker.topic(topic).partitions)

    def topic_exists(self, topic: str) -> bool:
        return topic in self.broker.topics

    def check_partition(self, topic: str, partition: int) -> None:
        self.broker.partition(topic, partition)

    async def produce(self, topic: str, partition: int, batch: bytes, *, acks: int) -> int:
        return (await self.broker.produce(topic, partition, batch, acks=acks)).base_offset

    async def dead_letter(
        self,
        topic: str,
        partition: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[tuple[str, bytes | None], ...],
        error: BaseException,
        *,
        offset: int = -1,
        timestamp: int = -1,
        group_id: str | None = None,
    ) -> tuple[str, int, int]:
        result = await self.broker.dead_letters.send(
            topic, partition, key, value, headers, error, offset=offset, timestamp=timestamp, group_id=group_id
        )
        return topic + ".DLQ", partition, result.base_offset

    def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int, *, read_committed: bool = False
    ) -> FetchData[bytes]:
        return self.broker.fetch(topic, partition, offset, max_bytes, read_committed=read_committed)

    async def produce_transactional(self, topic: str, partition: int, batch: bytes, transactional_id: str) -> int:
        broker = self.broker
        result = await broker.append(topic, partition, batch, transactional_id=transactional_id)
        await broker.make_durable(topic, partition)
        return result.base_offset

    async def init_transactional_producer(self, transactional_id: str, timeout_ms: int) -> tuple[int, int]:
        result = await self.broker.transactions.init_producer_id(transactional_id, timeout_ms)
        _raise_for(result.error, f"InitProducerId of {transactional_id!r}")
        return result.producer_id, result.producer_epoch

    async def add_partitions_to_txn(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: Sequence[tuple[str, int]]
    ) -> None:
        result = await self.broker.transactions.add_partitions(transactional_id, producer_id, epoch, partitions)
        _raise_for(result.error, f"AddPartitionsToTxn of {transactional_id!r} {list(partitions)}")

    async def add_offsets_to_txn(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None:
        result = await self.broker.transactions.add_offsets(transactional_id, producer_id, epoch, group_id)
        _raise_for(result.error, f"AddOffsetsToTxn of {transactional_id!r} for group {group_id!r}")

    async def txn_offset_commit(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        epoch: int,
        offsets: Sequence[tuple[str, int, int]],
        *,
        member_id: str = "",
        generation_id: int = -1,
    ) -> None:
        if member_id:
            error = self.broker.groups.validate_offset_commit(group_id, member_id, generation_id)
            if error:
                raise GroupError(f"TxnOffsetCommit for group {group_id!r} refused by the group (error {error})", error)
        entries = [(topic, partition, offset, "", -1) for topic, partition, offset in offsets]
        error = await self.broker.transactions.commit_offsets(transactional_id, group_id, producer_id, epoch, entries)
        _raise_for(error, f"TxnOffsetCommit of {transactional_id!r} for group {group_id!r}")

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> tuple[int, int]:
        result = await self.broker.transactions.end_transaction(
            transactional_id, producer_id, epoch, commit, bump_epoch=True
        )
        _raise_for(result.error, f"EndTxn ({'commit' if commit else 'abort'}) of {transactional_id!r}")
        return result.producer_id, result.producer_epoch

    async def wait_for_data(self, partitions: Sequence[tuple[str, int]], timeout_s: float) -> None:
        await self.broker.wait_for_appends([self.broker.partition(t, p) for t, p in partitions], timeout_s)

    def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        return self.broker.list_offset(topic, partition, timestamp)[0]

    def committed(self, group_id: str, topic: str, partition: int) -> int | None:
        found = self.broker.offsets.fetch(group_id, topic, partition)
        return None if found is None else found.offset

    async def commit(
        self, group_id: str, member_id: str, generation_id: int, offsets: Sequence[tuple[str, int, int]]
    ) -> int:
        entries = [(topic, partition, offset, "", -1) for topic, partition, offset in offsets]
        return await self.broker.groups.commit_offsets(group_id, member_id, generation_id, entries)

    async def join_group(
        self,
        group_id: str,
        member_id: str,
        *,
        protocols: Sequence[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
    ) -> JoinResult:
        return await self.broker.groups.join(
            group_id,
            member_id,
            protocol_type="consumer",
            protocols=protocols,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            client_id=client_id,
            client_host="embedded",
        )

    async def sync_group(
        self, group_id: str, member_id: str, generation_id: int, assignments: dict[str, bytes] | None
    ) -> SyncResult:
        return await self.broker.groups.sync(group_id, member_id, generation_id, assignments=assignments)

    def heartbeat(self, group_id: str, member_id: str, generation_id: int) -> int:
        return self.broker.groups.heartbeat(group_id, member_id, generation_id).error_code

    def leave_group(self, group_id: str, member_id: str) -> None:
        self.broker.groups.leave(group_id, [LeavingMember(member_id)])


def _raise_for(code: int, what: str) -> None:
    """Kafka's answer as the exception the Python API promises: fenced producers, else `TransactionError`."""
    if not code:
        return
    message = f"{what}: {NAMES.get(code, f'error {code}')}"
    if code == PRODUCER_FENCED:
        raise ProducerFencedError(message)
    if code == INVALID_PRODUCER_EPOCH:
        raise InvalidProducerEpochError(message)
    raise TransactionError(message, code)
