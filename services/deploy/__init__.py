"""Deployment to AWS: the CloudFormation stack in ``infra/``, releases, and the settings a
deployed Nimbus runs on. A top-layer package: it wires the others, none imports it."""
