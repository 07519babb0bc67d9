"""The shape of one setting: Kafka's config types and sources, validators, and the `Setting` row of the tables.

Every setting, broker or topic, is one `Setting`: its Kafka name, Kafka's type (as DescribeConfigs reports it), its
default as a string (None: no default, as Kafka's `log.dirs`), a validator that enforces Kafka's rule for the value,
the documentation line DescribeConfigs returns, and whether KafkaLite acts on it (`honoured`) or only accepts and
reports it, as a single-broker cluster reports replication settings.

Values travel as strings (the wire, `server.properties` and every Kafka tool speak strings); `Setting.parse` turns
one into its Python value or raises `InvalidConfigError` naming the key and the rule, in Kafka's words:
"Invalid value gzipp for configuration compression.type: String must be one of: uncompressed, zstd, ...".
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import InvalidConfigError

_INTEGER = re.compile(r"[+-]?[0-9]+")
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class ConfigType(enum.IntEnum):
    """DescribeConfigs' config_type (KIP-569), Kafka's `ConfigDef.Type`."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """Where a described value comes from (DescribeConfigs' config_source)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


Validator = Callable[[Any], None]
"""Checks a value already parsed to its type; raises ValueError with Kafka's wording of the rule."""


def _parse_typed(config_type: ConfigType, text: str) -> Any:
    """A string to the Python value of a Kafka config type; ValueError with Kafka's message when it is not one."""
    stripped = text.strip()
    if config_type is ConfigType.BOOLEAN:
        if stripped.lower() in ("true", "false"):
            return stripped.lower() == "true"
        raise ValueError("Expected value to be either true or false")
    if config_type in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        bits = {ConfigType.SHORT: 16, ConfigType.INT: 32, ConfigType.LONG: 64}[config_type]
        if not _INTEGER.fullmatch(stripped):  # Java's parseInt: no "1_000", no non-ASCII digits
            raise ValueError(f"Not a number of type {config_type.name}")
        number = int(stripped)
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise ValueError(f"Not a number of type {config_type.name}")
        return number
    if config_type is ConfigType.DOUBLE:
        if "_" in stripped or not stripped.isascii():
            raise ValueError("Not a number of type DOUBLE")
        try:
            return float(stripped)
        except ValueError:
            raise ValueError("Not a number of type DOUBLE") from None
    if config_type is ConfigType.LIST:
        return [item.strip() for item in stripped.split(",")] if stripped else []
    return text if config_type is ConfigType.PASSWORD else stripped


def at_least(minimum: float) -> Validator:
    def check(value: Any) -> None:
        if value < minimum:
            raise ValueError(f"Value must be at least {minimum}")

    return check


def between(low: float, high: float) -> Validator:
    def check(value: Any) -> None:
        if not low <= value <= high:
            raise ValueError(f"Value must be no less than {low} and no more than {high}")

    return check


def in_range_or(special: int, low: int, high: int) -> Validator:
    """`special` (e.g. -1: "codec default") or a value in [low, high], as Kafka's compression levels."""

    def check(value: Any) -> None:
        if value != special and not low <= value <= high:
            raise ValueError(f"Value must be {special} or no less than {low} and no more than {high}")

    return check


def one_of(*choices: str) -> Validator:
    def check(value: Any) -> None:
        if value not in choices:
            raise ValueError(f"String must be one of: {', '.join(choices)}")

    return check


def list_of(*choices: str) -> Validator:
    """Items among `choices`, each at most once; an empty list passes, as Kafka's `ValidList` lets it."""

    def check(value: Any) -> None:
        for item in value:
            if item not in choices:
                raise ValueError(f"Invalid value {item}; items must be among: {', '.join(choices)}")
        if len(set(value)) != len(value):
            raise ValueError(f"Duplicate items; items must be among: {', '.join(choices)}")

    return check


def no_rule(value: Any) -> None:
    """Any value of the type is accepted."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One row of a settings table."""

    name: str
    type: ConfigType
    default: str | None
    doc: str
    validate: Validator = no_rule
    honoured: bool = True  # False: accepted and reported, no effect on KafkaLite
    note: str = ""  # how KafkaLite differs from Kafka here, appended to the documentation
    read_only: bool = False  # True: cannot be altered while the broker runs
    sensitive: bool = False

    def parse(self, text: str) -> Any:
        """The value `text` stands for, checked against Kafka's rule; `InvalidConfigError` names the key and rule."""
        try:
            value = _parse_typed(self.type, text)
            self.validate(value)
        except ValueError as exc:
            raise InvalidConfigError(f"Invalid value {text} for configuration {self.name}: {exc}") from None
        return value

    @property
    def documentation(self) -> str:
        """The doc line DescribeConfigs returns: Kafka's meaning, then what KafkaLite does with it."""
        if self.note:
            return f"{self.doc} KafkaLite: {self.note}"
        if not self.honoured:
            return f"{self.doc} KafkaLite: accepted and reported, no effect."
        return self.doc


def table(settings: Sequence[Setting]) -> dict[str, Setting]:
    """Name → setting, refusing a name listed twice (a table typo would otherwise hide a row)."""
    rows: dict[str, Setting] = {}
    for setting in settings:
        if setting.name in rows:
            raise ValueError(f"setting {setting.name!r} is listed twice")
        rows[setting.name] = setting
    return rows
