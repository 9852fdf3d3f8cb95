"""Test doubles: stand-ins for servers that cannot run on these machines, which real clients accept."""
