"""Secrets and variables checked before CI writes them into an ssh config or a kubeconfig.

`make ci-ssh` writes `User $SSH_USER` into ~/.ssh/config and `make ci-kubeconfig` writes
`server: "$OPENSHIFT_SERVER"` into a kubeconfig: a value with a newline or a quote would add
lines of its own (a `ProxyCommand` that runs on the runner, `insecure-skip-tls-verify: true`).
Each value must match its strict shape first, or the step stops with one line naming the
variable (never its value: it may be a secret).

Usage: python -m bench.gitops.ci_values ssh HOST | kubeconfig   (values from the environment)
"""

from __future__ import annotations

import os
import re
import sys

SHAPES: dict[str, tuple[re.Pattern[str], str]] = {
    "SSH_USER": (re.compile(r"[a-z_][a-z0-9_.-]{0,31}"), "a POSIX user name (a-z, 0-9, _ . -)"),
    "SSH_HOST": (re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,252})"), "a host name or address"),
    "OPENSHIFT_SERVER": (
        re.compile(r"https://[A-Za-z0-9]([A-Za-z0-9.-]{0,252})(:[0-9]{1,5})?/?"),
        "https://HOST[:PORT] (no path, quotes or blanks)",
    ),
    "OPENSHIFT_TOKEN": (re.compile(r"[A-Za-z0-9._~+/=-]{8,4096}"), "a bearer token (no blanks or quotes)"),
    "OPENSHIFT_CA_DATA": (re.compile(r"[A-Za-z0-9+/=]{0,65536}"), "base64 (the CA's PEM, base64-encoded)"),
}
# A known_hosts line: optional marker, host pattern(s), key type, base64 key, optional comment.
_KNOWN_HOST = re.compile(r"(@(cert-authority|revoked) )?[^\s@][^\s]* [a-z0-9@.-]+ [A-Za-z0-9+/=]+( [^\r\x00]*)?")


def problems(names: list[str], environ: dict[str, str] | os._Environ[str] = os.environ) -> list[str]:
    out = []
    for name in names:
        value = environ.get(name, "")
        if name == "SSH_KNOWN_HOSTS":
            lines = [line for line in value.split("\n") if line.strip() and not line.startswith("#")]
            if not lines or not all(_KNOWN_HOST.fullmatch(line) for line in lines):
                out.append(f"{name} must be known_hosts lines (HOST KEYTYPE BASE64KEY), one per line")
            continue
        pattern, shape = SHAPES[name]
        if value and not pattern.fullmatch(value):
            out.append(f"{name} must be {shape}; refused before it is written into any file")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["ssh"] and len(args) == 2:
        environ = dict(os.environ, SSH_HOST=args[1])
        found = problems(["SSH_USER", "SSH_HOST", "SSH_KNOWN_HOSTS"], environ)
    elif args == ["kubeconfig"]:
        found = problems(["OPENSHIFT_SERVER", "OPENSHIFT_TOKEN", "OPENSHIFT_CA_DATA"])
    else:
        print("usage: python -m bench.gitops.ci_values ssh HOST | kubeconfig", file=sys.stderr)
        return 2
    for line in found:
        print(f"ci-values: {line}", file=sys.stderr)
    return 2 if found else 0


if __name__ == "__main__":
    sys.exit(main())
