"""Reading a request body kubectl sends as `application/vnd.kubernetes.protobuf`.

kubectl's typed clients (`kubectl create job`, `kubectl create secret generic`) encode
built-in kinds in Kubernetes' protobuf envelope: the magic `k8s\\x00`, then a runtime.Unknown
whose `raw` is the kind's message (https://kubernetes.io/docs/reference/using-api/api-concepts/#protobuf-encoding).
A real server accepts it for every built-in kind, and client-go never falls back from
protobuf to JSON (it does so only from CBOR), so the double decodes it into the JSON object
the rest of the double works on, with the field numbers in protobuf_fields.json
(protobuf_table.py). CRDs and OpenShift's kinds get the 415 a real server gives kinds
without protobuf.

What the wire cannot say without Go's types, the double reads as Go's JSON encoder writes it
for the fields kubectl sets: an empty string, a false and a zero number are absent (omitempty;
an explicit 0 of a pointer field such as `backoffLimit: 0` is lost), a zero Time is null.
"""

from __future__ import annotations

import base64
import datetime
import json
from functools import cache
from pathlib import Path
from typing import Any

from tests.doubles.apiserver.errors import ApiError

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
ACCEPTED = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
TABLE = Path(__file__).with_name("protobuf_fields.json")
META = "k8s.io.apimachinery.pkg.apis.meta.v1."
PACKAGES = {
    "batch/v1": "k8s.io.api.batch.v1.",
    "v1": "k8s.io.api.core.v1.",
    "authorization.k8s.io/v1": "k8s.io.api.authorization.v1.",
}


@cache
def _messages() -> dict[str, dict[str, list[str]]]:
    return json.loads(TABLE.read_text())


def unsupported(content_type: str) -> ApiError:
    """The 415 of k8s.io/apiserver handlers (negotiation.NewUnsupportedMediaTypeError)."""
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {ACCEPTED}",
        {"kind": content_type},
    )


def request_body(raw: bytes, content_type: str, kind: str) -> Any:
    """A create/update/delete body by its Content-Type: JSON (or none), protobuf, else 415."""
    media = content_type.split(";")[0].strip().lower()
    if not raw:
        return None
    if media == CONTENT_TYPE:
        return decode_body(raw, kind)
    if media not in ("", "application/json", "*/*"):
        raise unsupported(media)  # application/cbor too: CBOR serving is off by default in 1.37
    try:
        return json.loads(raw)
    except ValueError:
        raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format") from None


def decode_body(raw: bytes, kind: str) -> dict[str, Any]:
    """The object a protobuf body holds, as JSON would carry it; 415 for kinds without protobuf."""
    if not raw.startswith(MAGIC):
        raise ApiError(400, "BadRequest", "provided object is not a protobuf message: missing the k8s magic prefix")
    envelope = _message(raw[len(MAGIC) :], "k8s.io.apimachinery.pkg.runtime.Unknown")
    type_meta = envelope.get("typeMeta") or {}
    api_version, sent_kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    message = PACKAGES.get(api_version, "\0") + sent_kind
    if message not in _messages() or sent_kind != kind:
        raise unsupported(CONTENT_TYPE)
    obj = _message(base64.b64decode(envelope.get("raw", "")), message)
    return {"apiVersion": api_version, "kind": sent_kind, **obj}


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i += 1
        if byte < 0x80:
            return value, i
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(number, wire type, value): varints as ints, length-delimited as bytes."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, i = data[i : i + size], i + size
        else:
            raise ApiError(400, "BadRequest", f"unsupported protobuf wire type {wire}")
        out.append((number, wire, value))
    return out


def _scalar(typ: str, value: Any) -> Any:
    if typ == "string":
        return value.decode()
    if typ == "bytes":
        return base64.b64encode(value).decode()
    if typ == "bool":
        return bool(value)
    if typ in ("int32", "int64"):
        return value - (1 << 64) if value >= 1 << 63 else value
    raise ApiError(400, "BadRequest", f"unsupported protobuf type {typ}")


def _value(typ: str, value: Any) -> Any:
    if typ.startswith("k8s."):
        return _message(value, typ)
    return _scalar(typ, value)


def _empty(value: Any) -> bool:
    """What Go's JSON encoder leaves out of the fields kubectl sets (omitempty), or writes as null."""
    return value is None or (not isinstance(value, dict) and value in ("", 0, False))


def _message(data: bytes, name: str) -> Any:
    special = _SPECIAL.get(name)
    if special:
        return special(data)
    spec = _messages()[name]
    out: dict[str, Any] = {}
    for number, _, value in _fields(data):
        field = spec.get(str(number))
        if field is None:
            continue  # a field newer than the table: dropped, as an old server drops it
        key, typ, label = field
        if label == "map":
            entry = {n: v for n, _, v in _fields(value)}
            item_key = entry.get(1, b"").decode()
            out.setdefault(key, {})[item_key] = _value(typ, entry.get(2, b"" if typ != "bool" else 0))
        elif label == "repeated":
            if typ in ("int32", "int64") and isinstance(value, bytes):  # packed
                out.setdefault(key, []).extend(v for _, _, v in _fields_packed(value))
            else:
                out.setdefault(key, []).append(_value(typ, value))
        else:
            decoded = _value(typ, value)
            if not _empty(decoded):
                out[key] = decoded
    return out


def _fields_packed(data: bytes) -> list[tuple[int, int, int]]:
    out, i = [], 0
    while i < len(data):
        value, i = _varint(data, i)
        out.append((0, 0, value))
    return out


def _time(data: bytes, micro: bool = False) -> str | None:
    parts = {n: v for n, _, v in _fields(data)}
    seconds, nanos = parts.get(1, 0), parts.get(2, 0)
    if not seconds and not nanos:
        return None
    stamp = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    if micro:
        return stamp.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def _int_or_string(data: bytes) -> int | str:
    parts = {n: v for n, _, v in _fields(data)}
    return parts.get(3, b"").decode() if parts.get(1) == 1 else _scalar("int32", parts.get(2, 0))


def _raw_json(data: bytes) -> Any:
    raw = {n: v for n, _, v in _fields(data)}.get(1, b"")
    return json.loads(raw) if raw else {}


_SPECIAL = {
    META + "Time": _time,
    META + "MicroTime": lambda d: _time(d, micro=True),
    "k8s.io.apimachinery.pkg.api.resource.Quantity": lambda d: {n: v for n, _, v in _fields(d)}.get(1, b"").decode(),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    "k8s.io.apimachinery.pkg.runtime.RawExtension": _raw_json,
    META + "FieldsV1": _raw_json,
    "k8s.io.api.authorization.v1.ExtraValue": lambda d: [v.decode() for n, _, v in _fields(d) if n == 1],
}
