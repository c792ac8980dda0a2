"""The deploy package's errors: one root, translated at the edges (CLI exit codes)."""

from __future__ import annotations

from services.errors import NimbusError


class DeployError(NimbusError):
    """A deployment could not be made or torn down; the message says why and what to do."""


class CredentialsError(DeployError):
    """No AWS credentials or region: the message names the variables to set."""

    exit_code = 2


class TemplateError(DeployError):
    """The template fails its checks (cfn-lint) or a parameter is malformed."""

    exit_code = 2


class StackFailedError(DeployError):
    """CloudFormation rolled the stack back; the message lists the failed resources' reasons."""
