"""Real schema registries for tests (Apicurio Registry, Confluent's API: aa.dev.registry), and
records serialized the way Confluent's serializers frame them: Avro through fastavro, Protobuf
through the official library.

:func:`running_registries` starts one registry per DC; each starts empty (in-memory storage),
so tests use subjects unique to them. A consumer "in NYC" decodes a record with NYC's
registry only: :func:`decode` fetches the writer's schema by the record's id from the registry
it is given.
"""

from __future__ import annotations

import contextlib
import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from aa.dev import cluster as devcluster
from aa.dev.registry import LocalRegistry, start_registry
from aa.schemas.wire import HEADER, MAGIC, header, schema_id

CONTENT = "application/vnd.schemaregistry.v1+json"


@contextlib.contextmanager
def running_registries(root: Path) -> Iterator[dict[str, LocalRegistry]]:
    """One running registry per DC (SF, NYC) under ``root``, stopped on exit."""
    started: dict[str, LocalRegistry] = {}
    try:
        for dc, port in zip(("SF", "NYC"), devcluster.free_ports(2), strict=True):
            started[dc] = start_registry(port, root / dc)
        yield started
    finally:
        for r in started.values():
            r.stop()


def call(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
    """One request to a registry's Confluent API (raises ``urllib.error.HTTPError`` on 4xx/5xx)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": CONTENT}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def register(url: str, subject: str, text: str, schema_type: str = "AVRO") -> int:
    body: dict[str, Any] = {"schema": text}
    if schema_type != "AVRO":
        body["schemaType"] = schema_type
    return int(call(f"{url}/subjects/{subject}/versions", "POST", body)["id"])


def fetch_schema(url: str, schema: int) -> tuple[str, str]:
    """(type, text) of the schema with id ``schema`` in the registry at ``url``."""
    answer = call(f"{url}/schemas/ids/{schema}")
    return str(answer.get("schemaType") or "AVRO"), str(answer["schema"])


# -- Avro --------------------------------------------------------------------------------------


def avro_schema(name: str, *fields: tuple[str, Any]) -> str:
    """An Avro record schema's JSON text; each field ``(name, type)`` or with a default."""
    out = []
    for f in fields:
        field: dict[str, Any] = {"name": f[0], "type": f[1]}
        if len(f) > 2:
            field["default"] = f[2]
        out.append(field)
    return json.dumps({"type": "record", "name": name, "namespace": "aa.test", "fields": out})


def avro_frame(schema: int, text: str, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(json.loads(text)), record)
    return header(schema) + buf.getvalue()


# -- Protobuf ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProtoType:
    """A Protobuf message type: its ``.proto`` text (what the registry holds) and the class the
    official library built from the same definition."""

    text: str
    cls: Any

    def frame(self, schema: int, **fields: Any) -> bytes:
        # message indexes: [0], the first message of the file, written as a single 0 byte
        return header(schema) + b"\x00" + self.cls(**fields).SerializeToString()

    def decode(self, data: bytes) -> Any:
        assert data[HEADER] == 0, "only the first message type is used here"
        message = self.cls()
        message.ParseFromString(data[HEADER + 1 :])
        return message


_PROTO_TYPES = {"string": 9, "int64": 3}  # FieldDescriptorProto.Type


def proto_type(package: str, name: str, *fields: tuple[str, str]) -> ProtoType:
    """A proto3 message ``name`` with ``fields`` (name, type) numbered from 1."""
    lines = [f"  {kind} {field} = {i};" for i, (field, kind) in enumerate(fields, 1)]
    text = f'syntax = "proto3";\npackage {package};\n\nmessage {name} {{\n' + "\n".join(lines)
    text += "\n}\n"
    fdp = descriptor_pb2.FileDescriptorProto(
        name=f"{package}/{name}.proto", package=package, syntax="proto3"
    )
    message = fdp.message_type.add(name=name)
    for i, (field, kind) in enumerate(fields, 1):
        message.field.add(name=field, number=i, type=_PROTO_TYPES[kind], label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{name}"))
    return ProtoType(text, cls)


# -- reading as a consumer in one DC would -----------------------------------------------------


def decode(url: str, data: bytes, protos: dict[str, ProtoType] | None = None) -> Any:
    """The value of a framed record, decoded with the schema its id names in the registry at
    ``url``: Avro as a dict; Protobuf as a message of the :class:`ProtoType` whose text the
    registry holds for that id (``protos``: by text)."""
    schema = schema_id(data)
    assert schema is not None, f"not framed: {data[:8]!r}"
    assert data[0] == MAGIC
    kind, text = fetch_schema(url, schema)
    if kind == "AVRO":
        return fastavro.schemaless_reader(
            io.BytesIO(data[HEADER:]), fastavro.parse_schema(json.loads(text)), None
        )
    assert kind == "PROTOBUF", kind
    proto = (protos or {}).get(text)
    assert proto is not None, f"schema {schema} at {url} is no type this test wrote: {text!r}"
    return proto.decode(data)


def has_schema(url: str, schema: int) -> bool:
    try:
        call(f"{url}/schemas/ids/{schema}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True
