"""The instance's network: a network namespace with a veth pair to this machine.

Inside, the instance has its loopback and one address on a /30 shared with this machine's end;
there is no default route, so nothing in it reaches PyPI or any other host, only what this
machine serves on its end of the pair (moto, MariaDB). Needs root and iproute2.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Instance:
    namespace: str
    host_ip: str  # this machine's end: where moto and MariaDB listen for the instance
    ip: str  # the instance's address: where its service listens

    def run(self, *args: str) -> list[str]:
        """``args`` as a command inside the instance's network."""
        return ["ip", "netns", "exec", self.namespace, *args]

    def pids(self) -> list[int]:
        done = subprocess.run(["ip", "netns", "pids", self.namespace], capture_output=True, text=True)
        return [int(pid) for pid in done.stdout.split()]


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"ip {' '.join(args)}: {done.stderr.strip()} (the rehearsal needs root and iproute2)")


@contextmanager
def instance_network() -> Iterator[Instance]:
    tag = uuid.uuid4().hex[:6]
    used = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True).stdout
    while True:  # a /30 in 10.200.0.0/13, in a /24 this machine has no address in
        a, b, c = random.randint(200, 207), random.randint(0, 255), random.randrange(0, 256, 4)
        if f" 10.{a}.{b}." not in used:
            break
    instance = Instance(f"nimbus-rh-{tag}", host_ip=f"10.{a}.{b}.{c + 1}", ip=f"10.{a}.{b}.{c + 2}")
    host_end, instance_end = f"nrh{tag}h", f"nrh{tag}i"  # interface names: 15 characters at most
    _ip("netns", "add", instance.namespace)
    try:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", instance_end)
        _ip("link", "set", instance_end, "netns", instance.namespace)
        _ip("addr", "add", f"{instance.host_ip}/30", "dev", host_end)
        _ip("link", "set", host_end, "up")
        _ip("-n", instance.namespace, "addr", "add", f"{instance.ip}/30", "dev", instance_end)
        _ip("-n", instance.namespace, "link", "set", instance_end, "up")
        _ip("-n", instance.namespace, "link", "set", "lo", "up")
        yield instance
    finally:
        for pid in instance.pids():  # what the rehearsal started in there and left running
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", instance.namespace], capture_output=True)  # and the veth pair
