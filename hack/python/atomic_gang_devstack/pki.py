"""The stack's PKI, generated with ``cryptography`` on every start.

One cluster CA signs the serving certificates (apiserver, KCM, scheduler, our
webhook) and the client certificates (admin and one identity per component).
Kueue gets a CA of its own because its cert rotator insists on an RSA PKCS#1
CA key whose certificate carries the DNS name ``kueue-ca``; see ``kueue.py``.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
VALIDITY = dt.timedelta(days=365)  # Kueue's rotator looks 90 days ahead


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, PEM-encoded."""

    cert_pem: bytes
    key_pem: bytes
    cert: x509.Certificate
    key: PrivateKey

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        crt, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        crt.write_bytes(self.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(self.key_pem)
        return crt, key


def _ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: PrivateKey, *, pkcs1: bool = False) -> bytes:
    fmt = (
        serialization.PrivateFormat.TraditionalOpenSSL
        if pkcs1
        else serialization.PrivateFormat.PKCS8
    )
    return key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption())


def _name(cn: str, orgs: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    return x509.Name([*attrs, x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _sans(hosts: tuple[str, ...]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(names)


def _builder(subject: x509.Name, issuer: x509.Name, key: PrivateKey) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + VALIDITY)
    )


def _issued(cert: x509.Certificate, key: PrivateKey, *, pkcs1: bool = False) -> Issued:
    pem = cert.public_bytes(serialization.Encoding.PEM)
    return Issued(cert_pem=pem, key_pem=_key_pem(key, pkcs1=pkcs1), cert=cert, key=key)


def new_ca(cn: str, *, rsa_pkcs1: bool = False, dns_names: tuple[str, ...] = ()) -> Issued:
    """A self-signed CA. ``rsa_pkcs1`` gives an RSA key in PKCS#1 PEM (for Kueue)."""
    key: PrivateKey = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048) if rsa_pkcs1 else _ec_key()
    )
    name = _name(cn)
    b = _builder(name, name, key).add_extension(
        x509.BasicConstraints(ca=True, path_length=None), critical=True
    )
    b = b.add_extension(
        x509.KeyUsage(
            digital_signature=True,
            key_encipherment=rsa_pkcs1,
            key_cert_sign=True,
            crl_sign=True,
            content_commitment=False,
            data_encipherment=False,
            key_agreement=False,
            encipher_only=False,
            decipher_only=False,
        ),
        critical=True,
    )
    if dns_names:
        b = b.add_extension(_sans(dns_names), critical=False)
    return _issued(b.sign(key, hashes.SHA256()), key, pkcs1=rsa_pkcs1)


def issue(
    ca: Issued,
    cn: str,
    *,
    hosts: tuple[str, ...] = (),
    orgs: tuple[str, ...] = (),
    server: bool = False,
    client: bool = False,
) -> Issued:
    """A leaf certificate signed by ``ca``: serving (``hosts`` as SANs) and/or client."""
    key = _ec_key()
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
    usages += [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
    b = _builder(_name(cn, orgs), ca.cert.subject, key)
    b = b.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    b = b.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if hosts:
        b = b.add_extension(_sans(hosts), critical=False)
    return _issued(b.sign(ca.key, hashes.SHA256()), key)


def load(crt: Path, key: Path) -> Issued:
    """Read back a pair written by :meth:`Issued.write`."""
    cert_pem, key_pem = crt.read_bytes(), key.read_bytes()
    loaded = serialization.load_pem_private_key(key_pem, password=None)
    if not isinstance(loaded, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise TypeError(f"{key}: unsupported key type {type(loaded).__name__}")
    return Issued(cert_pem, key_pem, x509.load_pem_x509_certificate(cert_pem), loaded)


def service_account_keys() -> tuple[bytes, bytes]:
    """(private PEM, public PEM) for signing and verifying service-account tokens."""
    key = _ec_key()
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return _key_pem(key), pub
