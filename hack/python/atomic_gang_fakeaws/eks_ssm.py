"""EKS and SSM as a node bootstrap sees them.

* DescribeCluster returns a PEM CA (base64, as EKS does), an endpoint shaped
  like ``https://<32 hex>.gr7.<region>.eks.amazonaws.com``, a cluster security
  group created in the cluster's VPC (allowing all traffic to and from itself,
  as EFA needs), and a current default Kubernetes version.
* SSM serves ``/aws/service/eks/optimized-ami/<v>/amazon-linux-2023/<arch>/
  <standard|nvidia|neuron>/recommended/image_id`` with a stable fake AMI id.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import re
from collections import defaultdict
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from moto.ec2.models import ec2_backends
from moto.eks.models import EKSBackend
from moto.ssm.models import Parameter, ParameterDict

from atomic_gang_fakeaws.netcontrol import allow_self

DEFAULT_VERSION = "1.33"
EKS_AMI = re.compile(
    r"^/aws/service/eks/optimized-ami/\d+\.\d+/amazon-linux-2023/(x86_64|arm64)"
    r"/(standard|nvidia|neuron)/recommended/image_id$"
)
_CREATE = EKSBackend.create_cluster
_LOADING = ParameterDict._check_loading_status


@functools.cache
def ca_pem_b64() -> str:
    """A real self-signed CA certificate, base64-encoded like EKS's ``data``."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(cert.public_bytes(serialization.Encoding.PEM)).decode()


def fake_ami(name: str) -> str:
    return "ami-" + hashlib.sha256(name.encode()).hexdigest()[:17]


def create_cluster(self: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    cluster = _CREATE(self, name, *args, **kwargs)
    if not kwargs.get("version"):
        cluster.version = DEFAULT_VERSION
    digest = hashlib.sha256(f"{self.account_id}/{self.region_name}/{name}".encode())
    cluster.endpoint = (
        f"https://{digest.hexdigest()[:32].upper()}.gr7.{self.region_name}.eks.amazonaws.com"
    )
    cluster.certificate_authority = {"data": ca_pem_b64()}
    vpc_config = cluster.resources_vpc_config
    subnets = vpc_config.get("subnetIds") or []
    if subnets and not vpc_config.get("clusterSecurityGroupId"):
        ec2 = ec2_backends[self.account_id][self.region_name]
        vpc_id = ec2.get_subnet(subnets[0]).vpc_id
        group = ec2.create_security_group(
            name=f"eks-cluster-sg-{name}-{digest.hexdigest()[:8]}",
            description="EKS created security group applied to ENI attached to EKS nodes",
            vpc_id=vpc_id,
        )
        allow_self(ec2, group.id)  # as EFA needs; tests may take it away (netcontrol)
        vpc_config["clusterSecurityGroupId"] = group.id
        vpc_config["vpcId"] = vpc_id
    return cluster


def check_loading_status(self: Any, key: str) -> None:
    _LOADING(self, key)
    key = str(key or "")
    if EKS_AMI.match(key) and not dict.__contains__(self, key):
        defaultdict.__getitem__(self, key).append(
            Parameter(  # type: ignore[abstract]
                account_id=self.account_id,
                name=key,
                value=fake_ami(key),
                parameter_type="String",
                description=None,
                allowed_pattern=None,
                keyid=None,
                last_modified_date=datetime.datetime.now(datetime.UTC),
                version=1,
                data_type="aws:ec2:image",
            )
        )


PATCHES: list[tuple[Any, str, Any]] = [
    (EKSBackend, "create_cluster", create_cluster),
    (ParameterDict, "_check_loading_status", check_loading_status),
]
