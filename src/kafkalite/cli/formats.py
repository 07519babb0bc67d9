"""How `kafkalite consume` writes records: value, key-value, JSON lines, or a kcat-style template.

Template tokens (kcat's `-f`): %t topic · %p partition · %o offset · %k key · %s value · %K key length ·
%S value length · %T timestamp (ms) · %h headers as `name=value,...` · %% a percent sign; escapes \\n \\t \\r \\\\.
A null key or value prints as nothing (length -1). Every formatter turns a batch of messages into one bytes object,
so a batch costs one write.

JSON lines carry topic, partition, offset, timestamp, key, value and headers; keys, values and header values that
are not UTF-8 are written in base64 and flagged (`"value_encoding": "base64"`), so every byte survives.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Message

from kafkalite.admin.consume import header_pairs

Formatter = Callable[[Sequence[Message]], bytes]
NAMED = ("value", "key-value", "json")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


class FormatError(ValueError):
    """A template with an unknown token or a dangling escape."""


def formatter(spec: str, key_separator: bytes = b"\t") -> Formatter:
    if spec == "value":
        return lambda batch: b"\n".join([m.value() or b"" for m in batch]) + b"\n"
    if spec in ("key-value", "key+value"):
        return lambda batch: b"".join([(m.key() or b"") + key_separator + (m.value() or b"") + b"\n" for m in batch])
    if spec == "json":
        return _json_lines
    if "%" not in spec:
        raise FormatError(f"unknown format {spec!r}: use value, key-value, json, or a template with %-tokens")
    return _template(spec)


def _text(data: bytes | None, name: str, record: dict[str, Any]) -> None:
    if data is None:
        record[name] = None
        return
    try:
        record[name] = data.decode()
    except UnicodeDecodeError:
        record[name] = base64.b64encode(data).decode()
        record[f"{name}_encoding"] = "base64"


def message_document(m: Message) -> dict[str, Any]:
    record: dict[str, Any] = {"topic": m.topic(), "partition": m.partition(), "offset": m.offset()}
    kind, timestamp = m.timestamp()
    record["timestamp"] = timestamp if kind else None
    _text(m.key(), "key", record)
    _text(m.value(), "value", record)
    headers = []
    for name, value in header_pairs(m):
        header: dict[str, Any] = {"key": name}
        _text(value, "value", header)
        headers.append(header)
    record["headers"] = headers
    return record


def _json_lines(batch: Sequence[Message]) -> bytes:
    return "".join([json.dumps(message_document(m), ensure_ascii=False) + "\n" for m in batch]).encode()


def _headers(m: Message) -> bytes:
    return b",".join(name.encode() + b"=" + (value or b"") for name, value in header_pairs(m))


def _length(data: bytes | None) -> bytes:
    return b"-1" if data is None else str(len(data)).encode()


_TOKENS: dict[str, Callable[[Message], bytes]] = {
    "t": lambda m: (m.topic() or "").encode(),
    "p": lambda m: str(m.partition()).encode(),
    "o": lambda m: str(m.offset()).encode(),
    "k": lambda m: m.key() or b"",
    "s": lambda m: m.value() or b"",
    "K": lambda m: _length(m.key()),
    "S": lambda m: _length(m.value()),
    "T": lambda m: str(m.timestamp()[1]).encode(),
    "h": _headers,
}


def _template(spec: str) -> Formatter:
    parts: list[bytes | Callable[[Message], bytes]] = []
    literal: list[str] = []
    i = 0
    while i < len(spec):
        char = spec[i]
        if char in "%\\" and i + 1 >= len(spec):
            raise FormatError(f"format {spec!r} ends in a lone {char!r}")
        if char == "%":
            token = spec[i + 1]
            if token == "%":
                literal.append("%")
            elif token in _TOKENS:
                if literal:
                    parts.append("".join(literal).encode())
                    literal = []
                parts.append(_TOKENS[token])
            else:
                raise FormatError(f"unknown token %{token} in format {spec!r} (known: %t %p %o %k %s %K %S %T %h %%)")
            i += 2
        elif char == "\\":
            literal.append(_ESCAPES.get(spec[i + 1], "\\" + spec[i + 1]))
            i += 2
        else:
            literal.append(char)
            i += 1
    if literal:
        parts.append("".join(literal).encode())

    def render(batch: Sequence[Message]) -> bytes:
        out: list[bytes] = []
        for m in batch:
            out.extend(part if isinstance(part, bytes) else part(m) for part in parts)
        return b"".join(out)

    return render
