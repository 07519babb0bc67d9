"""Every served version of the security APIs over raw bytes: each request decodes, each response is complete.

SaslHandshake 0-1, SaslAuthenticate 0-2, CreateAcls/DescribeAcls/DeleteAcls 1-3, DescribeUserScramCredentials 0,
AlterUserScramCredentials 0; and the error answers each gives for bad input.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import scramp
from authorized_server import ALICE_PLAIN, authorized_server, connect
from wire_client import WireClient

from kafkalite.protocol.wire import ApiKey
from kafkalite.server import KafkaServer
from kafkalite.server.dispatch import supported_ranges

pytestmark = pytest.mark.timeout(60)

RANGES = {api_key: list(range(lo, hi + 1)) for api_key, lo, hi in supported_ranges()}
INVALID_REQUEST = 42


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[KafkaServer]:
    async with authorized_server(tmp_path) as served:
        yield served


@pytest.mark.parametrize("version", RANGES[ApiKey.SASL_HANDSHAKE])
async def test_sasl_handshake(server: KafkaServer, version: int) -> None:
    client = await connect(server, "SASL_PLAINTEXT")
    answer = await client.request(17, version, mechanism="PLAIN")
    assert (answer.error_code, set(answer.mechanisms)) == (0, {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})
    plaintext = await connect(server)
    assert (await plaintext.request(17, version, mechanism="PLAIN")).error_code == 34  # ILLEGAL_SASL_STATE
    await client.close()
    await plaintext.close()


@pytest.mark.parametrize("version", RANGES[ApiKey.SASL_AUTHENTICATE])
async def test_sasl_authenticate(server: KafkaServer, version: int) -> None:
    client = await connect(server, "SASL_PLAINTEXT")
    assert (await client.request(17, 1, mechanism="PLAIN")).error_code == 0
    answer = await client.request(36, version, auth_bytes=ALICE_PLAIN)
    assert (answer.error_code, answer.error_message, answer.auth_bytes) == (0, None, b"")
    await client.close()


def _creation(client: WireClient, version: int, name: str, **fields: object) -> object:
    values: dict[str, object] = {
        "resource_type": 2,
        "resource_name": name,
        "resource_pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    values.update(fields)
    return client.nested(30, version, "AclCreation", **values)


@pytest.mark.parametrize("version", RANGES[ApiKey.CREATE_ACLS])
async def test_create_describe_and_delete_acls(server: KafkaServer, version: int) -> None:
    client = await connect(server)
    created = await client.request(
        30,
        version,
        creations=[
            _creation(client, version, f"t{version}"),
            _creation(client, version, "x", principal="alice"),
            _creation(client, version, "x", resource_type=4),
        ],
    )
    assert [r.error_code for r in created.results] == [0, INVALID_REQUEST, INVALID_REQUEST]
    assert "Type:name" in created.results[1].error_message
    described = await client.request(
        29,
        version,
        resource_type_filter=2,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter="User:alice",
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    assert described.error_code == 0
    assert [(r.resource_name, [a.operation for a in r.acls]) for r in described.resources] == [(f"t{version}", [3])]
    bad_filter = await client.request(
        29,
        version,
        resource_type_filter=0,
        resource_name_filter=None,
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    assert bad_filter.error_code == INVALID_REQUEST
    delete_filter = client.nested(
        31,
        version,
        "DeleteAclsFilter",
        resource_type_filter=1,
        resource_name_filter=f"t{version}",
        pattern_type_filter=1,
        principal_filter=None,
        host_filter=None,
        operation=1,
        permission_type=1,
    )
    deleted = await client.request(31, version, filters=[delete_filter])
    assert [[m.resource_name for m in r.matching_acls] for r in deleted.filter_results] == [[f"t{version}"]]
    await client.close()


def _salted(password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)


@pytest.mark.parametrize("version", RANGES[ApiKey.ALTER_USER_SCRAM_CREDENTIALS])
async def test_alter_and_describe_user_scram_credentials(server: KafkaServer, version: int) -> None:
    client = await connect(server)
    salt = b"0123456789abcdef"
    upsert = client.nested(
        51,
        version,
        "ScramCredentialUpsertion",
        name="carol",
        mechanism=2,
        iterations=8192,
        salt=salt,
        salted_password=_salted("carol-secret", salt, 8192),
    )
    weak = client.nested(
        51,
        version,
        "ScramCredentialUpsertion",
        name="dave",
        mechanism=2,
        iterations=10,
        salt=salt,
        salted_password=b"x",
    )
    missing = client.nested(51, version, "ScramCredentialDeletion", name="erin", mechanism=1)
    altered = await client.request(51, version, deletions=[missing], upsertions=[upsert, weak])
    assert {r.user: r.error_code for r in altered.results} == {"erin": 91, "carol": 0, "dave": 93}

    described = await client.request(
        50, version, users=[client.nested(50, version, "UserName", name=n) for n in ("carol", "dave")]
    )
    by_user = {r.user: r for r in described.results}
    assert [(c.mechanism, c.iterations) for c in by_user["carol"].credential_infos] == [(2, 8192)]
    assert by_user["dave"].error_code == 91
    everyone = await client.request(50, version, users=None)
    assert [r.user for r in everyone.results] == ["carol"]  # alice has only PLAIN: not a SCRAM credential

    login = await connect(server, "SASL_PLAINTEXT")
    assert (await login.scram_login("carol", "carol-secret")).error_code == 0
    for c in (client, login):
        await c.close()


def test_salted_password_matches_scramp() -> None:
    """The test's client-side salting is SCRAM's Hi(): the broker can log carol in only if it is."""
    salt = b"0123456789abcdef"
    _, stored_key, _, _ = scramp.ScramMechanism("SCRAM-SHA-512").make_auth_info("pw", 4096, salt)
    client_key = hmac.new(_salted("pw", salt, 4096), b"Client Key", "sha512").digest()
    assert hashlib.sha512(client_key).digest() == stored_key
