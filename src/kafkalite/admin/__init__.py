"""Operating any Kafka cluster over the wire: topics, records in and out, consumer groups and their offsets.

The work behind `kafkalite topics|produce|consume|groups` (and the migration's building blocks), written against the
Kafka protocol as librdkafka speaks it (confluent-kafka), so it is as useful against Apache Kafka, Redpanda or Tansu
as against `kafkalite serve`. Nothing here imports the broker, the server or the embedded client: the only way in is a
bootstrap address.

Why librdkafka rather than aiokafka, the project's network client elsewhere: these tools need the admin requests
aiokafka's admin client lacks (DeleteGroups, OffsetCommit on behalf of an empty group, IncrementalAlterConfigs,
ListOffsets by timestamp), `-X` settings under Kafka's own property names as kcat takes them, and producer
throughput within reach of kcat's (librdkafka batches in C; a pure-Python producer sends about a twentieth as many
messages a second on the same machine; see docs/benchmarks.md).

Every call blocks (the CLI is synchronous); failures raise `AdminError` (a `KafkaLiteError`) with one line naming
what failed and why.
"""

from kafkalite.admin.connection import AdminError, ClientSettings, Cluster, parse_properties

__all__ = ["AdminError", "ClientSettings", "Cluster", "parse_properties"]
