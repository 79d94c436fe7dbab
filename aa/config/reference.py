"""The configuration reference tables, rendered from the setting definitions.

``docs/configuration.md`` holds one generated block per section between
``<!-- BEGIN settings: NAME -->`` and ``<!-- END settings: NAME -->``; prose around them is
written by hand. ``python -m aa.config.reference [FILE]`` rewrites the blocks in place, and a
unit test fails when the file differs from what the definitions give.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from aa.config.model import Datacenter, SchemaTranslation, Topology
from aa.config.schema import REQUIRED, Definition, definitions, settings_of
from aa.config.topic_filter import TopicFilter

TOP = "top level"
"""The block name of the top-level settings (``topics``, ``delivery``)."""
_BLOCK = re.compile(
    r"(<!-- BEGIN settings: (?P<name>[a-z_ ]+) -->\n)(?P<body>.*?)"
    r"(<!-- END settings: (?P=name) -->)",
    re.DOTALL,
)
_APPLIES = {
    "flow": "each flow",
    "process": "each `aa run`",
    "topology": "every process",
    "datacenter": "the DC's clients",
}


def blocks() -> dict[str, list[Definition]]:
    """The definitions grouped by block, in declaration order."""
    out: dict[str, list[Definition]] = {"datacenters": list(settings_of(Datacenter))}
    for d in definitions(Topology):
        out.setdefault(d.section or TOP, []).append(d)
    out["schemas"] = list(settings_of(SchemaTranslation))  # a flow's own section
    return out


def show(value: Any) -> str:
    """A default as the reference shows it."""
    if value is REQUIRED:
        return "required"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, TopicFilter):
        inc = ", ".join(f"`{p}`" for p in value.include) or "none"
        exc = ", ".join(f"`{p}`" for p in value.exclude) or "none"
        return f"include {inc}; exclude {exc}"
    if isinstance(value, tuple):
        return ", ".join(f"`{v}`" for v in value) or "none"
    return f"`{value}`"


def render(defs: list[Definition]) -> str:
    rows = [
        "| setting | default | allowed | MM2 key | applies to | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for d in defs:
        s = d.setting
        mapping_form = s.required and d.default is not REQUIRED
        name = f"`{d.key}`" + (" (required in the mapping form)" if mapping_form else "")
        mm2 = " / ".join(f"`{k}`" for k in s.mm2) or "—"
        doc = s.doc + (f"; `{d.section}: VALUE` is short for it" if s.shorthand else "")
        rows.append(
            f"| {name} | {show(d.default)} | {s.kind.allowed()} | {mm2} "
            f"| {_APPLIES[d.applies]} | {doc} |"
        )
    return "\n".join(rows) + "\n"


def update(text: str) -> str:
    """``text`` with every generated block rendered afresh."""
    groups = blocks()

    def sub(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in groups:
            raise KeyError(f"docs block {name!r} names no section; known: {', '.join(groups)}")
        return m.group(1) + render(groups[name]) + m.group(4)

    return _BLOCK.sub(sub, text)


def block_names(text: str) -> list[str]:
    return [m.group("name") for m in _BLOCK.finditer(text)]


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else "docs/configuration.md")
    text = path.read_text(encoding="utf-8")
    new = update(text)
    if new != text:
        path.write_text(new, encoding="utf-8")
        print(f"{path}: settings tables updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
