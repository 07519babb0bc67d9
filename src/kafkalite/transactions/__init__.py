"""The transaction coordinator (KIP-98, KIP-447, KIP-890) as a pure state machine: no asyncio, no storage.

`_state` holds the states, the transition table and the rules; `coordinator` applies them to every transactional id;
`errors` names the Kafka error codes it answers with. The broker (`broker.transactions`) persists the state in
`__transaction_state`, writes the markers and runs the timeout sweep.
"""

from kafkalite.transactions._state import TxnState
from kafkalite.transactions.coordinator import (
    Completion,
    CoordinatorConfig,
    TopicPartition,
    TransactionCoordinator,
    TxnMetadata,
    TxnResult,
)

__all__ = [
    "Completion",
    "CoordinatorConfig",
    "TopicPartition",
    "TransactionCoordinator",
    "TxnMetadata",
    "TxnResult",
    "TxnState",
]
