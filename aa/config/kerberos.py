"""SASL GSSAPI (Kerberos): aiokafka authenticates with the ``gssapi`` package (the
``aa[kerberos]`` extra) and the process's default Kerberos credentials.

Without ``sasl.keytab`` those are the ticket cache ``kinit`` filled (``KRB5CCNAME``). With
``sasl.keytab`` and ``sasl.principal``, aa logs in from the keytab once per process into a
memory cache of its own, and MIT Kerberos gets a new ticket from the same keytab
(``KRB5_CLIENT_KTNAME``) when it expires, so a flow that runs for weeks keeps its identity.
GSSAPI's default credentials belong to the process: every DC one ``aa`` process reaches over
GSSAPI uses the same keytab and principal (Kerberos realms trust each other for that, or run one
process per identity).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from aa.config.model import Datacenter
from aa.errors import ConfigError

_logged_in: dict[tuple[str, str], str] = {}
"""(keytab, principal) -> the DC that logged in first, in this process."""


def _gssapi(dc: Datacenter) -> Any:
    try:
        return importlib.import_module("gssapi")
    except ImportError:
        raise ConfigError(
            f"DC {dc.name}: datacenters.{dc.name}.sasl.mechanism GSSAPI needs the gssapi package: "
            "pip install 'aa[kerberos]' (it builds against MIT Kerberos: the libkrb5-dev package)"
        ) from None


def kerberos_login(dc: Datacenter) -> None:
    """Make the process's Kerberos credentials those ``dc`` names (see the module doc)."""
    gssapi = _gssapi(dc)
    if dc.sasl_keytab is None or dc.sasl_principal is None:
        return
    field = f"datacenters.{dc.name}.sasl"
    keytab = str(Path(dc.sasl_keytab).expanduser())
    identity = (keytab, dc.sasl_principal)
    if identity in _logged_in:
        return
    if _logged_in:
        (other_keytab, other_principal), other = next(iter(_logged_in.items()))
        raise ConfigError(
            f"DC {dc.name}: {field}.principal {dc.sasl_principal} (keytab {keytab}) differs from "
            f"datacenters.{other}.sasl ({other_principal}, keytab {other_keytab}): one aa process "
            "logs in as one Kerberos principal; use the same keytab and principal for every DC "
            "(with a cross-realm trust where the realms differ), or run a process per identity"
        )
    if not Path(keytab).is_file():
        raise ConfigError(f"DC {dc.name}: {field}.keytab {keytab} does not exist: fix the path")
    cache = f"MEMORY:aa-{os.getpid()}"
    os.environ["KRB5CCNAME"] = cache
    os.environ["KRB5_CLIENT_KTNAME"] = keytab
    try:
        gssapi.Credentials(
            name=gssapi.Name(dc.sasl_principal, gssapi.NameType.kerberos_principal),
            usage="initiate",
            store={"client_keytab": keytab, "ccache": cache},
        )
    except gssapi.exceptions.GSSError as exc:
        why = " ".join(str(exc.gen_message()).split())
        raise ConfigError(
            f"DC {dc.name}: cannot log in as {dc.sasl_principal} with {field}.keytab {keytab} "
            f"({why}): check {field}.keytab and {field}.principal (`klist -kt {keytab}` lists "
            "its principals and key versions) and that the realm's KDC in krb5.conf answers"
        ) from None
    _logged_in[identity] = dc.name
