"""`nimbus deploy` and `nimbus destroy`: the AWS stack (docs/deploy.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from services.config import Settings

if TYPE_CHECKING:
    from services.deploy.driver import Deployer


def _deployer(args: argparse.Namespace, settings: Settings) -> Deployer:
    from services.deploy.driver import Deployer, Target

    target = Target(
        args.stack_name,
        region=args.region or settings.aws_region,
        profile=args.profile,
        endpoint_url=args.endpoint_url or settings.aws_endpoint_url,
    )
    return Deployer(target)


def deploy(args: argparse.Namespace, settings: Settings) -> int:
    from services.deploy import template
    from services.deploy.stack import parse_overrides
    from services.release import build_wheel

    overrides = parse_overrides(args.param, template.parameter_names(template.load()))
    deployer = _deployer(args, settings)  # credentials first: no wheel built for nothing
    result = deployer.deploy(build_wheel(args.dist), overrides)
    for key, value in sorted(result.outputs.items()):
        print(f"{key}\t{value}")
    if {"BucketName", "Region", "DatabaseInstance"} <= set(result.outputs):
        from services.deploy.stack import settings_env

        print("# nimbus against this stack (e.g. `make index-emr`): no password, it is read from RDS")
        for key, value in settings_env(result.outputs).items():
            print(f"export {key}={value}")
    return 0


def destroy(args: argparse.Namespace, settings: Settings) -> int:
    _deployer(args, settings).destroy(delete_data=args.delete_data)
    return 0
