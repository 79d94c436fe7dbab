from typing import Any

def restamp(
    src: Any,
    start: int,
    out: bytearray,
    n: int,
    first_ts: int | None,
    max_ts: int | None,
    batch_size: int,
    pre: bytes,
    src_prefix: bytes,
    post: bytes,
    mark: bytes,
    screen: tuple[int, bool, int, int] | None,
    body: Any,
    /,
) -> tuple[int, int | None, int | None, int] | None: ...
def crc32c(data: Any, /) -> int: ...
