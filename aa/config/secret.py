"""A secret config value: hidden from ``repr``/``str`` and logs, ``${ENV}`` resolved on demand."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from aa.errors import ConfigError

_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class Secret:
    """A password or similar. ``reveal()`` returns it, resolving ``${VAR}`` references from the
    environment at that moment (never when the config is loaded), so a config object can be
    printed, logged or compared without leaking anything."""

    _raw: str = field(repr=False)
    where: str = field(default="", compare=False, repr=False)
    """The file and field it came from, for error messages."""

    def reveal(self, env: Mapping[str, str] | None = None) -> str:
        environ = os.environ if env is None else env

        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in environ:
                raise ConfigError(
                    f"{self.where}: environment variable {name} is not set; set it or put the "
                    "value in the file"
                )
            return environ[name]

        return _REF.sub(sub, self._raw)

    @property
    def references(self) -> tuple[str, ...]:
        """The environment variables the secret refers to."""
        return tuple(_REF.findall(self._raw))

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"
