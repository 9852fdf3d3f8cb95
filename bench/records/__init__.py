"""The run-record contract: its names and statuses, reading, placing and the training log."""
