"""Field-level checks of k8s.io/apimachinery, with the messages the API server prints.

Sources (kubernetes/kubernetes, staging/src/k8s.io/apimachinery/):
  pkg/util/validation/validation.go      IsDNS1123Subdomain, IsDNS1123Label, IsDNS1035Label,
                                         IsQualifiedName, IsValidLabelValue, IsConfigMapKey
  pkg/util/validation/field/errors.go    Invalid / Required / NotSupported / NotFound / ... texts
  pkg/api/validation/path/name.go        IsValidPathSegmentName ('.', '..', '/', '%')
  pkg/api/resource/quantity.go           the quantity grammar and its error text
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = DNS1123_LABEL + r"(\." + DNS1123_LABEL + r")*"
DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE = r"(" + QUALIFIED_NAME + r")?"
CONFIG_KEY = r"[-._a-zA-Z0-9]+"
ENV_VAR_NAME = r"[-._a-zA-Z][-._a-zA-Z0-9]*"

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
    f"validation is '{DNS1123_SUBDOMAIN}')"
)
LABEL_1123_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    f"validation is '{DNS1123_LABEL}')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    f"regex used for validation is '{DNS1035_LABEL}')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    f"'12345', regex used for validation is '{LABEL_VALUE}')"
)
QUALIFIED_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{QUALIFIED_NAME}')"
)
QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
QUANTITY_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_SUFFIX = {
    "": 1,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}


def go_value(value: Any) -> str:
    """A value as field.Invalid prints it: strings quoted, numbers bare."""
    return (
        json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    )


class Errors:
    """A field.ErrorList: (path, reason type, message) in the order found."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.items.append((path, "FieldValueInvalid", f"Invalid value: {go_value(value)}: {detail}"))

    def required(self, path: str, detail: str = "") -> None:
        self.items.append((path, "FieldValueRequired", "Required value" + (f": {detail}" if detail else "")))

    def not_supported(self, path: str, value: Any, allowed: list[str]) -> None:
        listed = ", ".join(json.dumps(a) for a in allowed)
        self.items.append(
            (path, "FieldValueNotSupported", f"Unsupported value: {go_value(value)}: supported values: {listed}")
        )

    def not_found(self, path: str, value: Any) -> None:
        self.items.append((path, "FieldValueNotFound", f"Not found: {go_value(value)}"))

    def duplicate(self, path: str, value: Any) -> None:
        self.items.append((path, "FieldValueDuplicate", f"Duplicate value: {go_value(value)}"))

    def forbidden(self, path: str, detail: str) -> None:
        self.items.append((path, "FieldValueForbidden", f"Forbidden: {detail}"))

    def immutable(self, path: str, value: Any) -> None:
        # apimachinery/pkg/api/validation/generic.go: ValidateImmutableField -> FieldImmutableErrorMsg
        self.items.append((path, "FieldValueInvalid", f"Invalid value: {_short(value)}: field is immutable"))


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= 200 else text[:200] + "..."


def dns1123_subdomain(value: str) -> list[str]:
    out = []
    if len(value) > 253:
        out.append("must be no more than 253 characters")
    if not re.fullmatch(DNS1123_SUBDOMAIN, value):
        out.append(SUBDOMAIN_MSG)
    return out


def dns1123_label(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not re.fullmatch(DNS1123_LABEL, value):
        out.append(LABEL_1123_MSG)
    return out


def dns1035_label(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not re.fullmatch(DNS1035_LABEL, value):
        out.append(DNS1035_MSG)
    return out


def path_segment(value: str) -> list[str]:
    """apimachinery/pkg/api/validation/path/name.go: IsValidPathSegmentName (RBAC names)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def qualified_name(value: str) -> list[str]:
    """IsQualifiedName: [prefix/]name, the prefix a DNS subdomain, the name <= 63 characters."""
    prefix, slash, name = value.rpartition("/")
    out = []
    if slash and not prefix:
        out.append("prefix part must be non-empty")
    elif slash:
        out += ["prefix part " + m for m in dns1123_subdomain(prefix)]
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    if name and not re.fullmatch(QUALIFIED_NAME, name):
        out.append(QUALIFIED_MSG)
    return out


def label_value(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if not re.fullmatch(LABEL_VALUE, value):
        out.append(LABEL_VALUE_MSG)
    return out


def parse_quantity(value: Any) -> Decimal | None:
    """resource.ParseQuantity: the value as a number, or None where the server refuses it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    m = QUANTITY_RE.match(value)
    if not m:
        return None
    number, suffix = m.groups()
    try:
        base = Decimal(number)
    except InvalidOperation:
        return None
    if suffix in _SUFFIX:
        return base * _SUFFIX[suffix]
    exp = re.fullmatch(r"[eE]([-+]?[0-9]+)", suffix)
    if exp:
        return base * Decimal(10) ** int(exp.group(1))
    return None


def check_name(errs: Errors, meta: dict[str, Any], rule: Any, path: str = "metadata") -> None:
    """ValidateObjectMeta's name / generateName checks (apimachinery/pkg/api/validation/objectmeta.go).

    generateName is checked as a prefix: a trailing '-' is masked (names.go maskTrailingDash).
    """
    name, generate = meta.get("name"), meta.get("generateName")
    if generate:
        masked = generate[:-1] if generate.endswith("-") and len(generate) > 1 else generate
        for msg in rule(masked):
            errs.invalid(f"{path}.generateName", generate, msg)
    if name:
        for msg in rule(name):
            errs.invalid(f"{path}.name", name, msg)
    elif not generate:
        errs.required(f"{path}.name", "name or generateName is required")


def check_labels(errs: Errors, labels: Any, path: str) -> None:
    """ValidateLabels (apimachinery/pkg/apis/meta/v1/validation/validation.go)."""
    for key, value in (labels or {}).items():
        for msg in qualified_name(key):
            errs.invalid(path, key, msg)
        for msg in label_value(str(value)):
            errs.invalid(path, value, msg)


def check_annotations(errs: Errors, annotations: Any, path: str) -> None:
    """ValidateAnnotations: qualified-name keys, 256 KiB in all."""
    total = 0
    for key, value in (annotations or {}).items():
        for msg in qualified_name(key):
            errs.invalid(path, key, msg)
        total += len(key) + len(str(value))
    if total > 256 * 1024:
        errs.items.append((path, "FieldValueTooLong", "Too long: must have at most 262144 bytes"))
