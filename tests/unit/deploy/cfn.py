"""Reading infra/nimbus.yaml in tests: resources by type, user data, and policies with their
intrinsic functions replaced by plausible values, so that they read as plain IAM policies."""

from __future__ import annotations

import re
from typing import Any

ACCOUNT, REGION, PARTITION = "123456789012", "us-east-1", "aws"
STACK = "nimbus-x"
# What a secret made by CloudFormation is called: logical id, a suffix, and six random characters.
SECRET_ARN = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{{}}-Ab3dEf9hIj0k-XyZ123"
ADMIN_SECRET_ARN = SECRET_ARN.format("AdminTokenSecret")
DB_SECRETS = {
    "worker": "WorkerDbSecret",
    "committer": "CommitterDbSecret",
    "search": "SearchDbSecret",
    "indexer": "IndexerDbSecret",
}
ROLE_OF = {
    "worker": "CrawlerRole",
    "committer": "CommitterRole",
    "search": "SearchRole",
    "indexer": "IndexerRole",
}
TEMPLATE_OF = {
    "worker": "CrawlerLaunchTemplate",
    "committer": "CommitterLaunchTemplate",
    "search": "SearchLaunchTemplate",
    "indexer": "IndexerLaunchTemplate",
}
GROUP_OF = {
    "worker": "CrawlerGroup",
    "committer": "CommitterGroup",
    "search": "SearchGroup",
    "indexer": "IndexerGroup",
}


def resources(tpl: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in tpl["Resources"].items() if v["Type"] == kind}


def resolve(node: Any, tpl: dict[str, Any]) -> Any:
    """Intrinsic functions replaced by plausible values (``Fn::If``: its first branch)."""
    kinds = {name: res["Type"] for name, res in tpl["Resources"].items()}

    def ref(name: str) -> str:
        if name == "AWS::StackName":
            return STACK
        if kinds.get(name) == "AWS::SecretsManager::Secret":  # a secret's Ref is its ARN
            return SECRET_ARN.format(name)
        return f"nimbus-{name}"

    def arn(name: str) -> str:
        kind = kinds.get(name, "")
        if kind == "AWS::IAM::Role":
            return f"arn:aws:iam::{ACCOUNT}:role/{STACK}-{name}-AbC123"
        if kind == "AWS::Logs::LogGroup":
            return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/nimbus/x/{name}:*"
        return f"arn:aws:s3:::{name.lower()}"

    def sub(text: str, variables: dict[str, Any]) -> str:
        text = text.replace("${AWS::Partition}", PARTITION).replace("${AWS::Region}", REGION)
        text = text.replace("${AWS::AccountId}", ACCOUNT).replace("${AWS::StackName}", STACK)
        text = re.sub(r"\$\{(\w+)\.Arn\}", lambda m: arn(m.group(1)), text)
        for key, value in variables.items():
            text = text.replace("${" + key + "}", str(walk(value)))
        return re.sub(r"\$\{(\w+)\}", lambda m: ref(m.group(1)), text)

    def walk(n: Any) -> Any:
        if isinstance(n, dict):
            if "Fn::Sub" in n:
                body = n["Fn::Sub"]
                return sub(body, {}) if isinstance(body, str) else sub(body[0], body[1])
            if "Fn::GetAtt" in n:
                name, attribute = n["Fn::GetAtt"]
                return arn(name) if attribute == "Arn" else f"{name}.{attribute}"
            if "Ref" in n:
                return ref(n["Ref"])
            if "Fn::If" in n:
                return walk(n["Fn::If"][1])
            if "Fn::Join" in n:
                sep, parts = n["Fn::Join"]
                return sep.join(str(walk(p)) for p in parts)
            return {k: walk(v) for k, v in n.items()}
        if isinstance(n, list):
            return [walk(v) for v in n]
        return n

    return walk(node)


def statements(tpl: dict[str, Any], role: str) -> dict[str, dict[str, Any]]:
    """A role's inline statements by Sid, as written (intrinsics not resolved)."""
    return {
        s["Sid"]: s
        for policy in tpl["Resources"][role]["Properties"].get("Policies", [])
        for s in policy["PolicyDocument"]["Statement"]
    }


def user_data(tpl: dict[str, Any], launch_template: str) -> tuple[str, dict[str, Any]]:
    """The user data script of a launch template, before CloudFormation fills in ``${...}``,
    and the variables its ``Fn::Sub`` defines."""
    data = tpl["Resources"][launch_template]["Properties"]["LaunchTemplateData"]
    text, variables = data["UserData"]["Fn::Base64"]["Fn::Sub"]
    return str(text), dict(variables)


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]
