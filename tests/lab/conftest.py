"""The lab's tests use the harness's fixtures."""

from tests.unit.backends.test_gguf import fake_model, marker  # noqa: F401 - fixtures of lab.pin_models' test
from tests.unit.experiments.conftest import make_context  # noqa: F401 - a fixture
