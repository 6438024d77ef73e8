"""``python -m prefetchsim`` is the ``prefetchsim`` command."""

from .cli import main

# Guarded: sweep workers are spawned processes, which import the parent's main module again.
if __name__ == "__main__":
    raise SystemExit(main())
