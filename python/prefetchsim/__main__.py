"""``python -m prefetchsim`` is the ``prefetchsim`` command."""

from .cli import main

raise SystemExit(main())
