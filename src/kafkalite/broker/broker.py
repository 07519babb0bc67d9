"""The broker: topic registry, routing of produce/fetch to partitions, lifecycle, and what survives a restart.

On disk (`data_dir`): Kafka-format partition directories `<topic>-<partition>/`, plus the small files of
`metadata_store.MetadataStore` (cluster id, topic metadata, producer-id blocks). With `data_dir=None` every partition
lives in memory and nothing is written anywhere.

Lifecycle: `start()` loads topics, recovers every log, replays committed offsets and starts the retention task
and the log cleaner (`log_cleaner`, for compacted topics, `__consumer_offsets` among them); `close()` stops them and
closes every log. Produce with `acks=-1` returns after the partition's log is synced (when
the broker fsyncs); `acks=1` and `acks=0` after the bytes are written.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from kafkalite.broker.dead_letter import DeadLetterQueue
from kafkalite.broker.fetch_data import FetchData
from kafkalite.broker.log_cleaner import LogCleaner
from kafkalite.broker.log_reader import scan_records
from kafkalite.broker.metadata_store import MetadataStore, new_cluster_id
from kafkalite.broker.offsets import OFFSETS_TOPIC, OffsetManager
from kafkalite.broker.partition import Partition, ProduceResult
from kafkalite.broker.producer_ids import ProducerIds
from kafkalite.broker.threads import run_in_thread
from kafkalite.broker.topic import Topic, log_settings, validate_topic_name
from kafkalite.broker.transaction_log import TRANSACTION_STATE_TOPIC, TransactionLog
from kafkalite.broker.transactions import TransactionService, error_name
from kafkalite.config import BrokerConfig, TopicConfig, check_broker_config
from kafkalite.errors import (
    ClosedError,
    InvalidConfigError,
    InvalidProducerEpochError,
    OffsetOutOfRangeError,
    TopicExistsError,
    TransactionError,
    UnknownPartitionError,
    UnknownTopicError,
)
from kafkalite.protocol.records import BatchHeader, Record, RecordToWrite, build_batch, read_header
from kafkalite.stats import BrokerStats
from kafkalite.storage import DirectoryLock, FileRecords, MemoryLog, PartitionLog

if TYPE_CHECKING:  # imported when the first group request needs them: see `Broker.groups`
    from kafkalite.broker.group_service import GroupService
    from kafkalite.groups import TopicImage

logger = logging.getLogger("kafkalite.broker")

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
MAX_PARTITIONS = 100_000


class Broker:
    """The engine behind both the embedded API and the wire server."""

    def __init__(self, data_dir: str | Path | None = None, *, config: BrokerConfig | None = None, **settings: Any):
        base = config or BrokerConfig()
        if data_dir is not None:
            settings["data_dir"] = Path(data_dir)
        try:
            self.config = BrokerConfig(**{**_fields(base), **settings})
        except TypeError as exc:
            raise InvalidConfigError(f"unknown broker setting: {exc}") from None
        check_broker_config(self.config)
        self.node_id = self.config.node_id
        self.cluster_id = ""
        self.topics: dict[str, Topic] = {}
        self.metadata_changes = 0  # topics created, deleted, grown or reconfigured since start (DescribeQuorum)
        # Every topic by its id's 128-bit number (`topic_id.int`): a key the served Fetch and Produce look up in
        # compiled code, where a `uuid.UUID` key would call its Python `__hash__` and `__eq__`. Only read it.
        self.topics_by_id_number: dict[int, Topic] = {}
        self._offsets: OffsetManager | None = None
        self._groups: GroupService | None = None
        self._transactions: TransactionService | None = None
        self.dead_letters = DeadLetterQueue(self)
        self._store = (
            None if self.config.data_dir is None else MetadataStore(self.config.data_dir, fsync=self.config.fsync)
        )
        self._producer_ids = ProducerIds(None, self._save_producer_id_limit)
        self._directory_lock: DirectoryLock | None = None  # held from start to close when there is a data_dir
        self._retention_task: asyncio.Task[None] | None = None
        self._producer_expiration_task: asyncio.Task[None] | None = None
        self.cleaner: LogCleaner | None = None
        self._long_polls: set[asyncio.Future[bool]] = set()
        self._interrupted = False
        self._admin_lock = asyncio.Lock()  # topic create/delete/grow/alter: one at a time, each all or nothing
        self.stats = BrokerStats()  # counters read by `/metrics`; the wire server bumps its request counters here
        self._started = False
        self.closed = False  # once `close()` has begun: nothing more is appended (read it, never set it)

    # --- lifecycle --------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def running(self) -> bool:
        """Started and not closed: serving produce, fetch and groups."""
        return self._started and not self.closed

    @property
    def data_dir(self) -> Path | None:
        return self.config.data_dir

    @property
    def syncs_before_acks(self) -> bool:
        """Whether `make_durable` ever waits: fsync on, and files to sync (the memory engine has none)."""
        return self.config.fsync and self.config.data_dir is not None

    async def start(self) -> None:
        self._check_open()  # a closed broker is not started again: its tasks would run with nothing to stop them
        if self._started:
            return
        began = time.perf_counter()
        if self._store is not None:
            # Before anything is read: a second broker over these files would overwrite the first one's records.
            self._directory_lock = DirectoryLock.acquire(self._store.data_dir)
        try:
            await self._start(began)
        except BaseException:
            await self._abandon_start()
            raise

    async def _abandon_start(self) -> None:
        """A start that failed or was cancelled leaves the broker closed: what it opened is closed, then the data
        directory is unlocked (a later `start` raises `ClosedError`, as after `close`)."""
        self.closed = True
        try:
            await self._close()
        except Exception:
            logger.exception("Closing what a failed start opened failed")
        finally:
            if self._directory_lock is not None:
                self._directory_lock.release()

    async def _start(self, began: float) -> None:
        if self._store is not None:
            await run_in_thread(self._load_from_disk, self._store)
        else:
            self.cluster_id = new_cluster_id()
        await self._prepare_offsets_topic()
        self._offsets = OffsetManager(self.topics[OFFSETS_TOPIC].partitions[0], fsync=self.config.fsync)
        if self._offsets.has_groups():
            self._groups = self._group_service()  # restored now: their members' sessions start with the broker
        state = self.topics.get(TRANSACTION_STATE_TOPIC)
        self._transactions = TransactionService(
            self,
            None if state is None else TransactionLog(state.partitions[0], fsync=self.config.fsync),
            self._create_transaction_log,
            self._allocate_producer_id,
            max_timeout_ms=self.config.transaction_max_timeout_ms,
            abort_interval_ms=self.config.transaction_abort_interval_ms,
            id_expiration_ms=self.config.transactional_id_expiration_ms,
            fsync=self.config.fsync,
        )
        await self._transactions.start()
        self._retention_task = asyncio.create_task(self._retention_loop(), name="kafkalite-retention")
        self.expire_producers()  # the table was rebuilt from the log: what expired while the broker was down goes now
        self._producer_expiration_task = asyncio.create_task(
            self._producer_expiration_loop(), name="kafkalite-producer-expiration"
        )
        self.cleaner = LogCleaner(
            self._all_partitions,
            backoff_s=self.config.log_cleaner_backoff_s,
            io_max_bytes_per_second=self.config.log_cleaner_io_max_bytes_per_second,
            max_keys=self.config.log_cleaner_max_keys,
        )
        if self.config.log_cleaner_enable:
            self.cleaner.start()
        self._started = True
        logger.info(
            "Broker %d started with %d topics (%s) in %.0f ms",
            self.node_id,
            len(self.topics) - 1,
            self.data_dir or "in memory",
            (time.perf_counter() - began) * 1000,
        )

    async def _prepare_offsets_topic(self) -> None:
        """Create `__consumer_offsets` as Kafka does (compacted, `offsets.topic.segment.bytes`), or bring the configs
        of one created by an older KafkaLite (which compacted it by hand) to those."""
        wanted = {"cleanup.policy": "compact", "segment.bytes": str(self.config.offsets_segment_bytes)}
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            await self._create_topic(OFFSETS_TOPIC, self.config.offsets_partitions, wanted, internal=True)
            return
        if all(topic.config.overrides().get(name) == value for name, value in wanted.items()):
            return
        topic.config.update(wanted)
        log_config = log_settings(topic.config)
        for partition in topic.partitions:
            partition.log.config = log_config
        await self._save_topic(topic)

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            await self._close()
        finally:  # last, and whatever failed before: the files are closed (or never will be by this broker)
            if self._directory_lock is not None:
                self._directory_lock.release()

    async def _close(self) -> None:
        if self._groups is not None:
            self._groups.close()
            await self._groups.stop_storing()
        if self._transactions is not None:
            await self._transactions.close()
        for task in (self._retention_task, self._producer_expiration_task):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self.cleaner is not None:
            await self.cleaner.close()
        for topic in self.topics.values():
            for partition in topic.partitions:
                partition.log.close()
        logger.info("Broker %d closed", self.node_id)

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedError("the broker is closed")

    def _all_partitions(self) -> list[Partition]:
        return [partition for topic in list(self.topics.values()) for partition in topic.partitions]

    @property
    def offsets(self) -> OffsetManager:
        if self._offsets is None:
            raise ClosedError("the broker is not started: use `async with Broker(...)` or `await broker.start()`")
        return self._offsets

    @property
    def transactions(self) -> TransactionService:
        if self._transactions is None:
            raise ClosedError("the broker is not started: use `async with Broker(...)` or `await broker.start()`")
        return self._transactions

    def _topic_image(self) -> TopicImage:
        """Every topic as the consumer-group coordinator sees it: name → (topic id, partition count)."""
        return {name: (topic.topic_id, len(topic.partitions)) for name, topic in self.topics.items()}

    @property
    def groups(self) -> GroupService:
        """The group coordinators (classic and KIP-848), with the offsets they check commits against.

        A broker that found groups stored at start restored them then. One that found none builds the coordinators
        here, on the first call that needs them (a group request, the console's group pages, `/metrics`): their
        modules are a tenth of a start's imports, and a broker that serves only produce and fetch never needs them.
        Touch it first from the broker's event loop, as every group call does. After `close`, a broker that never
        needed them builds them as its close would have left them: answering, and storing nothing.
        """
        if self._groups is None:
            if not self._started:
                raise ClosedError("the broker is not started: use `async with Broker(...)` or `await broker.start()`")
            self._groups = self._group_service(storing=not self.closed)
        return self._groups

    def _group_service(self, *, storing: bool = True) -> GroupService:
        from kafkalite.broker.group_service import GroupService  # see `groups`
        from kafkalite.groups import ConsumerGroupConfig, GroupConfig

        return GroupService(
            GroupConfig(
                min_session_timeout_ms=self.config.group_min_session_timeout_ms,
                max_session_timeout_ms=self.config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=self.config.group_initial_rebalance_delay_ms,
            ),
            self.offsets,
            ConsumerGroupConfig(
                session_timeout_ms=self.config.group_consumer_session_timeout_ms,
                heartbeat_interval_ms=self.config.group_consumer_heartbeat_interval_ms,
                assignors=self.config.group_consumer_assignors,
                max_size=self.config.group_consumer_max_size,
            ),
            self._topic_image,
            storing=storing,
        )

    # --- topics -----------------------------------------------------------------------------------------------

    def topic(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise UnknownTopicError(f"unknown topic {name!r}")
        return topic

    def topic_by_id(self, topic_id: uuid.UUID | None) -> Topic:
        """The topic with `topic_id`; a null id (as kio reads the all-zero one) names none."""
        topic = None if topic_id is None else self.topics_by_id_number.get(topic_id.int)
        if topic is None:
            raise UnknownTopicError(f"unknown topic id {topic_id}")
        return topic

    def partition(self, topic: str, index: int) -> Partition:
        partitions = self.topic(topic).partitions
        if not isinstance(index, int) or not 0 <= index < len(partitions):
            raise UnknownPartitionError(f"topic {topic!r} has no partition {index!r} (it has {len(partitions)})")
        return partitions[index]

    async def create_topic(
        self,
        name: str,
        partitions: int = 1,
        config: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> Topic:
        """Create a topic; raise `TopicExistsError`, `InvalidTopicError` or `InvalidConfigError` on bad input."""
        self._check_open()
        validate_topic_name(name)
        if name in self.topics:
            raise TopicExistsError(f"topic {name!r} already exists")
        if not isinstance(partitions, int) or isinstance(partitions, bool) or not 1 <= partitions <= MAX_PARTITIONS:
            raise InvalidConfigError(f"partitions must be an integer in 1..{MAX_PARTITIONS}, got {partitions!r}")
        settings = {k: str(v) for k, v in (config or {}).items()}
        try:
            TopicConfig(settings, self.config.topic_defaults)  # validates every key and value
        except InvalidConfigError as exc:
            logger.warning("Refused to create topic=%s: %s", name, exc)
            raise
        async with self._admin_lock:
            if name in self.topics:
                raise TopicExistsError(f"topic {name!r} already exists")
            if validate_only:
                return Topic(name, uuid.uuid4(), TopicConfig(settings, self.config.topic_defaults), [])
            topic = await self._create_topic(name, partitions, settings, internal=False)
        logger.info("Created topic=%s partitions=%d", name, partitions)
        return topic

    async def ensure_topic(self, name: str) -> Topic:
        """The topic, auto-created with the broker defaults when `auto_create_topics` allows it."""
        topic = self.topics.get(name)
        if topic is not None:
            return topic
        if not self.config.auto_create_topics:
            raise UnknownTopicError(f"unknown topic {name!r} (auto-creation is off)")
        try:
            return await self.create_topic(name, self.config.default_partitions)
        except TopicExistsError:
            return self.topics[name]

    async def _create_topic(self, name: str, count: int, settings: dict[str, str], *, internal: bool) -> Topic:
        """Open the partitions and save the metadata first; only then is the topic visible (all or nothing)."""
        config = TopicConfig(settings, self.config.topic_defaults)
        topic = Topic(name, uuid.uuid4(), config, [], is_internal=internal)
        partitions = await self._open_partitions(topic, range(count))
        topic.partitions.extend(partitions)
        try:
            await self._save_topic(topic)
        except BaseException:
            for partition in partitions:
                partition.log.close()
            raise
        self.topics[name] = topic
        self.topics_by_id_number[topic.topic_id.int] = topic
        return topic

    async def delete_topic(self, name: str) -> None:
        self._check_open()
        async with self._admin_lock:
            await self._delete_topic(name)
        logger.info("Deleted topic=%s", name)

    async def _delete_topic(self, name: str) -> None:
        topic = self.topic(name)
        if topic.is_internal:
            raise UnknownTopicError(f"internal topic {name!r} cannot be deleted")
        del self.topics[name]
        del self.topics_by_id_number[topic.topic_id.int]
        self.metadata_changes += 1
        for partition in topic.partitions:
            partition.log.close()
        if self._store is not None:
            await run_in_thread(self._store.delete_topic, name, topic.topic_id, len(topic.partitions))

    async def create_partitions(self, name: str, total_count: int, *, validate_only: bool = False) -> None:
        """Grow a topic to `total_count` partitions (Kafka never shrinks a topic)."""
        self._check_open()
        async with self._admin_lock:
            topic = self.topic(name)
            current = len(topic.partitions)
            if not isinstance(total_count, int) or total_count <= current or total_count > MAX_PARTITIONS:
                raise InvalidConfigError(
                    f"topic {name!r} has {current} partitions; the new count must be greater (got {total_count!r})"
                )
            if validate_only:
                return
            added = await self._open_partitions(topic, range(current, total_count))
            topic.partitions.extend(added)
            await self._save_topic(topic)
        logger.info("Grew topic=%s from %d to %d partitions", name, current, total_count)

    async def alter_topic_config(
        self, name: str, changes: Mapping[str, str | None], *, validate_only: bool = False
    ) -> None:
        """Set or reset (None) topic configs; every change is validated before any applies."""
        self._check_open()
        async with self._admin_lock:
            topic = self.topic(name)
            try:
                topic.config.check_changes(changes)
            except InvalidConfigError as exc:
                logger.warning("Refused to alter the configs of topic=%s: %s", name, exc)
                raise
            if validate_only:
                return
            topic.config.update(changes)
            log_config = log_settings(topic.config)
            for partition in topic.partitions:
                partition.log.config = log_config
            await self._save_topic(topic)
        logger.info("Altered configs of topic=%s: %s", name, dict(changes))

    async def _open_partitions(self, topic: Topic, indexes: range) -> list[Partition]:
        log_config = log_settings(topic.config)
        if self.data_dir is None:
            return [
                Partition(topic.name, i, MemoryLog(log_config), topic.config, self._producer_id_limit) for i in indexes
            ]
        data_dir = self.data_dir

        def open_logs() -> list[PartitionLog]:
            return [
                PartitionLog.open(data_dir / f"{topic.name}-{i}", log_config, fsync=self.config.fsync) for i in indexes
            ]

        logs = await run_in_thread(open_logs)
        for log in logs:
            log.sync_stats = self.stats.sync
        return [
            Partition(topic.name, i, log, topic.config, self._producer_id_limit)
            for i, log in zip(indexes, logs, strict=True)
        ]

    # --- produce and fetch ------------------------------------------------------------------------------------

    async def produce(
        self, topic: str, partition: int, records: bytes | bytearray | memoryview, *, acks: int = -1
    ) -> ProduceResult:
        """Append RecordBatch bytes to a partition; with acks=-1, return once they are durable."""
        self._check_open()
        target = self.partition(topic, partition)
        result = await target.append(records)
        if acks == -1 and self.config.fsync:
            await target.log.sync()
        return result

    async def append(
        self,
        topic: str,
        partition: int,
        records: bytes | bytearray | memoryview,
        *,
        transactional_id: str | None = None,
        implicit_add: bool = False,
    ) -> ProduceResult:
        """`produce` without the durability wait: the served Produce appends, then waits apart (`make_durable`).

        Transactional batches need `transactional_id`, and the coordinator's consent: the partition is in that
        id's ongoing transaction and the batch's producer id and epoch are current. With `implicit_add` (Produce
        v12+, transaction version 2, KIP-890 part 2) the partition is first added to the transaction.
        """
        self._check_open()
        target = self.partition(topic, partition)
        if transactional_id is None:
            return await target.append(records)
        if implicit_add:
            header = read_header(records)
            if header.is_transactional and not header.is_control:
                code = await self.transactions.add_implicitly(
                    transactional_id, header.producer_id, header.producer_epoch, (topic, partition)
                )
                if code:
                    _refuse_transactional(transactional_id, header, topic, partition, code)
        return await target.append(records, self._transactional_check(transactional_id, topic, partition))

    def _transactional_check(self, transactional_id: str, topic: str, partition: int) -> Callable[[BatchHeader], None]:
        transactions = self.transactions

        def check(header: BatchHeader) -> None:
            code = transactions.check_write(
                transactional_id, header.producer_id, header.producer_epoch, (topic, partition)
            )
            if code:
                _refuse_transactional(transactional_id, header, topic, partition, code)

        return check

    async def write_marker(
        self,
        topic: str,
        partition: int,
        producer_id: int,
        producer_epoch: int,
        *,
        commit: bool,
        coordinator_epoch: int,
        strict_epoch: bool = False,
    ) -> int:
        """WriteTxnMarkers: a commit or abort marker for `producer_id` written to one partition (offsets held in
        `__consumer_offsets` by that producer then count or vanish), durable before this returns; its offset."""
        self._check_open()
        target = self.partition(topic, partition)
        offset = await target.write_marker(
            producer_id, producer_epoch, commit, coordinator_epoch, strict_epoch=strict_epoch
        )
        if topic == OFFSETS_TOPIC:
            self.offsets.complete_transaction(producer_id, commit)
        logger.info(
            "Wrote the %s marker of producer %d epoch %d to %s-%d at offset %d (WriteTxnMarkers)",
            "commit" if commit else "abort",
            producer_id,
            producer_epoch,
            topic,
            partition,
            offset,
        )
        if self.config.fsync:
            await target.log.sync()
        return offset

    async def make_durable(self, topic: str, partition: int) -> None:
        """Return once every byte appended to the partition so far is on disk (at once unless `syncs_before_acks`)."""
        if self.syncs_before_acks:
            await self.partition(topic, partition).log.sync()

    def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int, *, read_committed: bool = False
    ) -> FetchData[bytes]:
        """Whole batches from `offset` (at least one when any exist), as stored; read_committed stops at the last
        stable offset and lists the aborted transactions among the batches returned."""
        return self.partition(topic, partition).read(offset, max_bytes, read_committed=read_committed)

    def fetch_for_send(
        self, topic: str, partition: int, offset: int, max_bytes: int, *, read_committed: bool = False
    ) -> FetchData[bytes | FileRecords]:
        """`fetch` for a Fetch answer: large reads of the file engine come as `FileRecords`, which the server sends
        from the segment file without copying (`storage.file_records`); the caller closes them if it drops them."""
        return self.partition(topic, partition).read_for_send(offset, max_bytes, read_committed=read_committed)

    async def wait_for_appends(self, partitions: Sequence[Partition], timeout_s: float) -> bool:
        """Wait for the first append to any of `partitions` (the Fetch long poll): True when one came, False when
        `timeout_s` passed, when the broker is shutting down, or at once when there is nothing to wait on (no
        partitions, no time). A caller that reads again only after True can never spin."""
        if timeout_s <= 0 or not partitions or self._interrupted:
            return False
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()  # True: an append (or shutdown); False: time is up
        # A loop timer rather than `asyncio.wait_for`: every caught-up consumer's Fetch waits here, and wait_for's
        # extra future, callbacks and cancellation round cost more than the rest of the wait.
        timer = loop.call_later(timeout_s, _time_up, waiter)
        self._long_polls.add(waiter)
        for partition in partitions:
            partition.add_waiter(waiter)
        try:
            return await waiter and not self._interrupted
        finally:
            timer.cancel()
            self._long_polls.discard(waiter)
            for partition in partitions:
                partition.remove_waiter(waiter)

    def interrupt_long_polls(self) -> None:
        """Shutting down: answer every Fetch long poll now and end pending JoinGroup/SyncGroup waits, so in-flight
        requests finish at once instead of holding the shutdown for their max_wait or rebalance timeout."""
        self._interrupted = True
        for waiter in self._long_polls:
            if not waiter.done():
                waiter.set_result(True)
        if self._groups is not None:
            self._groups.close()

    def list_offset(
        self, topic: str, partition: int, timestamp: int, *, read_committed: bool = False
    ) -> tuple[int, int]:
        """ListOffsets: (offset, timestamp) for LATEST (-1), EARLIEST (-2), MAX_TIMESTAMP (-3) or a timestamp;
        read_committed answers LATEST with the last stable offset."""
        target = self.partition(topic, partition)
        if timestamp == LATEST:
            return (target.last_stable_offset if read_committed else target.high_watermark), -1
        if timestamp == EARLIEST:
            return target.log_start_offset, -1
        if timestamp == MAX_TIMESTAMP:
            return target.max_timestamp_offset()
        found = target.log.offset_for_timestamp(timestamp)
        return found if found is not None else (-1, -1)

    async def delete_records(self, topic: str, partition: int, before_offset: int) -> int:
        """Advance the log start offset (DeleteRecords); -1 means up to the high watermark. Returns the new start."""
        self._check_open()
        target = self.partition(topic, partition)
        end = target.high_watermark
        offset = end if before_offset == -1 else before_offset
        if not target.log_start_offset <= offset <= end:
            if offset < target.log_start_offset:
                return target.log_start_offset
            raise OffsetOutOfRangeError(offset, target.log_start_offset, end)
        target.log.delete_records_before(offset)
        logger.info("Deleted records of %s-%d before offset %d", topic, partition, offset)
        return target.log_start_offset

    # --- reading and writing records for people (the console) -------------------------------------------------

    def read_records(self, topic: str, partition: int, offset: int, max_records: int) -> list[Record]:
        """Up to `max_records` decoded records from `offset` on (clamped to the log start): the console's message
        browser. Reads only the batches it returns, through the offset index, never the whole log; not counted as
        fetched bytes."""
        return list(islice(self.iter_records(topic, partition, offset), max(0, max_records)))

    def iter_records(self, topic: str, partition: int, offset: int) -> Iterator[Record]:
        """Decoded records from `offset` on, read a batch at a time as the caller asks for more (a bounded search
        stops taking them; nothing is read ahead beyond one read chunk)."""
        return scan_records(self.partition(topic, partition).log, offset)

    async def produce_record(
        self,
        topic: str,
        partition: int,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> ProduceResult:
        """Append one record built here (a test message from the console), durably like acks=all."""
        batch = build_batch([RecordToWrite(value, key, list(headers))], now_ms=int(time.time() * 1000))
        return await self.produce(topic, partition, batch, acks=-1)

    def size_bytes(self) -> int:
        """Bytes held by every partition log (the console's disk use)."""
        return sum(partition.log.size_bytes for topic in self.topics.values() for partition in topic.partitions)

    # --- idempotent producers ---------------------------------------------------------------------------------

    async def init_producer_id(
        self,
        transactional_id: str | None = None,
        producer_id: int = -1,
        producer_epoch: int = -1,
        *,
        transaction_timeout_ms: int = 60_000,
    ) -> tuple[int, int]:
        """A (producer id, epoch) for an idempotent producer; a known id and epoch get the epoch bumped.

        With a `transactional_id` the transaction coordinator answers (`transactions.init_producer_id`); its refusal
        is raised as `TransactionError` (or `ProducerFencedError`).
        """
        self._check_open()
        if transactional_id:
            result = await self.transactions.init_producer_id(
                transactional_id, transaction_timeout_ms, producer_id, producer_epoch
            )
            if result.error:
                raise TransactionError(
                    f"InitProducerId of {transactional_id}: {error_name(result.error)}", result.error
                )
            return result.producer_id, result.producer_epoch
        return await self._producer_ids.init_producer_id(producer_id, producer_epoch, self._highest_producer_id)

    def _highest_producer_id(self) -> int:
        highest = max((p.producers.max_producer_id() for t in self.topics.values() for p in t.partitions), default=-1)
        return max(highest, self._transactions.max_producer_id() if self._transactions is not None else -1)

    async def _create_transaction_log(self) -> TransactionLog:
        """`__transaction_state`, created on first use as Kafka creates it (a broker without transactions has none)."""
        async with self._admin_lock:
            if TRANSACTION_STATE_TOPIC not in self.topics:
                await self._create_topic(TRANSACTION_STATE_TOPIC, 1, {}, internal=True)
        return TransactionLog(self.topics[TRANSACTION_STATE_TOPIC].partitions[0], fsync=self.config.fsync)

    async def _allocate_producer_id(self) -> int:
        return await self._producer_ids.allocate(self._highest_producer_id)

    def _producer_id_limit(self) -> int:
        return self._producer_ids.limit

    async def _save_producer_id_limit(self, limit: int) -> None:
        if self._store is not None:
            await run_in_thread(self._store.save_producer_id_limit, limit)

    # --- persistence ------------------------------------------------------------------------------------------

    async def _save_topic(self, topic: Topic) -> None:
        self.metadata_changes += 1
        if self._store is None:
            return
        document = {
            "name": topic.name,
            "topic_id": str(topic.topic_id),
            "partitions": len(topic.partitions),
            "internal": topic.is_internal,
            "config": topic.config.overrides(),
        }
        await run_in_thread(self._store.save_topic, document)

    def _load_from_disk(self, store: MetadataStore) -> None:
        """Runs in a worker thread at start: identity, producer-id block, every topic with its recovered logs."""
        store.prepare()
        self.cluster_id = store.cluster_id(self.node_id)
        self._producer_ids = ProducerIds(store.producer_id_limit(), self._save_producer_id_limit)
        for document in store.topic_documents():
            try:
                self._load_topic(store.data_dir, document)
            except (ValueError, KeyError, TypeError) as exc:
                logger.error("Skipping topic %r with unreadable metadata: %s", document.get("name"), exc)

    def _load_topic(self, data_dir: Path, document: dict[str, Any]) -> None:
        name = document["name"]
        config = TopicConfig(document.get("config", {}), self.config.topic_defaults)
        topic = Topic(name, uuid.UUID(document["topic_id"]), config, [], is_internal=document.get("internal", False))
        log_config = log_settings(config)
        try:
            for index in range(int(document["partitions"])):
                log = PartitionLog.open(data_dir / f"{name}-{index}", log_config, fsync=self.config.fsync)
                log.sync_stats = self.stats.sync
                topic.partitions.append(Partition(name, index, log, config, self._producer_id_limit))
        except BaseException:  # the topic is not loaded: the logs it did open are closed, not left to the collector
            for partition in topic.partitions:
                partition.log.close()
            raise
        self.topics[name] = topic
        self.topics_by_id_number[topic.topic_id.int] = topic

    async def _retention_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.retention_check_interval_s)
            try:
                self.apply_retention()
            except Exception:  # a failed pass (say, a segment file that would not go) must not end retention
                self.stats.retention.failures += 1
                logger.exception("Retention pass failed; retrying in %ss", self.config.retention_check_interval_s)

    async def _producer_expiration_loop(self) -> None:
        interval_s = self.config.producer_id_expiration_check_interval_ms / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                self.expire_producers()
            except Exception:  # a bug here must not end the check for good
                self.stats.producer_expiration.failures += 1
                logger.exception("Producer expiration failed; retrying in %ss", interval_s)

    def expire_producers(self, now_ms: int | None = None) -> int:
        """Forget, in every partition, the producers idle for `producer.id.expiration.ms` (see
        `ProducerStateTable.remove_expired`); return how many partition entries went. Synchronous on the loop: no
        append is between its producer check and its `observe` (nothing awaits under a partition's lock), and were
        one there, the worst would be an entry made again for a producer just forgotten."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        cutoff = now - self.config.producer_id_expiration_ms
        removed = 0
        for topic in list(self.topics.values()):
            for partition in topic.partitions:
                removed += len(partition.producers.remove_expired(cutoff, set(partition.transactions.producer_ids())))
        self.stats.producer_expiration.expired += removed
        if removed:
            logger.info(
                "Forgot %d producer states idle for more than %d ms", removed, self.config.producer_id_expiration_ms
            )
        return removed

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Delete whole old segments of every partition per its retention configs; return how many went."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        deleted = 0
        for topic in list(self.topics.values()):
            if topic.is_internal:
                continue
            for partition in topic.partitions:
                deleted += partition.log.apply_retention(now)
        self.stats.retention.passes += 1
        self.stats.retention.segments_deleted += deleted
        if deleted:
            logger.info("Retention deleted %d segments", deleted)
        return deleted


def _fields(config: BrokerConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}


def _refuse_transactional(transactional_id: str, header: BatchHeader, topic: str, partition: int, code: int) -> None:
    reason = (
        f"transactional_id={transactional_id} producer {header.producer_id} epoch {header.producer_epoch} "
        f"may not write to {topic}-{partition}: {error_name(code)}"
    )
    if code in (47, 90):  # Produce answers a fenced epoch with INVALID_PRODUCER_EPOCH (47), as Kafka does
        raise InvalidProducerEpochError(reason)
    raise TransactionError(reason, code)


def _time_up(waiter: asyncio.Future[bool]) -> None:
    """A long poll's time is up (unless an append woke it first)."""
    if not waiter.done():
        waiter.set_result(False)
