"""The operator side's errors: what the dashboard, the admin API and the CLI's operator
commands refuse. The API answers them as 400 with their message; the CLI prints the same
message and exits 2."""

from __future__ import annotations

from services.errors import NimbusError


class AdminError(NimbusError):
    """Something the operator asked cannot be done as asked."""


class OperatorInputError(AdminError):
    """A URL, host name or reason the operator gave is refused (the message says which and why)."""

    exit_code = 2
