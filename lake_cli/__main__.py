"""``python -m lake_cli``: the ``lake`` command."""

from lake_cli.main import main

raise SystemExit(main())
