"""DCGM field names old and new: one field ID, one record column, whatever a tool calls it.

DCGM 4.6 renamed its field macros (the IDs and `dcgmi dmon` tags did not change), so a
dcgm-exporter built on 4.6 names its series `DCGM_FI_DEV_GPU_UTIL_RATIO` where an older
one says `DCGM_FI_DEV_GPU_UTIL`. A record keeps the pre-4.6 names (its columns are a
contract, bench.records.columns), and every importer maps both spellings onto them here.

Source of the table: NVIDIA/DCGM `dcgmlib/dcgm_fields.h` (the new `#define`s and, under
`DCGM_DEPRECATED`, the old names as aliases) and `dcgmlib/src/dcgm_fields.cpp` (each
field's type, unit and dmon tag), https://github.com/NVIDIA/DCGM.

Units did not change with the names: field 203 `DCGM_FI_DEV_GPU_UTIL_RATIO` is still an
integer 0-100 (%) read from NVML's utilisation rates (dcgmlib/src/DcgmCacheManager.cpp),
despite its `_RATIO` suffix, while the profiling fields 1001-1005 were always doubles
0.0-1.0, which their record columns keep (unit "ratio"). A field whose name never
changed needs no row here: it is taken under its own name, and `dcgmi dmon` tags come
from the catalogue rows (bench/importers/dcgm.py), so a new column is not written twice.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DcgmField:
    """One DCGM field: `column` is the record's name (pre-4.6), `new` the 4.6 name."""

    field_id: int
    column: str
    new: str
    tag: str  # `dcgmi dmon` column tag


FIELDS: tuple[DcgmField, ...] = (
    DcgmField(100, "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_SM_CLOCK", "SMCLK"),
    DcgmField(150, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", "TMPTR"),
    DcgmField(155, "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS", "POWER"),
    DcgmField(156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "TOTEC"),
    DcgmField(203, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO", "GPUTL"),
    DcgmField(204, "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "MCUTL"),
    DcgmField(250, "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_TOTAL", "FBTTL"),
    DcgmField(251, "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_FREE", "FBFRE"),
    DcgmField(252, "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED", "FBUSD"),
    DcgmField(253, "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_FB_RESERVED", "FBRSV"),
    DcgmField(1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "GRACT"),
    DcgmField(1002, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO", "SMACT"),
    DcgmField(1003, "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", "SMOCC"),
    DcgmField(1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO", "TENSO"),
    DcgmField(1005, "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO", "DRAMA"),
)

# Either spelling -> the record's column name.
BY_NAME: dict[str, str] = {name: f.column for f in FIELDS for name in (f.column, f.new)}
BY_TAG: dict[str, str] = {f.tag: f.column for f in FIELDS}


def record_field(name: str) -> str:
    """The record's name of a DCGM field named either way (`..._GPU_UTIL_RATIO` -> `..._GPU_UTIL`);
    a name this table does not know comes back unchanged."""
    return BY_NAME.get(name, name)


def record_column(name: str) -> str:
    """A samples column with a 4.6 field name as the record names it
    (`gpu0_DCGM_FI_DEV_BOARD_POWER_WATTS` -> `gpu0_DCGM_FI_DEV_POWER_USAGE`); others unchanged."""
    head, sep, field_name = name.partition("_")
    if sep and head.startswith("gpu") and head[3:].isdigit():
        return f"{head}_{record_field(field_name)}"
    return name
