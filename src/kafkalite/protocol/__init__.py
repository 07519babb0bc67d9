"""kafkalite.protocol: the Kafka wire format, sans I/O (frames, messages, the request guard, record batches).

Some of its modules may run compiled (mypyc); `native.install()` decides, before any of them is imported.
"""

from kafkalite.protocol import native as _native

_native.install()
