"""The boto3 adapter behind the cloud roles (:class:`~atomic_gang_provisioner.cloud.Cloud`).

The only package allowed to import boto3/botocore (import-linter enforces it).
Everything it hands back is converted to the frozen types of ``cloud.values``.
"""

from atomic_gang_provisioner.cloud.aws.engine import Ec2Provider, EngineConfig
from atomic_gang_provisioner.cloud.aws.session import AwsClients, make_clients

__all__ = ["AwsClients", "Ec2Provider", "EngineConfig", "make_clients"]
