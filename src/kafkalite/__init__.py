"""KafkaLite: a Kafka-compatible event-log broker in Python."""
