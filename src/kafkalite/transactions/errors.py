"""The Kafka error codes the transaction coordinator answers with (errors are data: handlers copy them as they are)."""

from typing import Final

NONE: Final = 0
INVALID_PRODUCER_EPOCH: Final = 47
INVALID_TXN_STATE: Final = 48
INVALID_PRODUCER_ID_MAPPING: Final = 49
INVALID_TRANSACTION_TIMEOUT: Final = 50
CONCURRENT_TRANSACTIONS: Final = 51
PRODUCER_FENCED: Final = 90
TRANSACTIONAL_ID_NOT_FOUND: Final = 105

NAMES: Final = {
    NONE: "NONE",
    INVALID_PRODUCER_EPOCH: "INVALID_PRODUCER_EPOCH",
    INVALID_TXN_STATE: "INVALID_TXN_STATE",
    INVALID_PRODUCER_ID_MAPPING: "INVALID_PRODUCER_ID_MAPPING",
    INVALID_TRANSACTION_TIMEOUT: "INVALID_TRANSACTION_TIMEOUT",
    CONCURRENT_TRANSACTIONS: "CONCURRENT_TRANSACTIONS",
    PRODUCER_FENCED: "PRODUCER_FENCED",
    TRANSACTIONAL_ID_NOT_FOUND: "TRANSACTIONAL_ID_NOT_FOUND",
}


def fenced_for(code: int, version: int, first_version_with_fenced: int) -> int:
    """PRODUCER_FENCED (KIP-588) is answered only from the version that introduced it; older clients get
    INVALID_PRODUCER_EPOCH, the code they know for the same thing."""
    if code == PRODUCER_FENCED and version < first_version_with_fenced:
        return INVALID_PRODUCER_EPOCH
    return code
