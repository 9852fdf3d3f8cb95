"""Units a mapped file may name, and how each converts to the record's units.

Byte prefixes are ambiguous in the wild: sysstat prints `kB` meaning 1024 bytes (its
`kbmemused` and `rxkB/s`, see https://github.com/sysstat/sysstat), while a spreadsheet's
"GB" may mean 10^9 or 1024^3. Atlas reads a bare `kB`/`KB`/`MB`/`GB`/`TB` with the
sysstat meaning (powers of 1024), as the sar importer does, and says so in a warning;
`KiB`..`TiB` (IEC) and `kB_SI`..`TB_SI` (powers of 1000) are unambiguous and silence it.
"""

from __future__ import annotations

_BINARY = {"kB": 1024, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
_SI = {"kB_SI": 1e3, "MB_SI": 1e6, "GB_SI": 1e9, "TB_SI": 1e12}
_IEC = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}

# Units by family, as multiples of the family's first unit.
UNIT_FACTORS: dict[str, dict[str, float]] = {
    "bytes": {"B": 1, **_BINARY, **_SI, **_IEC},
    "rate": {"B/s": 1, **{f"{u}/s": f for u, f in {**_BINARY, **_SI, **_IEC}.items()}},
    "percent": {"%": 1, "fraction": 100},
    "ratio": {"ratio": 1, "fraction": 1, "%": 0.01},  # DCGM's profiling fields (0-1)
    "power": {"W": 1, "mW": 1e-3, "kW": 1e3},
    "energy": {"mJ": 1, "J": 1e3, "kJ": 1e6, "Wh": 3.6e6, "kWh": 3.6e9},
    "clock": {"MHz": 1, "GHz": 1e3, "kHz": 1e-3},
    "temperature": {"C": 1},
    "cores": {"cores": 1},
}


def unit_factor(unit: str, target: str) -> float | None:
    """Multiply a value in `unit` by this to get `target`; None when they do not convert."""
    for table in UNIT_FACTORS.values():
        if unit in table and target in table:
            return table[unit] / table[target]
    return None


def ambiguity(unit: str) -> str | None:
    """A warning for a unit whose meaning Atlas had to choose, None for an unambiguous one."""
    base, per_s = unit.removesuffix("/s"), "/s" if unit.endswith("/s") else ""
    if base not in _BINARY:
        return None
    iec = {"kB": "KiB", "KB": "KiB"}.get(base, base[0] + "iB")
    si = "kB" if base == "KB" else base
    return (
        f"unit {unit!r} read with the sysstat meaning, 1 {base} = {_BINARY[base]:,} bytes; "
        f"write {iec}{per_s} to say so, or {si}_SI{per_s} for {int(_SI[si + '_SI']):,} bytes"
    )
