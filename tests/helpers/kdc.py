"""A real MIT Kerberos KDC on loopback, with its own realm in a temporary folder.

Debian's ``krb5-kdc`` and ``krb5-admin-server`` packages provide ``krb5kdc``, ``kdb5_util``
and ``kadmin.local`` (``make sysdeps`` installs them); :func:`missing` names what is absent so
a test can skip saying which package to install. The KDC speaks TCP only (Java and MIT
clients are told ``udp_preference_limit = 1``). The broker's service principal is
``kafka/127.0.0.1@AA.TEST`` (aiokafka names the service by the host it connects to; the
realm's ``krb5.conf`` turns off host name canonicalisation), the client's ``aa-mirror@AA.TEST``.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REALM = "AA.TEST"
SERVICE = "kafka"
BROKER_PRINCIPAL = f"{SERVICE}/127.0.0.1@{REALM}"
CLIENT_PRINCIPAL = f"aa-mirror@{REALM}"
_TOOLS = {"krb5kdc": "krb5-kdc", "kdb5_util": "krb5-kdc", "kadmin.local": "krb5-admin-server"}
_SBIN = ("/usr/sbin", "/usr/bin", "/sbin")


def _which(tool: str) -> str | None:
    return shutil.which(tool) or next(
        (f"{d}/{tool}" for d in _SBIN if Path(f"{d}/{tool}").is_file()), None
    )


def missing() -> str | None:
    """Why no KDC can start here (the Debian packages to install), or ``None``."""
    absent = sorted({pkg for tool, pkg in _TOOLS.items() if _which(tool) is None})
    return f"MIT Kerberos KDC tools missing: install {', '.join(absent)}" if absent else None


@dataclass
class Kdc:
    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def krb5_conf(self) -> Path:
        return self.folder / "krb5.conf"

    @property
    def broker_keytab(self) -> Path:
        return self.folder / "kafka.keytab"

    @property
    def client_keytab(self) -> Path:
        return self.folder / "aa.keytab"

    @property
    def stale_keytab(self) -> Path:
        """The client's keys before they were changed: the KDC refuses them (wrong keytab)."""
        return self.folder / "aa-stale.keytab"

    @property
    def env(self) -> dict[str, str]:
        return {
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.folder / "kdc.conf"),
        }

    def _run(self, *args: str) -> None:
        tool = _which(args[0])
        assert tool is not None
        subprocess.run(
            [tool, *args[1:]], check=True, capture_output=True, env=self.env, timeout=120
        )

    def start(self) -> Kdc:
        self.folder.mkdir(parents=True, exist_ok=True)
        f = self.folder
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"  default_realm = {REALM}\n"
            "  dns_lookup_realm = false\n  dns_lookup_kdc = false\n"
            "  rdns = false\n  dns_canonicalize_hostname = false\n"
            "  udp_preference_limit = 1\n  ticket_lifetime = 1h\n"
            f"[realms]\n  {REALM} = {{\n    kdc = 127.0.0.1:{self.port}\n  }}\n"
            f"[domain_realm]\n  127.0.0.1 = {REALM}\n"
        )
        (f / "kdc.conf").write_text(
            f"[kdcdefaults]\n  kdc_ports = {self.port}\n  kdc_tcp_ports = {self.port}\n"
            f"[realms]\n  {REALM} = {{\n"
            f"    database_name = {f}/principal\n    key_stash_file = {f}/stash\n"
            f"    acl_file = {f}/kadm5.acl\n    max_life = 1h\n"
            "    supported_enctypes = aes256-cts-hmac-sha1-96:normal "
            "aes128-cts-hmac-sha1-96:normal\n  }\n"
            f"[logging]\n  kdc = FILE:{f}/kdc.log\n"
        )
        (f / "kadm5.acl").write_text("")
        self._run("kdb5_util", "create", "-s", "-r", REALM, "-P", secrets.token_urlsafe(16))
        for principal in (BROKER_PRINCIPAL, CLIENT_PRINCIPAL):
            self._run("kadmin.local", "-r", REALM, "-q", f"addprinc -randkey {principal}")
        self._run(
            "kadmin.local", "-r", REALM, "-q", f"ktadd -k {self.broker_keytab} {BROKER_PRINCIPAL}"
        )
        # the client's keys are changed once: the first keytab is stale, the second current
        self._run(
            "kadmin.local", "-r", REALM, "-q", f"ktadd -k {self.stale_keytab} {CLIENT_PRINCIPAL}"
        )
        self._run(
            "kadmin.local", "-r", REALM, "-q", f"ktadd -k {self.client_keytab} {CLIENT_PRINCIPAL}"
        )
        tool = _which("krb5kdc")
        assert tool is not None
        log = (f / "krb5kdc.out").open("wb")
        self.process = subprocess.Popen(
            [tool, "-n", "-r", REALM], env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the KDC did not start: {(f / 'krb5kdc.out').read_text()}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def broker_settings(kdc: Kdc, listener: str) -> list[tuple[str, str]]:
    """Broker properties: ``listener`` accepts GSSAPI for :data:`BROKER_PRINCIPAL`."""
    login = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'keyTab="{kdc.broker_keytab}" principal="{BROKER_PRINCIPAL}";'
    )
    return [
        (f"listener.name.{listener.lower()}.gssapi.sasl.jaas.config", login),
        ("sasl.kerberos.service.name", SERVICE),
    ]


def broker_jvm_options(kdc: Kdc) -> list[str]:
    return [f"-Djava.security.krb5.conf={kdc.krb5_conf}"]
