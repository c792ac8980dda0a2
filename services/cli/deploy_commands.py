"""`nimbus deploy` and `nimbus destroy`: the AWS stack (docs/deploy.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from services.cli.parsing import leaf
from services.config import Settings

if TYPE_CHECKING:
    from services.deploy.driver import Deployer


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus deploy`` and ``nimbus destroy``: two verbs on one stack, each its own command."""
    for name, text, handler in (
        ("deploy", "create or update the AWS stack (infra/nimbus.yaml) and print the site URL", deploy),
        ("destroy", "delete the AWS stack; data bucket and final DB snapshot kept by default", destroy),
    ):
        cmd = commands.add_parser(name, help=text, description=f"{text[0].upper()}{text[1:]}.")
        cmd.add_argument("--stack-name", default="nimbus", help="CloudFormation stack name (default: nimbus)")
        cmd.add_argument("--region", help="AWS region (default: AWS_REGION or the profile's)")
        cmd.add_argument("--profile", help="AWS profile (default: AWS_PROFILE or the default chain)")
        cmd.add_argument("--endpoint-url", help="AWS API endpoint (an emulator such as moto)")
        if name == "deploy":
            cmd.add_argument(
                "--param",
                action="append",
                default=[],
                metavar="KEY=VALUE",
                help="template parameter, e.g. CrawlerCount=3 (repeatable; unnamed ones keep their values)",
            )
            cmd.add_argument(
                "--dist", type=Path, default=Path("build/dist"), help="where the release bundle is built"
            )
            cmd.add_argument(
                "--release",
                type=Path,
                metavar="DIR",
                help="deploy this release folder (`make release` built it) instead of building one",
            )
        else:
            cmd.add_argument(
                "--delete-data",
                action="store_true",
                help="also delete the data bucket and the final snapshot",
            )
        leaf(cmd, handler)


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
    from services.deploy.bundle import build_bundle, existing_bundle
    from services.deploy.stack import parse_overrides

    overrides = parse_overrides(args.param, template.parameter_names(template.load()))
    deployer = _deployer(args, settings)  # credentials first: no release built for nothing
    release = existing_bundle(args.release) if args.release else build_bundle(args.dist)
    result = deployer.deploy(release, overrides)
    for key, value in sorted(result.outputs.items()):
        print(f"{key}\t{value}")
    if {"BucketName", "Region", "DatabaseInstance"} <= set(result.outputs):
        from services.deploy.stack import settings_env

        print("# nimbus against this stack from inside its VPC: no password, each process reads its secret")
        for key, value in settings_env(result.outputs).items():
            print(f"export {key}={value}")
    return 0


def destroy(args: argparse.Namespace, settings: Settings) -> int:
    _deployer(args, settings).destroy(delete_data=args.delete_data)
    return 0
