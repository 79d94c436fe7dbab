"""Kafka ACLs for tests: deny one operation on one resource to the plaintext principal
(``User:ANONYMOUS``, what every test client is), and take the denial back.

aiokafka's admin client has no ACL calls, and Kafka 4.x no longer answers the request versions
aiokafka defines; CreateAcls and DeleteAcls v2 (Kafka 2.4 and later) are written here the way
:mod:`aa.kafka.topic_ids` writes Metadata v12. The session's local brokers run Kafka's
``StandardAuthorizer`` with ``allow.everyone.if.no.acl.found``, so a resource with no ACL is
open to all, as on a broker without an authorizer.
"""

from __future__ import annotations

from typing import Any, Literal

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    CompactArray,
    CompactString,
    Int8,
    Int16,
    Int32,
    Schema,
    TaggedFields,
)

Resource = Literal["topic", "group", "transactional_id"]
Operation = Literal["read", "write", "create", "describe", "describe_configs"]

RESOURCE_TYPES = {"topic": 2, "group": 3, "transactional_id": 5}
OPERATIONS = {"all": 2, "read": 3, "write": 4, "create": 5, "describe": 8, "describe_configs": 10}
LITERAL, DENY, ALLOW = 3, 2, 3
PRINCIPAL = "User:ANONYMOUS"
SECURITY_DISABLED = 54
"""The error a broker without an authorizer answers ACL requests with."""


_ACL_FIELDS = (  # an ACL, and a filter of ACLs, as CreateAcls / DeleteAcls v2 carry them
    ("resource_type", Int8),
    ("resource_name", CompactString("utf-8")),
    ("pattern_type", Int8),
    ("principal", CompactString("utf-8")),
    ("host", CompactString("utf-8")),
    ("operation", Int8),
    ("permission_type", Int8),
)
_TAGS = ("tags", TaggedFields)
_ERROR = (("error_code", Int16), ("error_message", CompactString("utf-8")))
_ACLS = Schema(("acls", CompactArray(*_ACL_FIELDS, _TAGS)), _TAGS)
_THROTTLE = ("throttle_time_ms", Int32)
_MATCHES = ("matching_acls", CompactArray(*_ERROR, *_ACL_FIELDS, _TAGS))


class _CreateAclsResponseV2(Response):  # type: ignore[misc]
    API_KEY = 30
    API_VERSION = 2
    SCHEMA = Schema(_THROTTLE, ("results", CompactArray(*_ERROR, _TAGS)), _TAGS)


class _CreateAclsRequestV2(RequestStruct):  # type: ignore[misc]
    API_KEY = 30
    API_VERSION = 2
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = _CreateAclsResponseV2
    SCHEMA = _ACLS


class _DeleteAclsResponseV2(Response):  # type: ignore[misc]
    API_KEY = 31
    API_VERSION = 2
    SCHEMA = Schema(_THROTTLE, ("filter_results", CompactArray(*_ERROR, _MATCHES, _TAGS)), _TAGS)


class _DeleteAclsRequestV2(RequestStruct):  # type: ignore[misc]
    API_KEY = 31
    API_VERSION = 2
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = _DeleteAclsResponseV2
    SCHEMA = _ACLS  # a filter has the fields of an ACL


class _CreateAcls(Request[_CreateAclsRequestV2]):  # type: ignore[misc]
    API_KEY = 30

    def __init__(self, acls: list[tuple[Any, ...]]) -> None:
        self._acls = acls

    def build(self, request_struct_class: type[Any]) -> Any:
        return _CreateAclsRequestV2([(*acl, {}) for acl in self._acls], {})


class _DeleteAcls(_CreateAcls):
    API_KEY = 31

    def build(self, request_struct_class: type[Any]) -> Any:
        return _DeleteAclsRequestV2([(*acl, {}) for acl in self._acls], {})


def _acls(resource: Resource, name: str, operation: Operation) -> list[tuple[Any, ...]]:
    """Every operation allowed to all, then ``operation`` denied to the test principal: once a
    resource has an ACL, what no ACL allows is denied."""
    kind = RESOURCE_TYPES[resource]
    return [
        (kind, name, LITERAL, "User:*", "*", OPERATIONS["all"], ALLOW),
        (kind, name, LITERAL, PRINCIPAL, "*", OPERATIONS[operation], DENY),
    ]


async def _send(bootstrap: str, request: _CreateAcls) -> Any:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        # the admin client's own send (random node); aiokafka has no public call
        response = await admin._send_request(request)
    finally:
        await admin.close()
    return response.to_object()


async def has_authorizer(bootstrap: str) -> bool:
    """Whether the brokers at ``bootstrap`` check ACLs (an external backend may not)."""
    out = await _send(bootstrap, _DeleteAcls([(2, "aa-no-such-topic", LITERAL, None, None, 1, 1)]))
    return all(r["error_code"] != SECURITY_DISABLED for r in out["filter_results"])  # fmt: skip


async def deny(bootstrap: str, resource: Resource, name: str, operation: Operation) -> None:
    """Deny ``operation`` on ``resource`` ``name`` to the test principal."""
    out = await _send(bootstrap, _CreateAcls(_acls(resource, name, operation)))
    errors = [r for r in out["results"] if r["error_code"]]
    assert not errors, errors


async def allow(bootstrap: str, resource: Resource, name: str, operation: Operation) -> None:
    """Take back :func:`deny` (the resource is open to all again)."""
    out = await _send(bootstrap, _DeleteAcls(_acls(resource, name, operation)))
    errors = [r for r in out["filter_results"] if r["error_code"]]
    assert not errors, errors
