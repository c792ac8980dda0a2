"""The operator side's errors: what the dashboard, the admin API and the CLI's operator
commands refuse. The API answers them as 400 with their message; the CLI prints the same
message and exits 2."""

from __future__ import annotations

from services.errors import NimbusError


class AdminError(NimbusError):
    """Something the operator asked cannot be done as asked."""


class OperatorInputError(AdminError):
    """A URL, host name or reason the operator gave is refused (the message says which and
    why): 400 over HTTP unless ``status`` says more exactly (403: not the dashboard's form)."""

    exit_code = 2

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class FormTooLargeError(OperatorInputError):
    """A dashboard form larger than the dashboard reads (413; the message says the limit and
    how to seed more)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, status=413)
