"""Settings every test shares: no download attempts, no transformers chatter. Fakes are in
`tests/fakes.py`, the servers the integration tests start in `tests/servers.py`."""

from __future__ import annotations

import os

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
