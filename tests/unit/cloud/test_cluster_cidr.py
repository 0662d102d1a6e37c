"""The service CIDR handed to nodeadm: IPv4, else an IPv6 cluster's."""

from __future__ import annotations

from atomic_gang_provisioner.cloud.aws.cluster import service_cidr


def test_ipv4_first_then_ipv6() -> None:
    assert service_cidr({"serviceIpv4Cidr": "10.100.0.0/16", "ipFamily": "ipv4"}) == "10.100.0.0/16"
    v6 = {"serviceIpv6Cidr": "fd30:1c53:5f8a::/108", "ipFamily": "ipv6"}
    assert service_cidr(v6) == "fd30:1c53:5f8a::/108"
    assert service_cidr({}) == ""
