"""``python -m toolkit.cli``: the ``toolkit`` command without its console script."""

from toolkit.cli import main

raise SystemExit(main())
