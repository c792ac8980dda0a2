"""`nimbus tunnel`: the admin dashboard of a stack on the operator's own machine, through an SSM
port-forwarding session to a search instance.

The way to ``/admin`` when the stack has no certificate (the load balancer then answers 404
for it: the token must not cross the internet in clear). Needs the AWS CLI and its Session
Manager plugin on the operator's machine; nothing is opened on the instances (no inbound
rule, no SSH). The session runs in its own process group, so closing it ends the plugin
too and frees the port.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from services.cli import ssm
from services.cli.parsing import leaf, positive, seconds
from services.cli.remote import RemoteError
from services.config import Settings

DEFAULT_LOCAL_PORT = 8800  # not 8000: a local `nimbus serve` listens there
INSTANCE_PORT = 8000  # `nimbus serve` on the search instances (NIMBUS_PORT's default)
DOCUMENT = "AWS-StartPortForwardingSession"
AWS_MISSING = (
    "the AWS CLI (`aws`, version 2) is not on PATH: install it "
    "(https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html)"
)
PLUGIN_MISSING = (
    "the Session Manager plugin (`session-manager-plugin`) is not on PATH: the AWS CLI needs it for "
    "port forwarding; install it (https://docs.aws.amazon.com/systems-manager/latest/userguide/"
    "session-manager-working-with-install-plugin.html)"
)
STOP_GRACE_SECONDS = 5.0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus tunnel``."""
    tunnel_ = commands.add_parser(
        "tunnel",
        help="open an SSM tunnel to a search instance: the admin dashboard on http://127.0.0.1",
        description="Open an SSM port-forwarding session (aws ssm start-session) from a local port to "
        "port 8000 of a healthy search instance of the stack, wait until it answers /healthz, print the "
        "admin dashboard's local URL and keep the tunnel open until Ctrl-C. Needs the AWS CLI and the "
        "Session Manager plugin.",
    )
    tunnel_.add_argument("--stack", help=f"the stack (default: NIMBUS_STACK_NAME, else {ssm.DEFAULT_STACK})")
    tunnel_.add_argument(
        "--local-port",
        type=positive,
        default=DEFAULT_LOCAL_PORT,
        metavar="N",
        help=f"the local port (default {DEFAULT_LOCAL_PORT})",
    )
    tunnel_.add_argument("--region", help="AWS region (default: AWS_REGION or the profile's)")
    tunnel_.add_argument("--profile", help="AWS profile (default: AWS_PROFILE or the default chain)")
    tunnel_.add_argument(
        "--wait",
        type=seconds,
        default=60.0,
        metavar="S",
        help="seconds to wait for the tunnel to answer (default 60)",
    )
    leaf(tunnel_, tunnel, no_words="takes no arguments; give the stack with --stack")


def tools() -> str:
    """The AWS CLI's path, once it and the Session Manager plugin are both found."""
    aws = shutil.which("aws")
    if aws is None:
        raise RemoteError(AWS_MISSING)
    if shutil.which("session-manager-plugin") is None:
        raise RemoteError(PLUGIN_MISSING)
    return aws


def command_line(aws: str, instance_id: str, local_port: int, region: str, profile: str | None) -> list[str]:
    return [
        aws,
        "ssm",
        "start-session",
        "--target",
        instance_id,
        "--document-name",
        DOCUMENT,
        "--parameters",
        f"portNumber={INSTANCE_PORT},localPortNumber={local_port}",
        "--region",
        region,
        *(["--profile", profile] if profile else []),
    ]


def tunnel(args: argparse.Namespace, settings: Settings) -> int:
    port = args.local_port
    if port > 65535:
        raise RemoteError(f"--local-port {port}: give a port up to 65535")
    aws = tools()
    _check_free(port)
    session = ssm.boto_session(args, settings)
    stack = ssm.stack_name(args, settings)
    endpoint = settings.aws_endpoint_url
    instance = ssm.healthy_instance(
        session.client("ec2", endpoint_url=endpoint),
        session.client("autoscaling", endpoint_url=endpoint),
        stack,
        "search",
    )
    line = command_line(aws, instance.id, port, session.region_name, args.profile)
    print(f"opening a tunnel to {instance.id} (search, stack {stack}): {' '.join(line[1:])}", file=sys.stderr)
    # Its own process group: the plugin (the CLI's child) is stopped with it. Its chatter on stderr.
    proc = subprocess.Popen(
        line, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(), start_new_session=True
    )
    with _interrupt_on_sigterm():
        try:
            _wait_until_answering(proc, port, args.wait)
            print(f"admin dashboard: http://127.0.0.1:{port}/admin")
            print(f"for the CLI: export NIMBUS_ADMIN_URL=http://127.0.0.1:{port}/")
            print("the tunnel stays open until Ctrl-C", flush=True)
            code: int | None = proc.wait()
        except KeyboardInterrupt:
            code = None
        finally:
            _stop(proc)
    if code is None:
        print("tunnel closed", file=sys.stderr)
        return 0
    raise RemoteError(f"the session ended (aws exited with status {code}); run `nimbus tunnel` again")


def _check_free(port: int) -> None:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise RemoteError(f"127.0.0.1:{port} is in use: give another --local-port") from None


def _wait_until_answering(proc: subprocess.Popen[Any], port: int, timeout: float) -> None:
    url = f"http://127.0.0.1:{port}/healthz"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while True:
        code = proc.poll()
        if code is not None:
            raise RemoteError(
                f"aws ssm start-session ended (status {code}) before the tunnel answered; see above"
            )
        try:
            with opener.open(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass  # not forwarding yet
        if time.monotonic() > deadline:
            raise RemoteError(f"the tunnel did not answer {url} within {timeout:.0f} s")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[Any]) -> None:
    """End the session as Ctrl-C in its terminal would, then insist while any of its group is left."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the whole group is gone
            return
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_GRACE_SECONDS)


@contextmanager
def _interrupt_on_sigterm() -> Iterator[None]:
    """SIGTERM (a closing terminal, a supervisor) closes the tunnel as Ctrl-C does."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
