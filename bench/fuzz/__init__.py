"""A structure-aware fuzzer of the Kafka wire protocol, aimed at a real `kafkalite serve`.

`frames` builds valid requests from kio's schemas and mutates them; `session` sends them on a few connections
while a prober and a canary check that the broker stays responsive and loses nothing; `target` starts the broker;
`python -m bench.fuzz` is the long run. tests/server/test_fuzz.py runs the same session at a modest size.
"""
