"""A secret config value: hidden from ``repr``/``str`` and logs, resolved only on demand.

Two kinds of reference keep the secret itself out of the topology file:

* ``${VAR}`` — the environment variable ``VAR``;
* ``${file:PATH}`` — the content of the file ``PATH`` (one trailing newline stripped), like
  Kafka's ``FileConfigProvider`` and the files Kubernetes mounts for secrets.

Both are read when the secret is revealed (a client is built), never when the config is loaded,
so a config object can be printed, logged or compared without leaking anything; a rotated file
is picked up by the next client.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aa.errors import ConfigError

_REF = re.compile(r"\$\{(?:file:([^}]+)|([A-Za-z_][A-Za-z0-9_]*))\}")


@dataclass(frozen=True, slots=True)
class Secret:
    """A password or similar. ``reveal()`` returns it, resolving ``${VAR}`` and
    ``${file:PATH}`` references at that moment."""

    _raw: str = field(repr=False)
    where: str = field(default="", compare=False, repr=False)
    """The file and field it came from, for error messages."""

    def reveal(self, env: Mapping[str, str] | None = None) -> str:
        environ = os.environ if env is None else env

        def sub(m: re.Match[str]) -> str:
            path, name = m.group(1), m.group(2)
            if path is not None:
                return _read_file(Path(path).expanduser(), self.where)
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
        return tuple(name for _, name in _REF.findall(self._raw) if name)

    @property
    def files(self) -> tuple[str, ...]:
        """The files the secret is read from."""
        return tuple(path for path, _ in _REF.findall(self._raw) if path)

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"


def _read_file(path: Path, where: str) -> str:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(
            f"{where}: secret file {path} does not exist; create it or fix the path"
        ) from None
    except (PermissionError, IsADirectoryError, UnicodeDecodeError) as exc:
        # the exception's own text names only the path, never the content
        raise ConfigError(
            f"{where}: secret file {path} cannot be read ({type(exc).__name__}); it must be a "
            "readable UTF-8 text file"
        ) from None
    return text[:-1] if text.endswith("\n") else text
