"""Atlas bench: record, collect, compare, chart, report and publish training runs."""

__version__ = "0.1.0"
