"""ACLs through real clients on SASL_SSL/SCRAM-SHA-512: refused exactly where Kafka refuses, allowed exactly what
the ACLs allow; deny beats allow; prefixed patterns; ACLs survive a restart."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import confluent_kafka.admin as ck_admin
import kafka
import kafka.admin
import kafka.errors
import pytest
from certs import Pki
from secured_broker import USERS, Secured, secured_broker
from secured_clients import AioKafka, Confluent, Credentials, KafkaPython, Kcat, kafka_python_config, new_group

pytestmark = [pytest.mark.interop, pytest.mark.timeout(180)]

AUTHORIZER = {"authorizer.class.name": "kafkalite", "super.users": "User:admin"}
TOPIC_AUTHORIZATION_FAILED = confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
GROUP_AUTHORIZATION_FAILED = confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
PRODUCE = 0  # the Produce API key


def creds(secured: Secured, user: str) -> Credentials:
    return Credentials("SASL_SSL", secured.pki.ca_file, "SCRAM-SHA-512", user, USERS[user])


def config(secured: Secured, user: str) -> dict[str, str]:
    return Confluent(secured.bootstrap("SASL_SSL"), creds(secured, user)).config


def admin(secured: Secured) -> ck_admin.AdminClient:
    return ck_admin.AdminClient(config(secured, "admin"))


def acl(
    name: str,
    principal: str,
    operation: ck_admin.AclOperation,
    *,
    resource: ck_admin.ResourceType = ck_admin.ResourceType.TOPIC,
    pattern: ck_admin.ResourcePatternType = ck_admin.ResourcePatternType.LITERAL,
    permission: ck_admin.AclPermissionType = ck_admin.AclPermissionType.ALLOW,
) -> ck_admin.AclBinding:
    return ck_admin.AclBinding(resource, name, pattern, principal, "*", operation, permission)


def grant(secured: Secured, *bindings: ck_admin.AclBinding) -> None:
    client = admin(secured)  # held until the results are in: a collected client cancels its calls
    for future in client.create_acls(list(bindings)).values():
        future.result(30)


def create_topic(secured: Secured, topic: str) -> None:
    client = admin(secured)
    client.create_topics([ck_admin.NewTopic(topic, 1)])[topic].result(30)


def produce_error(secured: Secured, user: str, topic: str) -> int | None:
    """The error code of one produce by `user` (None: delivered)."""
    producer = confluent_kafka.Producer({**config(secured, user), "acks": "all", "message.timeout.ms": 10000})
    outcome: list[confluent_kafka.KafkaError | None] = []
    producer.produce(topic, b"v", on_delivery=lambda e, _m: outcome.append(e))
    producer.flush(30)
    assert len(outcome) == 1
    return None if outcome[0] is None else int(outcome[0].code())


def consume_error(secured: Secured, user: str, topic: str, group: str) -> int | None:
    """The first error a group consumer gets reading `topic` (None: it read a message)."""
    consumer = confluent_kafka.Consumer(
        {**config(secured, user), "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    consumer.subscribe([topic])
    try:
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is None:
                continue
            return None if message.error() is None else int(message.error().code())
    finally:
        consumer.close()
    raise AssertionError("neither a message nor an error within 30 s")


def topic_metadata_error(secured: Secured, user: str, topic: str) -> int:
    client = ck_admin.AdminClient(config(secured, user))
    metadata = client.list_topics(topic, timeout=30)
    error = metadata.topics[topic].error
    return 0 if error is None else int(error.code())


@pytest.fixture(scope="module")
def authorized(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    with secured_broker(pki, tmp_path_factory.mktemp("acl-data"), **AUTHORIZER) as broker:
        yield broker


def _topic(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


def test_no_acls_means_topic_authorization_failed_for_produce_fetch_and_describe(authorized: Secured) -> None:
    topic = _topic("secret-")
    create_topic(authorized, topic)
    assert produce_error(authorized, "admin", topic) is None
    assert produce_error(authorized, "alice", topic) == TOPIC_AUTHORIZATION_FAILED
    grant(
        authorized,
        acl(
            "reader-group-",
            "User:alice",
            ck_admin.AclOperation.READ,
            resource=ck_admin.ResourceType.GROUP,
            pattern=ck_admin.ResourcePatternType.PREFIXED,
        ),
    )
    assert consume_error(authorized, "alice", topic, "reader-group-1") == TOPIC_AUTHORIZATION_FAILED
    assert topic_metadata_error(authorized, "alice", topic) == TOPIC_AUTHORIZATION_FAILED
    everything = ck_admin.AdminClient(config(authorized, "alice")).list_topics(timeout=30)
    assert topic not in everything.topics


def test_acls_allow_exactly_what_they_name(authorized: Secured) -> None:
    topic = _topic("orders-")
    create_topic(authorized, topic)  # bob may write, not create
    grant(authorized, acl(topic, "User:bob", ck_admin.AclOperation.WRITE))
    assert produce_error(authorized, "bob", topic) is None  # WRITE implies DESCRIBE (metadata) as in Kafka
    assert topic_metadata_error(authorized, "bob", topic) == 0
    group = new_group()
    assert consume_error(authorized, "bob", topic, group) in (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED)
    grant(authorized, acl(topic, "User:bob", ck_admin.AclOperation.READ))
    assert consume_error(authorized, "bob", topic, group) == GROUP_AUTHORIZATION_FAILED
    grant(authorized, acl(group, "User:bob", ck_admin.AclOperation.READ, resource=ck_admin.ResourceType.GROUP))
    assert consume_error(authorized, "bob", topic, group) is None
    assert produce_error(authorized, "alice", topic) == TOPIC_AUTHORIZATION_FAILED


def test_deny_beats_allow_and_prefixes_match(authorized: Secured) -> None:
    prefix = _topic("team-") + "-"
    grant(
        authorized,
        acl(prefix, "User:*", ck_admin.AclOperation.ALL, pattern=ck_admin.ResourcePatternType.PREFIXED),
        acl(prefix + "locked", "User:alice", ck_admin.AclOperation.WRITE, permission=ck_admin.AclPermissionType.DENY),
    )
    assert produce_error(authorized, "alice", prefix + "open") is None
    assert produce_error(authorized, "bob", prefix + "locked") is None
    assert produce_error(authorized, "alice", prefix + "locked") == TOPIC_AUTHORIZATION_FAILED
    assert produce_error(authorized, "alice", "x" + prefix) == TOPIC_AUTHORIZATION_FAILED


def test_only_super_users_and_cluster_alter_manage_acls(authorized: Secured) -> None:
    alice = ck_admin.AdminClient(config(authorized, "alice"))
    future = alice.create_acls([acl("t", "User:alice", ck_admin.AclOperation.ALL)])
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        next(iter(future.values())).result(30)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.CLUSTER_AUTHORIZATION_FAILED
    everyone_of_alice = ck_admin.AclBindingFilter(
        ck_admin.ResourceType.ANY,
        None,
        ck_admin.ResourcePatternType.ANY,
        "User:alice",
        None,
        ck_admin.AclOperation.ANY,
        ck_admin.AclPermissionType.ANY,
    )
    client = admin(authorized)
    described = client.describe_acls(everyone_of_alice).result(30)
    assert described
    assert all(b.principal == "User:alice" for b in described)
    # librdkafka drops DescribeAcls' error code (alice gets an empty list); kafka-python reports it
    alice_py = kafka.admin.KafkaAdminClient(
        **kafka_python_config(authorized.bootstrap("SASL_SSL"), creds(authorized, "alice"))
    )
    try:
        anything = kafka.admin.ACLFilter(
            principal=None,
            host="*",
            operation=kafka.admin.ACLOperation.ANY,
            permission_type=kafka.admin.ACLPermissionType.ANY,
            resource_pattern=kafka.admin.ResourcePatternFilter(
                kafka.admin.ResourceType.ANY, None, kafka.admin.ACLResourcePatternType.ANY
            ),
        )
        with pytest.raises(kafka.errors.ClusterAuthorizationFailedError):
            alice_py.describe_acls(anything)
    finally:
        alice_py.close()


@pytest.mark.parametrize("client", [KafkaPython, AioKafka, Kcat], ids=lambda c: c.name)
def test_other_clients_are_refused_and_allowed_by_the_same_acls(authorized: Secured, client: type) -> None:
    allowed, forbidden = _topic("open-"), _topic("closed-")
    create_topic(authorized, allowed)
    grant(
        authorized,
        acl(allowed, "User:bob", ck_admin.AclOperation.WRITE),
        acl(allowed, "User:bob", ck_admin.AclOperation.READ),
    )
    c = client(authorized.bootstrap("SASL_SSL"), creds(authorized, "bob"))
    create_topic(authorized, forbidden)
    c.produce(allowed, [b"fine"])
    with pytest.raises((AssertionError, Exception)) as refused:
        c.produce(forbidden, [b"nope"])
    assert "uthoriz" in str(refused.value) or "TOPIC_AUTHORIZATION" in str(refused.value).upper(), refused.value


def test_an_acks_all_produce_for_an_allowed_and_a_refused_topic_is_answered_for_each(authorized: Secured) -> None:
    """One acks=all Produce request for two topics, bob allowed to write one and only to describe the other: the
    authorizer narrows the request to the allowed topic, whose record is written, made durable by an fsync round
    (this broker fsyncs, the default) and acknowledged, and the other topic is answered TOPIC_AUTHORIZATION_FAILED
    in the same answer.
    kafka-python drains every partition of a ready broker into one request, so a linger puts both in one."""
    allowed, refused = _topic("open-"), _topic("closed-")
    for topic in (allowed, refused):
        create_topic(authorized, topic)
    grant(
        authorized,
        acl(allowed, "User:bob", ck_admin.AclOperation.WRITE),
        acl(refused, "User:bob", ck_admin.AclOperation.DESCRIBE),
    )
    stats = authorized.server.server.broker.stats
    produce = stats.requests.api(PRODUCE, "Produce")
    requests, refusals, rounds = produce.requests, produce.errors.get(TOPIC_AUTHORIZATION_FAILED, 0), stats.sync.rounds
    producer = kafka.KafkaProducer(
        **kafka_python_config(authorized.bootstrap("SASL_SSL"), creds(authorized, "bob")),
        acks="all",
        linger_ms=300,
        retries=0,
    )
    try:
        for topic in (allowed, refused):  # metadata first, so that both records go out in one Produce request
            producer.partitions_for(topic)
        kept, refusal = producer.send(allowed, b"kept"), producer.send(refused, b"nope")
        assert kept.get(30).offset == 0
        with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
            refusal.get(30)
    finally:
        producer.close(10)
    assert produce.requests - requests == 1, "both topics went in one Produce request"
    assert produce.errors.get(TOPIC_AUTHORIZATION_FAILED, 0) - refusals == 1
    assert stats.sync.rounds > rounds
    consumer = confluent_kafka.Consumer({**config(authorized, "admin"), "group.id": new_group()})
    try:
        consumer.assign([confluent_kafka.TopicPartition(allowed, 0, 0)])
        message = consumer.poll(30)
        assert message is not None
        assert message.error() is None
        assert message.value() == b"kept"
    finally:
        consumer.close()


def test_acls_survive_restart(pki: Pki, tmp_path: Path) -> None:
    topic = _topic("kept-")
    with secured_broker(pki, tmp_path, **AUTHORIZER) as first:
        create_topic(first, topic)
        grant(first, acl(topic, "User:alice", ck_admin.AclOperation.WRITE))
        assert produce_error(first, "alice", topic) is None
    with secured_broker(pki, tmp_path, **AUTHORIZER) as second:
        assert produce_error(second, "alice", topic) is None
        assert produce_error(second, "bob", topic) == TOPIC_AUTHORIZATION_FAILED


def test_list_groups_shows_only_groups_the_principal_may_describe(authorized: Secured) -> None:
    topic = _topic("groups-")
    create_topic(authorized, topic)
    assert produce_error(authorized, "admin", topic) is None
    mine, hidden = new_group(), new_group()
    for group in (mine, hidden):
        assert consume_error(authorized, "admin", topic, group) is None
    grant(authorized, acl(mine, "User:alice", ck_admin.AclOperation.DESCRIBE, resource=ck_admin.ResourceType.GROUP))
    alice = ck_admin.AdminClient(config(authorized, "alice"))
    listed = {g.group_id for g in alice.list_consumer_groups().result(30).valid}
    assert mine in listed
    assert hidden not in listed
    client = admin(authorized)
    everything = {g.group_id for g in client.list_consumer_groups().result(30).valid}
    assert {mine, hidden} <= everything
