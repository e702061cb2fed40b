"""``python -m spanscore.cli``: the same command line as the ``spanscore`` script."""

from spanscore.cli.commands import main

raise SystemExit(main())
