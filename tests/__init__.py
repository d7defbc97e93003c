"""The test suite, a package: its helper modules are imported as tests.NAME (conftest.py)."""
