"""The authorizer: one `authorize(principal, host, operation, resource)` and the per-request check built on it.

Decision for one (principal, host, operation, resource), as Kafka's StandardAuthorizer decides:
1. authorizer off (`authorizer.class.name` empty): allowed;
2. a super user (`super.users`): allowed;
3. the bindings that apply to the resource (literal name, `*`, or a prefix of it) and match the principal (or
   `User:*`) and host (or `*`): any DENY for the operation (or ALL) refuses — deny wins;
4. any ALLOW for the operation (or ALL) allows; an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and
   an ALLOW of ALTER_CONFIGS allows DESCRIBE_CONFIGS (Kafka's implied operations);
5. no binding at all applies to the resource: `allow.everyone.if.no.acl.found` decides; otherwise refused.

`check_request` applies `operations.RULES` (Kafka's table of what each API needs) to one decoded request and
returns a `Verdict`: refused as a whole (with the Kafka error code), or the items to refuse one by one, or the
answers to hide from a listing. The server's dispatch calls it once per request and shapes the answer; no handler
checks ACLs itself. Pure and synchronous.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from kafkalite.security.acls import CLUSTER_NAME, AclStore, Operation, Permission, ResourceType
from kafkalite.security.operations import RULES, Items, Rule, item_name
from kafkalite.security.principal import Principal
from kafkalite.security.settings import SecuritySettings

AUTHORIZATION_ERRORS: Final = {
    ResourceType.TOPIC: 29,  # TOPIC_AUTHORIZATION_FAILED
    ResourceType.GROUP: 30,  # GROUP_AUTHORIZATION_FAILED
    ResourceType.CLUSTER: 31,  # CLUSTER_AUTHORIZATION_FAILED
    ResourceType.TRANSACTIONAL_ID: 53,  # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    ResourceType.DELEGATION_TOKEN: 65,  # DELEGATION_TOKEN_AUTHORIZATION_FAILED
    ResourceType.USER: 31,
}

_IMPLIES: Final = {
    Operation.DESCRIBE: (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER),
    Operation.DESCRIBE_CONFIGS: (Operation.ALTER_CONFIGS,),
}

TopicNames = Callable[[Any], str | None]
"""Resolves a topic id (uuid) to its name, None when no such topic exists."""


@dataclass(slots=True)
class Verdict:
    """What the authorizer says about one request.

    `refused`: the Kafka error code refusing the whole request (None: not refused as a whole). `items`: per request
    list field, the names refused there with their error code. `hidden`: listings (response field, resource type,
    operation) whose entries the principal may not see.
    """

    refused: int | None = None
    items: dict[Items, dict[str, int]] = field(default_factory=dict)
    hidden: list[tuple[str, ResourceType, Operation]] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return self.refused is None and not self.items and not self.hidden and not self.disabled


ALLOWED: Final = Verdict()


class Authorizer:
    def __init__(self, settings: SecuritySettings, acls: AclStore) -> None:
        self.settings = settings
        self.acls = acls

    @property
    def enabled(self) -> bool:
        return self.settings.authorizer_enabled

    def authorize(
        self, principal: Principal, host: str, operation: Operation, resource_type: ResourceType, name: str
    ) -> bool:
        """Whether `principal` connected from `host` may do `operation` on the resource (see the module docstring)."""
        if not self.enabled or str(principal) in self.settings.super_users:
            return True
        bindings = self.acls.for_resource(resource_type, name)
        if not bindings:
            return self.settings.allow_everyone_if_no_acl_found
        who = (str(principal), "User:*")
        mine = [b for b in bindings if b.principal in who and b.host in (host, "*")]
        if any(b.permission is Permission.DENY and b.operation in (operation, Operation.ALL) for b in mine):
            return False
        allowing = (operation, Operation.ALL, *_IMPLIES.get(operation, ()))
        return any(b.permission is Permission.ALLOW and b.operation in allowing for b in mine)

    def check_request(
        self, principal: Principal, host: str, api_key: int, request: Any, topic_names: TopicNames
    ) -> Verdict:
        """Apply the API's rules from Kafka's operation table to `request`."""
        if not self.enabled or str(principal) in self.settings.super_users:
            return ALLOWED
        rules = RULES.get(api_key)
        if rules is None:  # an API Kafka does not define: nobody but a super user
            return Verdict(refused=AUTHORIZATION_ERRORS[ResourceType.CLUSTER])
        verdict = Verdict()
        for rule in rules:
            if rule.when is not None and not rule.when(request):
                continue
            if rule.listing is not None:
                if not self._cluster_allows(principal, host, rule.or_cluster):
                    verdict.hidden.append((rule.listing, rule.resource, rule.operation))
                continue
            if rule.items is not None:
                self._check_items(principal, host, rule, request, topic_names, verdict)
            elif self._check_whole(principal, host, rule, request):
                continue
            elif rule.disables is not None:
                verdict.disabled.append(rule.disables)
            else:
                return Verdict(refused=AUTHORIZATION_ERRORS[rule.resource])
        return verdict

    def _cluster_allows(self, principal: Principal, host: str, operation: Operation | None) -> bool:
        return operation is not None and self.authorize(principal, host, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def _check_whole(self, principal: Principal, host: str, rule: Rule, request: Any) -> bool:
        if self._cluster_allows(principal, host, rule.or_cluster):
            return True
        if rule.or_any_topic is not None and self.authorize_any(principal, host, rule.or_any_topic, ResourceType.TOPIC):
            return True
        if rule.resource is ResourceType.CLUSTER or rule.name is None:
            return self.authorize(principal, host, rule.operation, ResourceType.CLUSTER, CLUSTER_NAME)
        names = rule.name(request)
        if isinstance(names, str) or names is None:
            names = [] if names is None else [names]
        return all(self.authorize(principal, host, rule.operation, rule.resource, n) for n in names)

    def authorize_any(self, principal: Principal, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether `operation` is allowed on at least one resource of `resource_type` (Kafka's
        authorizeByResourceType): some ALLOW binding matches and no DENY covers every name (`*` or prefix "")."""
        if not self.enabled or str(principal) in self.settings.super_users:
            return True
        who = (str(principal), "User:*")
        mine = [
            b for b in self.acls if b.resource_type is resource_type and b.principal in who and b.host in (host, "*")
        ]
        ops = (operation, Operation.ALL)
        if any(
            b.permission is Permission.DENY and b.operation in ops and b.applies_to(resource_type, "") for b in mine
        ):
            return False
        return any(b.permission is Permission.ALLOW and b.operation in ops for b in mine)

    def _check_items(
        self, principal: Principal, host: str, rule: Rule, request: Any, topic_names: TopicNames, verdict: Verdict
    ) -> None:
        assert rule.items is not None
        if self._cluster_allows(principal, host, rule.or_cluster):
            return
        code = AUTHORIZATION_ERRORS[rule.resource]
        for item in rule.items.of(request):
            name = item_name(item, topic_names)
            checked = CLUSTER_NAME if rule.resource is ResourceType.CLUSTER else name
            if checked is not None and not self.authorize(principal, host, rule.operation, rule.resource, checked):
                verdict.items.setdefault(rule.items, {})[name or ""] = code
