"""ApiVersions (API key 18), versions 0-4.

v1 adds throttle_time_ms · v2 is v1 again · v3 is the first flexible version (the request carries the client's
software name and version; the response adds the tagged feature fields, KIP-584) · v4 is v3 again.
The response header is v0 at every version, so a client can read it before it knows what we speak. A request at a
version above 4 never reaches this handler: the dispatcher answers it with the v0 fallback body (UNSUPPORTED_VERSION,
KIP-511), and the client retries at a version listed there.

Features (v3+; what DescribeFeatures reads, as Kafka's admin clients read them from here): `metadata.version`
is supported and finalized at 25 ("4.0-IV3"), the Kafka 4.0 level whose API versions KafkaLite serves;
`transaction.version` is supported from 0 to 2 and finalized at 2 (KIP-890 part 2: a client that reads it uses
Produce v12+, TxnOffsetCommit v5+ and EndTxn v5+ without AddPartitionsToTxn or AddOffsetsToTxn; one that does not
keeps sending them, and both are served); `group.version` 1 (KIP-848 consumer groups) is supported and finalized
exactly when ConsumerGroupHeartbeat is served. The finalized features never change while the broker runs: their
epoch is 0.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.wire import ApiKey
from kafkalite.server.dispatch import RequestContext, handles, supported_ranges

METADATA_VERSION_4_0_IV3 = 25
CONSUMER_GROUP_HEARTBEAT = 68
TRANSACTION_VERSION_2 = 2
FEATURES_EPOCH = 0


def features() -> dict[str, tuple[int, int]]:
    """Feature name → (lowest supported level, highest supported level, which is also the finalized level)."""
    served = {api_key for api_key, _, _ in supported_ranges()}
    levels = {
        "metadata.version": (METADATA_VERSION_4_0_IV3, METADATA_VERSION_4_0_IV3),
        "transaction.version": (0, TRANSACTION_VERSION_2),
    }
    if CONSUMER_GROUP_HEARTBEAT in served:
        levels["group.version"] = (1, 1)
    return levels


@handles(ApiKey.API_VERSIONS, versions=range(0, 5))
async def api_versions(ctx: RequestContext, req: Any) -> Any:
    api_keys = [ctx.build("ApiVersion", api_key=k, min_version=lo, max_version=hi) for k, lo, hi in supported_ranges()]
    levels = features() if ctx.version >= 3 else {}
    return ctx.build(
        "ApiVersionsResponse",
        error_code=0,
        api_keys=api_keys,
        throttle_time=0,
        supported_features=[
            ctx.build("SupportedFeatureKey", name=name, min_version=low, max_version=high)
            for name, (low, high) in levels.items()
        ],
        finalized_features_epoch=FEATURES_EPOCH if levels else -1,
        finalized_features=[
            ctx.build("FinalizedFeatureKey", name=name, max_version_level=high, min_version_level=high)
            for name, (_, high) in levels.items()
        ],
        zk_migration_ready=False,
    )
