"""Benchmarks: `python -m bench` runs KafkaLite against its peers (see `bench/__main__.py`); `embedded_bench.py` and
`storage_bench.py` are standalone benchmarks of the embedded path and the storage engine."""
