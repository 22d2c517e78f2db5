"""Which lake_core this process runs: the release and a digest of the package's source.

Two hosts can both say ``0.1.0`` while running different code (a checkout a few commits apart, a
patched install); a Spark task writing files with one and a driver committing them with the other
is what the executors' version guard exists to stop. The digest covers every ``.py`` file of the
package (path and content), so it changes with any edit and is the same on every host that has the
same code, wherever it is installed.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__version__ = "0.1.0"

_PACKAGE = Path(__file__).resolve().parent


@functools.cache
def build_id() -> str:
    """``'0.1.0+<12 hex digits>'``: the release and the source digest (computed once per process,
    about 5 ms)."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return f"{__version__}+{digest.hexdigest()[:12]}"
