"""AWS MSK IAM without AWS (issue 33, item 5): aa signs its tokens with AWS's real
``aws-msk-iam-sasl-signer-python`` (made-up credentials: the signature is computed locally)
and sends them over SASL OAUTHBEARER to a broker listener whose test plugin accepts and records
any token (only MSK itself can check an AWS signature). The test reads what the brokers were
sent: a presigned ``kafka-cluster:Connect`` request for the region in ``AWS_REGION``, signed with
the access key aa was given; records are copied and a group fails over. The provider's caching
and refresh are proven in tests/unit/aa/config/test_security_settings.py."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.msk import signed_request
from tests.helpers.secure_broker import SecurePeers, write_topology
from tests.helpers.security_proof import copy_both_ways_and_fail_over

pytestmark = [pytest.mark.integration]

ACCESS_KEY = "AKIAAATESTEXAMPLE"
SECRET_KEY = "aa-test-aws-secret-" + "k3y"
REGION = "eu-west-1"


@pytest.fixture
def aws_env(secure_peers: SecurePeers, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if secure_peers.msk_missing:
        pytest.skip(secure_peers.msk_missing)
    if importlib.util.find_spec("aws_msk_iam_sasl_signer") is None:
        pytest.skip("aws-msk-iam-sasl-signer-python is missing: pip install 'aa[msk-iam]'")
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # never ask for an instance role
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))


def _dc(bootstrap: str) -> dict[str, Any]:
    return {
        "bootstrap": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl": {"mechanism": "AWS_MSK_IAM"},
    }


@pytest.mark.slow
async def test_mirror_and_failover_with_aws_msk_iam_tokens(
    secure_peers: SecurePeers, aws_env: None, tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("orders")
    config = write_topology(
        tmp_path / "t.yaml", topic, _dc(secure_peers.sf.msk), _dc(secure_peers.nyc.msk)
    )
    await copy_both_ways_and_fail_over(
        secure_peers, config, topic, tmp_path, unique_name, [SECRET_KEY]
    )
    for broker in (secure_peers.sf, secure_peers.nyc):
        tokens = broker.token_log.read_text().split()
        assert tokens, f"{broker.cluster.name} was sent no token"
        for token in tokens:
            assert SECRET_KEY not in token
            request = signed_request(token)
            assert request["host"] == f"kafka.{REGION}.amazonaws.com", request
            assert request["Action"] == "kafka-cluster:Connect", request
            assert request["X-Amz-Credential"].startswith(f"{ACCESS_KEY}/"), request
            assert f"/{REGION}/kafka-cluster/aws4_request" in request["X-Amz-Credential"]
            assert request["X-Amz-Signature"], request
