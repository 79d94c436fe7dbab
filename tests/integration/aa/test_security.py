"""aa against brokers that demand TLS and SASL: two local clusters, each with a SASL_SSL
listener (certificate from a CA the fixture made) and a SASL_PLAINTEXT one, SCRAM users created
when their storage was formatted. The topology reaches SF over SASL_SSL (password from an
environment variable) and NYC over SASL_PLAINTEXT (password from a file).

The test itself writes and reads through each broker's unauthenticated internal listener:
only aa is configured with the secure ones."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import re
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiokafka.conn import create_conn
from aiokafka.errors import SaslAuthenticationFailed

from aa.config import client_kwargs, load_config
from aa.config.client import ConnectionSetupError, preflight
from aa.logs import configure, get_logger
from aa.mirror.build import flow_settings
from tests.helpers import secure_broker
from tests.helpers.cli import CliResult, aa_cli
from tests.helpers.kafka import Rec, consume_all, create_topic, produce
from tests.helpers.processes import AaProcess
from tests.helpers.security_proof import one_clear_error
from tests.helpers.tls import Pki
from tests.integration.aa.conftest import NYC_SECRET, SF_SECRET, USER

pytestmark = [pytest.mark.integration]

SF_ENV = "AA_TEST_SF_PASSWORD"


@dataclass(frozen=True, slots=True)
class SecureDcs:
    sf: secure_broker.SecureBroker
    nyc: secure_broker.SecureBroker
    pki: Pki
    folder: Path

    def topology(self, path: Path, topic: str, *, cafile: str | None = None) -> Path:
        nyc_pw = self.folder / "nyc.password"
        nyc_pw.write_text(NYC_SECRET + "\n")
        sasl = {"mechanism": "SCRAM-SHA-256", "username": USER}
        return secure_broker.write_topology(
            path,
            topic,
            {
                "bootstrap": self.sf.sasl_ssl,
                "security_protocol": "SASL_SSL",
                "ssl": {"cafile": cafile or str(self.pki.ca_file)},
                "sasl": {**sasl, "password": f"${{{SF_ENV}}}"},
            },
            {
                "bootstrap": self.nyc.sasl_plaintext,
                "security_protocol": "SASL_PLAINTEXT",
                "sasl": {**sasl, "password": f"${{file:{nyc_pw}}}"},
            },
        )


@pytest.fixture
def secure_dcs(secure_peers: secure_broker.SecurePeers, tmp_path: Path) -> SecureDcs:
    return SecureDcs(secure_peers.sf, secure_peers.nyc, secure_peers.pki, tmp_path)


def _no_secret(where: str, text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    for secret in (SF_SECRET, NYC_SECRET):
        assert secret.encode() not in data, f"the secret leaked into {where}"


def _ok(result: CliResult, what: str) -> str:
    assert result.code == 0, f"{what}: {result}"
    assert "Traceback" not in result.err, result.err
    _no_secret(what, result.out + result.err)
    return result.out


@pytest.mark.spark
@pytest.mark.slow
async def test_mirror_plan_lag_failover_reconcile_over_sasl_ssl_and_sasl_plaintext(
    secure_dcs: SecureDcs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unique_name: object,
) -> None:
    monkeypatch.setenv(SF_ENV, SF_SECRET)
    topic = unique_name("orders")  # type: ignore[operator]
    config = str(secure_dcs.topology(tmp_path / "t.yaml", topic))
    sf, nyc = secure_dcs.sf.cluster.bootstrap, secure_dcs.nyc.cluster.bootstrap  # internal
    since = int(time.time() * 1000) - 60_000
    for b in (sf, nyc):
        await create_topic(b, topic, partitions=2)
    now = int(time.time() * 1000)
    for b, tag in ((sf, "sf"), (nyc, "nyc")):
        recs = [Rec(f"k{i}".encode(), f"{tag}:{i}".encode(), timestamp_ms=now) for i in range(200)]
        await produce(b, topic, recs)

    procs = [
        AaProcess(
            ["run", "--config", config, "--dc", dc, "--metrics-port", "0"], tmp_path / f"{dc}.log"
        )
        for dc in ("SF", "NYC")
    ]
    try:
        # both directions: SF->NYC reads over SASL_SSL and writes over SASL_PLAINTEXT, and back
        for b in (sf, nyc):
            got = await consume_all(b, topic, count=400, timeout=180, settle=1.0)
            assert len({r.value for r in got}) == 400
        metrics_urls = [
            re.search(r'"metrics": "(http://[^"]+)"', p.output()).group(1)  # type: ignore[union-attr]
            for p in procs
        ]
        for url in metrics_urls:
            assert url.startswith("http://127.0.0.1:"), url  # loopback unless told otherwise
            body = await asyncio.to_thread(lambda u=url: urllib.request.urlopen(u).read())
            _no_secret("the metrics endpoint", body)

        plan = _ok(await aa_cli("plan", "--config", config), "aa plan")
        assert topic in plan
        lag = _ok(await aa_cli("lag", "--config", config), "aa lag")
        assert "SF->NYC" in lag
        assert "NYC->SF" in lag
        failover = _ok(
            await aa_cli(
                "failover", "--config", config, "--group", unique_name("app"),  # type: ignore[operator]
                "--to", "NYC", "--at", str(since), "--topic", topic,
            ),
            "aa failover",
        )  # fmt: skip
        assert "dry run" in failover
    finally:
        for p in procs:
            p.stop()
    for p in procs:
        _no_secret(f"the log of aa run ({p.log_path.name})", p.output())

    out = tmp_path / "reconcile"
    reconcile = await aa_cli(
        "reconcile", "--config", config, "--since", str(since),
        "--until", str(int(time.time() * 1000)), "--out", str(out), "--master", "local[2]",
        "--shuffle-partitions", "2", "--bucket", "1m", "--connect-timeout", "60",
        timeout=1500,  # its own Spark JVM: 12 minutes on a loaded machine (load 33)
    )  # fmt: skip
    _ok(reconcile, "aa reconcile")
    files = [f for f in out.rglob("*") if f.is_file()]
    assert any(f.name == "summary.json" for f in files)
    for f in files:
        _no_secret(f"the reconcile output {f}", f.read_bytes())


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            "wrong-password",
            r"DC SF \(127\.0\.0\.1:\d+, SASL_SSL\): SASL SCRAM-SHA-256 authentication as "
            r"'aa-mirror' failed .*check datacenters\.SF\.sasl\.username and "
            r"datacenters\.SF\.sasl\.password \(read from \$\{AA_TEST_SF_PASSWORD\}\)",
        ),
        (
            "untrusted-certificate",
            r"DC SF \(127\.0\.0\.1:\d+, SASL_SSL\): the broker's TLS certificate is not trusted "
            r"\(.*other-ca\.pem\): set datacenters\.SF\.ssl\.cafile \(or truststore\) to the CA "
            r"that signed",
        ),
        (
            "missing-ca-file",
            r"DC SF: datacenters\.SF\.ssl\.cafile .*no-such-ca\.pem does not exist: fix the path",
        ),
    ],
)
async def test_refused_connection_is_one_clear_error(
    secure_dcs: SecureDcs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unique_name: object,
    case: str,
    message: str,
) -> None:
    monkeypatch.setenv(SF_ENV, "wrong-" + SF_SECRET if case == "wrong-password" else SF_SECRET)
    cafile = {
        "untrusted-certificate": str(secure_dcs.pki.other_ca_file),
        "missing-ca-file": str(tmp_path / "no-such-ca.pem"),
    }.get(case)
    topic = unique_name("t")  # type: ignore[operator]
    config = str(secure_dcs.topology(tmp_path / "t.yaml", topic, cafile=cafile))
    await one_clear_error(
        config, message, (SF_SECRET, NYC_SECRET), case, commands=("plan", "lag", "run")
    )


async def test_failing_sasl_connection_in_console_mode_prints_no_password(
    secure_dcs: SecureDcs,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    unique_name: object,
) -> None:
    """Issue 29, item 8. Console logs (the default on a terminal) render a client library's
    traceback; a frame of the connection holds the password and the flow settings hold the
    client settings. Every line written while a SASL connection fails is searched for it."""
    password = "wrong-" + SF_SECRET  # refused by the broker; still a secret
    monkeypatch.setenv(SF_ENV, password)
    topic = unique_name("t")  # type: ignore[operator]
    path = secure_dcs.topology(tmp_path / "t.yaml", topic)
    topology = load_config(path)
    sf = topology.datacenter("SF")
    out = io.StringIO()
    try:
        with contextlib.redirect_stderr(out):
            configure(json=False)
            settings = flow_settings(topology, topology.flow("SF->NYC"))
            get_logger("aa.test").info(
                "flow_built", settings=settings, client=settings.source_client
            )
            kwargs = client_kwargs(sf)
            host, _, port = sf.bootstrap.rpartition(":")
            with pytest.raises(SaslAuthenticationFailed) as failed:
                await create_conn(
                    host,
                    int(port),
                    ssl_context=kwargs["ssl_context"],
                    security_protocol=kwargs["security_protocol"],
                    sasl_mechanism=kwargs["sasl_mechanism"],
                    sasl_plain_username=kwargs["sasl_plain_username"],
                    sasl_plain_password=kwargs["sasl_plain_password"],
                )
            # what aiokafka's routines do with an unexpected error, and what aa's supervisor does
            logging.getLogger("aiokafka").error("Unexpected error", exc_info=failed.value)
            get_logger("aa.supervisor").error("flow_crashed", exc_info=failed.value)
            with pytest.raises(ConnectionSetupError) as refused:
                await preflight([sf])
            logging.getLogger("aiokafka").error("Unexpected error", exc_info=refused.value)
    finally:
        configure()
    text = out.getvalue()
    assert "flow_built" in text
    assert "Traceback" in text  # the tracebacks were written ...
    assert password not in text, "the password leaked into the console log"  # ... without it
    assert repr(SF_SECRET)[1:-1] not in text
    # the command line in console mode, with tracebacks on (DEBUG)
    for args in (["plan", "--config", str(path)], ["lag", "--config", str(path)]):
        r = await aa_cli("--log-format", "console", "--log-level", "DEBUG", *args, timeout=180)
        assert r.code != 0, (args, r)
        _no_secret(f"aa {args[0]} in console mode", r.out + r.err)
