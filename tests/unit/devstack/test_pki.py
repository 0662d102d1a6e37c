"""The PKI: chains verify, SANs and usages are right, Kueue's CA fits its rotator."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from atomic_gang_devstack import pki


def _sans(cert: x509.Certificate) -> x509.SubjectAlternativeName:
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value


def test_serving_cert_is_signed_by_ca_and_covers_loopback() -> None:
    ca = pki.new_ca("test-ca")
    leaf = pki.issue(ca, "apiserver", hosts=("127.0.0.1", "localhost"), server=True)

    leaf.cert.verify_directly_issued_by(ca.cert)
    sans = _sans(leaf.cert)
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    eku = leaf.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_client_cert_carries_user_and_groups() -> None:
    ca = pki.new_ca("test-ca")
    leaf = pki.issue(ca, "system:kube-scheduler", orgs=("g1", "g2"), client=True)

    subject = leaf.cert.subject
    assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:kube-scheduler"
    assert [a.value for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "g1",
        "g2",
    ]
    eku = leaf.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_kueue_ca_is_rsa_pkcs1_with_its_dns_name() -> None:
    # cert-controller's rotator parses ca.key with x509.ParsePKCS1PrivateKey and
    # verifies the CA against itself for the DNS name "kueue-ca".
    ca = pki.new_ca("kueue-ca", rsa_pkcs1=True, dns_names=("kueue-ca",))

    assert isinstance(ca.key, rsa.RSAPrivateKey)
    assert ca.key_pem.startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert _sans(ca.cert).get_values_for_type(x509.DNSName) == ["kueue-ca"]
    assert ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_default_keys_are_ec_pkcs8() -> None:
    ca = pki.new_ca("test-ca")
    assert isinstance(ca.key, ec.EllipticCurvePrivateKey)
    assert ca.key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")


def test_write_then_load_round_trips(tmp_path: Path) -> None:
    ca = pki.new_ca("test-ca")
    crt, key = ca.write(tmp_path, "ca")

    again = pki.load(crt, key)
    assert again.cert == ca.cert
    assert key.stat().st_mode & 0o077 == 0


def test_validity_outlasts_kueue_rotator_lookahead() -> None:
    ca = pki.new_ca("test-ca")
    lifetime = ca.cert.not_valid_after_utc - ca.cert.not_valid_before_utc
    assert lifetime.days > 90


def test_service_account_keys_are_a_pair() -> None:
    priv_pem, pub_pem = pki.service_account_keys()
    priv = serialization.load_pem_private_key(priv_pem, password=None)
    assert (
        priv.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        == pub_pem
    )
