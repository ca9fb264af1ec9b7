"""User-facing errors: every message names what is wrong, where, and how to fix it."""

from __future__ import annotations


class FedclustError(Exception):
    """Base error. ``str(err)`` is a complete, human-readable message.

    Parameters
    ----------
    what: what went wrong (one sentence).
    where: the file, config key or dataset concerned.
    fix: what the user can do about it.
    """

    def __init__(self, what: str, where: str | None = None, fix: str | None = None):
        self.what, self.where, self.fix = what, where, fix
        parts = [what]
        if where:
            parts.append(f"  where: {where}")
        if fix:
            parts.append(f"  fix:   {fix}")
        super().__init__("\n".join(parts))


class InputDataError(FedclustError):
    """Bad input data: missing column, NaNs where none are allowed, non-integer counts, ..."""


class ConfigError(FedclustError):
    """Bad configuration: unknown key, wrong type, impossible combination."""


class DownloadError(FedclustError):
    """A dataset could not be fetched or failed its checksum."""


class DisclosureError(FedclustError):
    """A message would cross the privacy boundary against its protocol's disclosure rule
    (see :mod:`fedclust.federation.ledger`). Names the center, the protocol and the rule."""

    def __init__(
        self, what: str, center: str, protocol: str, rule: str, fix: str | None = None
    ) -> None:
        self.center, self.protocol, self.rule = center, protocol, rule
        super().__init__(
            f"{what} [rule: {rule}]", where=f"center {center!r}, protocol {protocol!r}", fix=fix
        )


class BoundaryTypeError(DisclosureError, TypeError):
    """The numeric-only rule: a message field is not a numeric array / number (also a
    ``TypeError``, as the ledger raised before it enforced protocols)."""
