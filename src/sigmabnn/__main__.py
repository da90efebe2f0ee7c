"""``python -m sigmabnn`` runs the command-line interface."""

from sigmabnn.cli.main import main

raise SystemExit(main())
