"""The example packages' tests use the session fixture ``push_package`` of
tests/conftest.py (installed by ``make setup``, or by the session when missing)."""
