"""The eval package's errors: one root, translated at the edges (CLI exit codes)."""

from __future__ import annotations

from services.errors import NimbusError


class EvalError(NimbusError):
    """A judged collection cannot be evaluated as asked; the message says what to do."""


class CollectionError(EvalError, ValueError):
    """A collection file is missing or malformed; the message names file and line."""

    exit_code = 2
