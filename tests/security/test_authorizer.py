"""The authorizer's decisions (deny wins, implied operations, prefixes, wildcards, super users, no-ACL default) and
Kafka's operation table covering every API key; ACL filters; principals from certificate subjects."""

from __future__ import annotations

from pathlib import Path

import pytest
from kio.index import load_request_schema

from kafkalite.security.acls import (
    AclBinding,
    AclFilter,
    AclStore,
    InvalidAclError,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    binding,
)
from kafkalite.security.authorizer import Authorizer
from kafkalite.security.operations import RULES
from kafkalite.security.principal import Principal, subject_name
from kafkalite.security.settings import SecuritySettings
from kafkalite.server.dispatch import supported_ranges

ALICE = Principal("User", "alice")
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = Permission.ALLOW, Permission.DENY


def acl(name: str, op: Operation, permission: Permission = ALLOW, **kw: object) -> AclBinding:
    fields: dict[str, object] = {
        "resource_type": TOPIC,
        "resource_name": name,
        "pattern_type": LITERAL,
        "principal": "User:alice",
        "host": "*",
        "operation": op,
        "permission": permission,
    }
    fields.update(kw)
    return AclBinding(**fields)  # type: ignore[arg-type]


def authorizer(*bindings: AclBinding, **settings: object) -> Authorizer:
    store = AclStore(None)
    store.add(bindings)
    return Authorizer(SecuritySettings(authorizer_enabled=True, **settings), store)  # type: ignore[arg-type]


def allowed(a: Authorizer, op: Operation, name: str, kind: ResourceType = TOPIC, host: str = "10.0.0.1") -> bool:
    return a.authorize(ALICE, host, op, kind, name)


def test_nothing_is_allowed_without_acls_unless_configured() -> None:
    assert not allowed(authorizer(), Operation.READ, "t")
    assert allowed(authorizer(allow_everyone_if_no_acl_found=True), Operation.READ, "t")
    other = acl("t", Operation.READ, principal="User:bob")
    assert not allowed(authorizer(other, allow_everyone_if_no_acl_found=True), Operation.READ, "t")


def test_deny_beats_allow() -> None:
    a = authorizer(acl("t", Operation.ALL), acl("t", Operation.WRITE, DENY))
    assert allowed(a, Operation.READ, "t")
    assert not allowed(a, Operation.WRITE, "t")
    everything_denied = authorizer(acl("t", Operation.READ), acl("*", Operation.ALL, DENY))
    assert not allowed(everything_denied, Operation.READ, "t")


def test_implied_operations_are_kafkas() -> None:
    for op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        assert allowed(authorizer(acl("t", op)), Operation.DESCRIBE, "t")
    assert allowed(authorizer(acl("t", Operation.ALTER_CONFIGS)), Operation.DESCRIBE_CONFIGS, "t")
    assert not allowed(authorizer(acl("t", Operation.DESCRIBE)), Operation.READ, "t")
    assert not allowed(
        authorizer(acl("t", Operation.READ), acl("t", Operation.DESCRIBE, DENY)), Operation.DESCRIBE, "t"
    )


def test_prefixes_wildcards_hosts_and_principals() -> None:
    a = authorizer(
        acl("team-", Operation.WRITE, pattern_type=PREFIXED),
        acl("*", Operation.READ, principal="User:*"),
        acl("local", Operation.DELETE, host="127.0.0.1"),
    )
    assert allowed(a, Operation.WRITE, "team-a")
    assert not allowed(a, Operation.WRITE, "tea")
    assert allowed(a, Operation.READ, "anything")
    assert allowed(a, Operation.DELETE, "local", host="127.0.0.1")
    assert not allowed(a, Operation.DELETE, "local", host="10.0.0.9")


def test_super_users_and_a_disabled_authorizer_allow_everything() -> None:
    assert allowed(authorizer(acl("t", Operation.ALL, DENY), super_users=frozenset({"User:alice"})), Operation.ALL, "t")
    disabled = Authorizer(SecuritySettings(), AclStore(None))
    assert disabled.authorize(ALICE, "h", Operation.ALTER, CLUSTER, "kafka-cluster")


