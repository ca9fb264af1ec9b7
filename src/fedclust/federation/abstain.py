"""A centre's answer when it cannot, or will not, meet a protocol's disclosure rule."""

from __future__ import annotations

from typing import NamedTuple


class Abstain(NamedTuple):
    """A centre's answer instead of a message; ``reason`` travels to the server (no numbers)."""

    reason: str
