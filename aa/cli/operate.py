"""`aa pause`, `aa resume`, `aa limit`, `aa reload`: change a running `aa run` through its
admin API (its HTTP port; docs/operations.md, "Operating a running process").

The process is found with ``--api URL`` or, from ``--config``, at ``metrics.host`` and
``metrics.port``; the token comes from the environment (``AA_ADMIN_TOKEN``) and is sent, never
printed. Each command prints one line per change it made."""

from __future__ import annotations

import argparse
import os
import ssl
import urllib.error
import urllib.request
from typing import Any

import orjson

from aa.config import load_config
from aa.config.kinds import parse_rate
from aa.errors import AaError
from aa.observe.admin import PREFIX, TOKEN_ENV

TIMEOUT_S = 60.0
"""A reload waits for the flows it restarts to drain and commit."""


def register(sub: Any) -> None:
    for name, summary in (
        ("pause", "pause a flow, a topic or a partition of a running `aa run` (kept on restart)"),
        ("resume", "resume what `aa pause` paused, and retry failed topics at once"),
    ):
        p = _command(sub, name, summary)
        p.add_argument("--flow", required=True, help="the flow, e.g. SF->NYC")
        p.add_argument("--topic", default=None, help="only this source topic")
        p.add_argument("--partition", type=int, default=None, help="only this partition")
        if name == "pause":
            p.add_argument("--note", default="", help="why (shown by `aa status`)")
        p.set_defaults(func=_pause if name == "pause" else _resume)
    p = _command(sub, "limit", "set a flow's rate limit live (bytes/s; `--reset`: the config's)")
    p.add_argument("--flow", required=True, help="the flow, e.g. SF->NYC")
    rate = p.add_mutually_exclusive_group(required=True)
    rate.add_argument("--bytes-per-s", default=None, help="e.g. 10MB, 512KiB; 0: no limit")
    rate.add_argument("--reset", action="store_true", help="back to tuning.max_bytes_per_s")
    p.set_defaults(func=_limit)
    p = _command(sub, "reload", "re-read the topology file in a running `aa run` (as SIGHUP)")
    p.set_defaults(func=_reload)


def _command(sub: Any, name: str, summary: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=summary, description=summary)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--api", help="the process's HTTP address, e.g. http://127.0.0.1:9464")
    where.add_argument("--config", help="topology file: the process at metrics.host:metrics.port")
    p.add_argument("--cafile", help="HTTPS: the CA(s) that signed the process's certificate")
    p.add_argument("--cert", help="mutual TLS: this client's certificate (may hold the key)")
    p.add_argument("--key", help="mutual TLS: the certificate's key, when not in --cert")
    p.set_defaults(tls=_tls)
    return p


def _tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The client side of HTTPS / mutual TLS from ``--cafile``, ``--cert``, ``--key``."""
    if not (args.cafile or args.cert):
        return None
    try:
        context = ssl.create_default_context(cafile=args.cafile)
        if args.cert:
            context.load_cert_chain(args.cert, args.key)
    except (OSError, ssl.SSLError) as exc:
        raise AaError(f"--cafile/--cert/--key: {exc}") from None
    return context


def _base(args: argparse.Namespace) -> str:
    if args.api:
        url = str(args.api).rstrip("/")
        return url if "://" in url else f"http://{url}"
    m = load_config(args.config).metrics
    host = "127.0.0.1" if m.host in ("0.0.0.0", "::", "") else m.host  # noqa: S104 - compared, not bound
    return f"{'https' if m.tls_certfile else 'http'}://{host}:{m.port}"


def call(
    base: str, name: str, body: dict[str, Any], tls: ssl.SSLContext | None = None
) -> dict[str, Any]:
    """POST ``body`` to the admin call ``name``; its answer, or :class:`AaError` saying why not."""
    headers = {"Content-Type": "application/json"}
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(  # noqa: S310 - an http(s) URL given by the operator
        f"{base}{PREFIX}/{name}", data=orjson.dumps(body), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S, context=tls) as resp:  # noqa: S310 - as above
            answer: dict[str, Any] = orjson.loads(resp.read())
            return answer
    except urllib.error.HTTPError as exc:
        try:
            reason = orjson.loads(exc.read()).get("error", exc.reason)
        except orjson.JSONDecodeError:
            reason = exc.reason
        raise AaError(f"{name} refused by {base}: {reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        cause = getattr(exc, "reason", exc)
        raise AaError(
            f"no `aa run` answers at {base} ({cause}): start it, or give its address with --api"
        ) from None


def _scope(args: argparse.Namespace) -> dict[str, Any]:
    return {"flow": args.flow.replace(" ", ""), "topic": args.topic, "partition": args.partition}


def _what(scope: dict[str, Any]) -> str:
    parts = [scope["flow"], scope.get("topic"), scope.get("partition")]
    return "/".join(str(p) for p in parts if p is not None)


def _pause(args: argparse.Namespace) -> int:
    scope = _scope(args)
    call(_base(args), "pause", {**scope, "note": args.note}, args.tls(args))
    print(f"paused {_what(scope)}: it fetches and commits nothing until `aa resume`")
    return 0


def _resume(args: argparse.Namespace) -> int:
    answer = call(_base(args), "resume", _scope(args), args.tls(args))
    lifted = answer.get("resumed") or []
    print(f"resumed {', '.join(lifted)}" if lifted else f"nothing paused in {_what(_scope(args))}")
    return 0


def _limit(args: argparse.Namespace) -> int:
    rate = None
    if not args.reset:
        rate = parse_rate(args.bytes_per_s)
        if rate is None:
            raise AaError(f"--bytes-per-s {args.bytes_per_s!r}: write e.g. 10MB, 512KiB or 0")
    answer = call(_base(args), "rate", {"flow": args.flow, "bytes_per_s": rate}, args.tls(args))
    now = answer.get("rate_limit_bytes_per_s")
    print(f"{args.flow}: {'no rate limit' if not now else f'at most {now:,.0f} bytes/s'}")
    return 0


def _reload(args: argparse.Namespace) -> int:
    answer = call(_base(args), "reload", {}, args.tls(args))
    for key, label in (
        ("added", "started"),
        ("removed", "stopped"),
        ("restarted", "restarted (settings changed)"),
        ("rate_changed", "rate limit changed"),
        ("unchanged", "unchanged"),
    ):
        if answer.get(key):
            print(f"{label}: {', '.join(answer[key])}")
    if answer.get("restart_needed"):
        print(f"restart aa run to apply: {', '.join(answer['restart_needed'])}")
    return 0
