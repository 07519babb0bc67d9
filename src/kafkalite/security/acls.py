"""ACL bindings, filters and their store, with Kafka's enums and matching rules.

A binding says: `principal` from `host` is ALLOWed or DENYed `operation` on resources of `resource_type` whose name
is `resource_name` (LITERAL; `*` is every name) or starts with it (PREFIXED). Filters (DescribeAcls, DeleteAcls)
match bindings field by field; ANY / null matches everything, and the pattern type MATCH matches every binding that
would apply to a resource of exactly that name (the literal name, the `*` wildcard, and every prefix of it).

File: `<data_dir>/_kafkalite/security/acls.json`, `{"version": 1, "acls": [[type, name, pattern, principal, host,
operation, permission], ...]}` with Kafka's enum numbers, replaced atomically on every change. A store without a
data directory keeps its ACLs in memory. Not shared across processes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, Final

from kafkalite.security import documents


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Operation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD: Final = "*"
CLUSTER_NAME: Final = "kafka-cluster"


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    def applies_to(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this binding's resource pattern covers the resource `name` of `resource_type`."""
        if self.resource_type is not resource_type:
            return False
        if self.pattern_type is PatternType.LITERAL:
            return self.resource_name in (name, WILDCARD)
        return name.startswith(self.resource_name)


@dataclass(frozen=True, slots=True)
class AclFilter:
    """None for a string field, ANY for an enum field: matches every value."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: Operation
    permission: Permission

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and acl.resource_type is not self.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and acl.principal != self.principal:
            return False
        if self.host is not None and acl.host != self.host:
            return False
        if self.operation is not Operation.ANY and acl.operation is not self.operation:
            return False
        return self.permission is Permission.ANY or acl.permission is self.permission

    def _pattern_matches(self, acl: AclBinding) -> bool:
        if self.pattern_type is PatternType.MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type is PatternType.LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(acl.resource_name)
        if self.pattern_type is not PatternType.ANY and acl.pattern_type is not self.pattern_type:
            return False
        return self.resource_name is None or acl.resource_name == self.resource_name


class InvalidAclError(ValueError):
    """A binding or filter Kafka refuses with INVALID_REQUEST; the message says which field."""


def _enum(kind: type[enum.IntEnum], value: int, field_name: str) -> Any:
    try:
        member = kind(value)
    except ValueError:
        raise InvalidAclError(f"unknown {field_name} {value}") from None
    if member.name == "UNKNOWN":
        raise InvalidAclError(f"{field_name} UNKNOWN is not valid")
    return member


def binding(
    resource_type: int,
    resource_name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> AclBinding:
    """A binding from CreateAcls' fields, checked as Kafka checks them (`InvalidAclError` says what is wrong)."""
    kind = _enum(ResourceType, resource_type, "resource type")
    pattern = _enum(PatternType, pattern_type, "pattern type")
    op = _enum(Operation, operation, "operation")
    allow = _enum(Permission, permission, "permission type")
    if kind is ResourceType.ANY or pattern in (PatternType.ANY, PatternType.MATCH) or op is Operation.ANY:
        raise InvalidAclError("a binding cannot use ANY or MATCH: those are for filters")
    if allow is Permission.ANY:
        raise InvalidAclError("permission type must be ALLOW or DENY")
    if not resource_name:
        raise InvalidAclError("resource name must not be empty")
    if kind is ResourceType.CLUSTER and resource_name != CLUSTER_NAME:
        raise InvalidAclError(f"the only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    kind_of_principal, sep, name = principal.partition(":")
    if not sep or not kind_of_principal or not name:
        raise InvalidAclError(f"principal {principal!r} is not Type:name (e.g. User:alice)")
    if not host:
        raise InvalidAclError("host must not be empty ('*' is every host)")
    return AclBinding(kind, resource_name, pattern, principal, host, op, allow)


def acl_filter(
    resource_type: int,
    resource_name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclFilter:
    """A filter from DescribeAcls/DeleteAcls fields (`InvalidAclError` for UNKNOWN or out-of-range values)."""
    return AclFilter(
        _enum(ResourceType, resource_type, "resource type"),
        resource_name,
        _enum(PatternType, pattern_type, "pattern type"),
        principal,
        host,
        _enum(Operation, operation, "operation"),
        _enum(Permission, permission, "permission type"),
    )


class AclStore:
    """Every ACL binding, in creation order, persisted on each change."""

    def __init__(self, data_dir: Path | None, *, fsync: bool = True) -> None:
        self.path = documents.document_path(data_dir, "acls.json")
        self._fsync = fsync
        self._acls: list[AclBinding] = []
        self._load()

    def _load(self) -> None:
        def parse(rows: Any) -> list[AclBinding]:
            return [
                AclBinding(ResourceType(t), name, PatternType(p), principal, host, Operation(op), Permission(allow))
                for t, name, p, principal, host, op, allow in rows
            ]

        self._acls = documents.load(self.path, "acls", parse, "ACL") or []

    def _save(self, acls: list[AclBinding]) -> None:
        rows = [[int(v) if isinstance(v, enum.IntEnum) else v for v in astuple(acl)] for acl in acls]
        documents.save(self.path, "acls", rows, fsync=self._fsync)
        self._acls = acls

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(list(self._acls))

    def __len__(self) -> int:
        return len(self._acls)

    def add(self, bindings: Iterable[AclBinding]) -> None:
        """Add bindings (one that exists already is kept once), in one write."""
        acls = list(self._acls)
        for binding in bindings:
            if binding not in acls:
                acls.append(binding)
        self._save(acls)

    def remove(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Remove every binding some filter matches, in one write; per filter, the bindings it matched."""
        matched = [[acl for acl in self._acls if f.matches(acl)] for f in filters]
        gone = {acl for group in matched for acl in group}
        if gone:
            self._save([acl for acl in self._acls if acl not in gone])
        return matched

    def find(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [acl for acl in self._acls if acl_filter.matches(acl)]

    def for_resource(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        return [acl for acl in self._acls if acl.applies_to(resource_type, name)]