def test_operation_table_covers_every_api_key_kafka_defines_and_every_served_one() -> None:
    defined = set()
    for api_key in range(0, 100):
        for version in range(0, 20):
            try:
                load_request_schema(api_key, version)
            except Exception:
                continue
            defined.add(api_key)
            break
    assert defined <= set(RULES), sorted(defined - set(RULES))
    assert {api_key for api_key, _, _ in supported_ranges()} <= set(RULES)


def test_item_rules_name_real_request_and_response_fields() -> None:
    """Every per-entry rule's request list and response list exist in some version Kafka defines."""
    from kio.index import load_response_schema

    for api_key, rules in RULES.items():
        for rule in rules:
            if rule.items is None:
                continue
            requests, responses = set(), set()
            for version in range(0, 20):
                try:
                    requests |= set(load_request_schema(api_key, version).__dataclass_fields__)
                    responses |= set(load_response_schema(api_key, version).__dataclass_fields__)
                except Exception:
                    continue
            assert rule.items.field in requests, (api_key, rule.items.field)
            assert rule.items.answers in responses, (api_key, rule.items.answers)


def test_acl_validation_is_kafkas() -> None:
    with pytest.raises(InvalidAclError, match="kafka-cluster"):
        binding(CLUSTER, "other", LITERAL, "User:a", "*", Operation.ALTER, ALLOW)
    with pytest.raises(InvalidAclError, match="Type:name"):
        binding(TOPIC, "t", LITERAL, "alice", "*", Operation.READ, ALLOW)
    with pytest.raises(InvalidAclError, match="ANY or MATCH"):
        binding(TOPIC, "t", PatternType.MATCH, "User:a", "*", Operation.READ, ALLOW)
    with pytest.raises(InvalidAclError, match="unknown operation 99"):
        binding(TOPIC, "t", LITERAL, "User:a", "*", 99, ALLOW)
    with pytest.raises(InvalidAclError, match="UNKNOWN"):
        binding(0, "t", LITERAL, "User:a", "*", Operation.READ, ALLOW)


def test_match_filters_find_every_binding_that_applies() -> None:
    bindings = [
        acl("orders", Operation.READ),
        acl("ord", Operation.READ, pattern_type=PREFIXED),
        acl("*", Operation.READ),
        acl("other", Operation.READ),
    ]
    f = AclFilter(TOPIC, "orders", PatternType.MATCH, None, None, Operation.ANY, Permission.ANY)
    assert [b for b in bindings if f.matches(b)] == bindings[:3]
    literal = AclFilter(ResourceType.ANY, "orders", PatternType.LITERAL, None, None, Operation.ANY, Permission.ANY)
    assert [b for b in bindings if literal.matches(b)] == bindings[:1]


def test_acl_store_persists_and_removes(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    store.add([acl("a", Operation.READ), acl("b", Operation.WRITE), acl("a", Operation.READ)])
    assert len(store) == 2
    reopened = AclStore(tmp_path)
    assert list(reopened) == list(store)
    any_read = AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, Operation.READ, Permission.ANY)
    assert reopened.remove([any_read]) == [[acl("a", Operation.READ)]]
    assert list(AclStore(tmp_path)) == [acl("b", Operation.WRITE)]


def test_certificate_subjects_become_rfc2253_principals() -> None:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    subject = (
        (("countryName", "NL"),),
        (("organizationName", "Example, Inc."),),
        (("organizationalUnitName", "ops"), ("commonName", "client+1")),
    )
    name = x509.Name(
        [
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.COUNTRY_NAME, "NL")]),
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Example, Inc.")]),
            x509.RelativeDistinguishedName(
                [
                    x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "ops"),
                    x509.NameAttribute(NameOID.COMMON_NAME, "client+1"),
                ]
            ),
        ]
    )
    assert subject_name(subject) == "OU=ops+CN=client\\+1,O=Example\\, Inc.,C=NL"
    assert subject_name(subject).split(",")[1:] == name.rfc4514_string().split(",")[1:]
