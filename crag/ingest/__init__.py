"""`crag ingest`: files and pages read, cut into chunks and stored.

The package is also the function `crag.ingest(...)` (`crag.ingest.api.ingest`): `crag.ingest` names this
package as soon as any of its modules is imported, so the name cannot be a function beside it; a callable
module keeps one name for both (Python allows a module's class to be replaced, for such uses)."""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from crag.ingest.api import ingest  # noqa: PLC0415 - the package's modules import it first

        return ingest(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
