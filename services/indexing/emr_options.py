"""The EMR runner's options: the cluster an index build asks mrjob for, and what its nodes install.

Roles, subnet and security groups come from the stack (``DeploySettings``); the code the
nodes run is the release bundle in S3 (``NIMBUS_RELEASE_URL``, the indexer instance) or,
on a developer's checkout, a wheel built from it. mrjob's own progress lines about the
cluster and its steps are passed on to the build's report (``show_emr_progress``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse

from services.config import Settings
from services.indexing.errors import JobError
from services.release import build_wheel

EMR_PYTHON = "python3.11"  # the Python the jobs are written for (Amazon Linux 2023 has it)
RELEASE_DIR = "/tmp/nimbus-release"  # where each EMR node copies the release bundle


def emr_args(settings: Settings, scratch: Path) -> list[str]:
    """mrjob's EMR options: where, with which roles and security groups, on which EMR
    release, with which code.

    The cluster's nodes install Python 3.11 and then the code: with
    ``NIMBUS_RELEASE_URL`` (the stack's indexer), exactly that release, from its bundle
    in S3 and with the network index off (``release_bootstrap``); without it (a developer's
    checkout, ``make index-emr``), this checkout's wheel, uploaded by mrjob (the ``#``
    suffix), its dependencies from PyPI, and the task zip (``--py-files``) on the path.
    With ``aws_endpoint_url`` set (moto in the tests) every client goes there,
    and mrjob polls without waiting or reading logs an emulator does not keep.
    """
    missing = [
        name
        for name, value in (
            ("NIMBUS_EMR_SERVICE_ROLE", settings.deploy.emr_service_role),
            ("NIMBUS_EMR_INSTANCE_PROFILE", settings.deploy.emr_instance_profile),
            ("AWS_REGION", settings.aws_region),
        )
        if not value
    ]
    if missing:
        raise JobError(
            f"the emr runner needs {', '.join(missing)}: take them from the stack's outputs "
            "(nimbus deploy prints EmrServiceRole, EmrInstanceProfile, EmrSubnetId, Region)"
        )
    bucket = urlparse(settings.blob_url).netloc
    args = [
        "--region", str(settings.aws_region),
        "--cloud-tmp-dir", f"s3://{bucket}/emr/tmp/",
        "--release-label", settings.index.emr_release_label,
        "--application", "Hadoop",
        "--iam-service-role", settings.deploy.emr_service_role,
        "--iam-instance-profile", settings.deploy.emr_instance_profile,
        "--instance-type", settings.index.emr_instance_type,
        "--num-core-instances", str(settings.index.emr_core_instances),
        "--python-bin", EMR_PYTHON,
        # From Amazon Linux's own repositories (in S3), not PyPI.
        "--bootstrap", f"sudo dnf install -y -q {EMR_PYTHON} {EMR_PYTHON}-pip",
        # The stack lets the indexer start and drive only clusters with both tags: ours, and
        # the one EMR's v2 service policies (and the stack's own service role) ask for.
        *_tags(),
        # One cluster for the whole build: every job of it (and each PageRank iteration) joins
        # the pool instead of paying a cluster's start-up; idle, it shuts itself down.
        "--pool-clusters", "--pool-name", f"nimbus-{scratch.name}", "--max-mins-idle", "10",
    ]  # fmt: skip
    if settings.deploy.release_url:
        check_release(settings)
        for command in release_bootstrap(settings.deploy.release_url, str(settings.aws_region)):
            args += ["--bootstrap", command]
        args.append("--no-bootstrap-mrjob")  # the release pins mrjob; nodes take that one
    else:
        built = sorted((scratch / "dist").glob("nimbus_search-*.whl"))  # one wheel per build
        wheel = built[-1] if built else build_wheel(scratch / "dist").wheel
        args += ["--bootstrap", f"sudo {EMR_PYTHON} -m pip install --quiet {wheel}#"]
    if settings.deploy.emr_subnet:
        args += ["--subnet", settings.deploy.emr_subnet]
    args += security_group_args(settings)
    if settings.aws_endpoint_url:
        url = settings.aws_endpoint_url
        args += ["--emr-endpoint", url, "--s3-endpoint", url, "--iam-endpoint", url, "--ec2-endpoint", url]
        args += ["--check-cluster-every", "1", "--cloud-fs-sync-secs", "0", "--no-read-logs"]
    return args


def release_bootstrap(release_url: str, region: str) -> list[str]:
    """The bootstrap commands that install a release bundle on an EMR node: copy it from S3,
    then pip with the network index off and every file's hash checked, so a node runs
    exactly the release (``requirements.txt`` pins every package, the project's own wheel
    too, each with its sha256) and never talks to PyPI. pip runs in the bundle's folder,
    where relative paths in ``requirements.txt`` point."""
    url, folder = release_url.rstrip("/") + "/", RELEASE_DIR
    return [
        f"aws s3 cp --recursive --only-show-errors --region {region} {url} {folder}/",
        f"cd {folder} && sudo {EMR_PYTHON} -m pip install --quiet --disable-pip-version-check "
        f"--no-index --find-links {folder}/wheelhouse --require-hashes -r {folder}/requirements.txt",
    ]


def check_release(settings: Settings) -> None:
    """Refuse a release URL whose bundle is not there before a cluster starts (minutes and
    money) only to fail its bootstrap."""
    from services.storage.blobs.blobstore import open_blobstore
    from services.storage.errors import StorageError

    url = settings.deploy.release_url
    if not url.startswith("s3://"):
        raise JobError(
            f"NIMBUS_RELEASE_URL={url!r}: use s3://bucket/releases/<version>-<digest>/ "
            "(nimbus deploy uploads the release there)"
        )
    try:
        found = open_blobstore(url, settings.aws_endpoint_url).exists("requirements.txt")
    except StorageError as exc:
        raise JobError(f"cannot read the release bundle at {url}: {exc}") from exc
    if not found:
        raise JobError(
            f"no release bundle at {url} (no requirements.txt there): upload it with `nimbus deploy` "
            "or fix NIMBUS_RELEASE_URL"
        )


def security_group_args(settings: Settings) -> list[str]:
    """The stack's EMR-managed security groups (mrjob 0.7.4 has no switches for them: its
    ``--extra-cluster-param`` sets RunJobFlow's ``Instances`` fields). Without them EMR
    creates its own groups in the VPC, which nothing deletes and which block the VPC's
    deletion. EMR takes the master and core/task groups together or neither."""
    deploy = settings.deploy
    if bool(deploy.emr_master_sg) != bool(deploy.emr_slave_sg):
        raise JobError(
            "EMR needs NIMBUS_EMR_MASTER_SG and NIMBUS_EMR_SLAVE_SG together (or neither): "
            "take both from the stack's outputs"
        )
    args: list[str] = []
    for field, value in (
        ("EmrManagedMasterSecurityGroup", deploy.emr_master_sg),
        ("EmrManagedSlaveSecurityGroup", deploy.emr_slave_sg),
        ("ServiceAccessSecurityGroup", deploy.emr_service_sg),  # needed in a private subnet
    ):
        if value:
            args += ["--extra-cluster-param", f"Instances.{field}={value}"]
    return args


class _EmrProgress(logging.Handler):
    """mrjob's EMR progress lines (cluster state, step state, elapsed), to the build's report."""

    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        self.say(f"    emr: {record.getMessage().strip()}")


def show_emr_progress(say: Callable[[str], None] | None) -> None:
    """While an EMR build runs, pass what mrjob reports of the cluster and its steps to
    ``say`` (the build's progress lines); None: stop."""
    logger = logging.getLogger("mrjob")
    for handler in [h for h in logger.handlers if isinstance(h, _EmrProgress)]:
        logger.removeHandler(handler)
    if say is not None:
        logger.addHandler(_EmrProgress(say))
        logger.setLevel(logging.INFO)


# Tags every index-build cluster carries (the stack's IAM conditions name them).
CLUSTER_TAGS = {"nimbus": "index-build", "for-use-with-amazon-emr-managed-policies": "true"}


def _tags() -> list[str]:
    return [arg for key, value in CLUSTER_TAGS.items() for arg in ("--tag", f"{key}={value}")]
