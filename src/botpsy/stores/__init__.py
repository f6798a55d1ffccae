"""Real local stores for the assistant's data, read and written atomically."""


class StoreError(Exception):
    """A store that cannot be read or written; the message says what to do. One type for every store.

    Defined here rather than in `stores/common.py` (which re-exports it) because the CLI's `main`
    catches it on every start, and common's file locks and pydantic would double the start-up cost.
    """
