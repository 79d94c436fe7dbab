"""Reading a config file's text, with the errors both formats share."""

from __future__ import annotations

from pathlib import Path

from aa.errors import ConfigError


def read_config_text(path: Path, not_utf8_hint: str = "") -> str:
    """The file's text; a :class:`ConfigError` naming the file when it cannot be read or is not
    UTF-8 (``not_utf8_hint`` is added to that message)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: the config file is not UTF-8 (byte {exc.start}); save it as UTF-8"
            + not_utf8_hint
        ) from None
