"""The demo's errors: one root, translated at the edges (CLI exit codes)."""

from __future__ import annotations

from services.errors import NimbusError


class DemoError(NimbusError):
    """The demo cannot run as asked; the message says what to do."""


class SampleDataMissingError(DemoError):
    """The sample web's source files are not where ``--data`` points (an installed wheel
    carries none; a checkout has them in ``data/``)."""

    exit_code = 2
