"""What a setting does not say itself comes from its class: the doc from the docstring under the
field, ``applies`` / ``flow`` / nested keys from ``@section``; a setting's own word wins."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from aa.config.kinds import Integer, Text
from aa.config.schema import section, setting, settings_of

pytestmark = pytest.mark.unit


@section(applies="process", feeds_flow=True, groups=("ssl",))
@dataclass(frozen=True, slots=True)
class Toy:
    size: int = setting(1, Integer())
    """how big,
    in bytes"""
    ssl_cafile: str = setting("ca.pem", Text(), applies="topology", flow="ca")
    """the CA"""


def test_a_setting_takes_its_doc_and_its_section_defaults_unless_it_says_its_own() -> None:
    size, cafile = settings_of(Toy)
    assert (size.setting.doc, size.applies, size.setting.flow, size.key) == (
        "how big, in bytes",
        "process",
        "size",
        "size",
    )
    assert (cafile.setting.doc, cafile.applies, cafile.setting.flow, cafile.key) == (
        "the CA",
        "topology",
        "ca",
        "ssl.cafile",
    )
