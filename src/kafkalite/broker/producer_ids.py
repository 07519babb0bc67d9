"""Handing out idempotent-producer ids and epochs (InitProducerId).

Ids come from blocks of `BLOCK` ids; the end of the current block (`limit`) is saved before any id of it is handed
out, so a restarted broker never reuses an id (it starts after the saved end, and after every id seen in its logs).
Every id ever handed out is below `limit`, which is how a Produce naming an id the broker never gave is refused
(`Partition.append`): ids are the broker's to hand out, and a client cannot push the allocator towards the end of the
int64 range. A saved limit or a logged id too close to that end to come from here (a hostile write from before that
check, or a damaged file) is ignored with a warning rather than followed into an overflow. A producer
that presents its current id and epoch (KIP-360) gets the epoch bumped. Transactional ids are the transaction
coordinator's (`broker.transactions`), which takes its new ids from `allocate`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from kafkalite.errors import KafkaLiteError

logger = logging.getLogger("kafkalite.broker")

BLOCK = 1000
MAX_EPOCH = 32766  # epochs are int16; Kafka hands out a new id instead of wrapping
MAX_PRODUCER_ID = 2**63 - 1
_HIGHEST_START = MAX_PRODUCER_ID - BLOCK  # a block starting above this would not fit in an int64


class ProducerIds:
    def __init__(self, saved_limit: int | None, save_limit: Callable[[int], Awaitable[None]]) -> None:
        if saved_limit is not None and not 0 <= saved_limit <= _HIGHEST_START:
            logger.warning(
                "Ignoring the saved producer-id limit %d: outside the range ids are handed out in", saved_limit
            )
            saved_limit = None
        self._limit = saved_limit or 0
        self._next = self._limit
        self._save_limit = save_limit

    @property
    def limit(self) -> int:
        """Every producer id this broker ever handed out is below this."""
        return self._limit

    async def init_producer_id(
        self, producer_id: int, producer_epoch: int, highest_seen: Callable[[], int]
    ) -> tuple[int, int]:
        """(producer id, epoch) for an idempotent InitProducerId; `highest_seen()` is the largest id known."""
        if 0 <= producer_id < self._limit and 0 <= producer_epoch < MAX_EPOCH:
            return producer_id, producer_epoch + 1
        return await self.allocate(highest_seen), 0

    async def allocate(self, highest_seen: Callable[[], int]) -> int:
        """A producer id never handed out before (the block's end is saved before any id of it is used).

        `highest_seen()` (a scan of every partition's producer table) is asked only when a new block starts, once
        per `BLOCK` ids: every id in the logs is below `limit` anyway, unless the ids file was lost."""
        if self._next >= self._limit:
            highest = highest_seen()
            if highest >= _HIGHEST_START:
                logger.warning("Ignoring producer id %d found in the logs: no block of ids can follow it", highest)
                highest = -1
            start = max(self._limit, highest + 1)
            if start > _HIGHEST_START:
                raise KafkaLiteError("every producer id has been handed out")
            await self._save_limit(start + BLOCK)
            self._limit = start + BLOCK
            self._next = start
        self._next += 1
        return self._next - 1
