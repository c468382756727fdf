"""Named exceptions of the crawler.

Errors the user can act on carry the input that caused them; the CLI prints
them as one line and exits with status 2, without a traceback.
"""
from __future__ import annotations

__all__ = ["AbcError", "ConfigError", "SeedError", "ResolveError", "AssignmentError", "UrlFilterError"]


class AbcError(Exception):
    """Base class of errors reported to the user as one line (exit status 2)."""


class ConfigError(AbcError):
    """A bad setting: unknown key, wrong type or out-of-range value."""


class SeedError(AbcError):
    """The seeds file is missing, unreadable or holds no usable seed."""


class ResolveError(AbcError):
    """A bad line in a ``--resolve`` file."""


class AssignmentError(AbcError):
    """The page-to-rank assignment cannot be used (e.g. a part vector made for another K)."""


class UrlFilterError(AbcError):
    """A bad line in a ``--url-filter`` file (the message names ``FILE:LINE``)."""
