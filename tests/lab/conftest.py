"""The lab's tests use the harness's fixtures."""

from tests.unit.experiments.conftest import make_context  # noqa: F401 - a fixture
