"""``python -m orchestration.demo``: the embedded pipeline demo (see :mod:`orchestration.demo.pipeline`)."""

import sys

from orchestration.demo.pipeline import main

sys.exit(main())
