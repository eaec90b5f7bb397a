"""HTTP/1.1 framing for the counting proxy: a request or response head, and bodies read exactly as they came
(so the proxy forwards bytes unchanged and knows where each message ends on a kept-alive connection)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

NO_BODY_STATUS = (204, 304)


@dataclass(frozen=True)
class Head:
    raw: bytes  # as received, ending in CRLF CRLF
    first: list[bytes]  # request line or status line, split on spaces (at most 3 parts)
    headers: dict[bytes, bytes]  # lower-cased names; the last value wins

    def header(self, name: bytes) -> bytes:
        return self.headers.get(name, b"").strip().lower()

    @property
    def chunked(self) -> bool:
        return b"chunked" in self.header(b"transfer-encoding")

    @property
    def length(self) -> int | None:
        value = self.header(b"content-length")
        return int(value) if value.isdigit() else None

    def closes(self, version: bytes) -> bool:
        conn = self.header(b"connection")
        return b"close" in conn or (version == b"HTTP/1.0" and b"keep-alive" not in conn)


def parse_head(raw: bytes) -> Head:
    lines = raw[:-4].split(b"\r\n")
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    return Head(raw, lines[0].split(b" ", 2), headers)


def without_expect(head: Head) -> bytes:
    lines = head.raw[:-4].split(b"\r\n")
    kept = [lines[0]] + [ln for ln in lines[1:] if ln.partition(b":")[0].strip().lower() != b"expect"]
    return b"\r\n".join(kept) + b"\r\n\r\n"


async def read_chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked body as received (sizes, data and trailers): it is forwarded as it came."""
    parts: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        parts.append(size_line)
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while True:  # trailers, up to the empty line
                line = await reader.readuntil(b"\r\n")
                parts.append(line)
                if line == b"\r\n":
                    return b"".join(parts)
        parts.append(await reader.readexactly(size + 2))


async def read_body(reader: asyncio.StreamReader, head: Head) -> bytes:
    if head.chunked:
        return await read_chunked(reader)
    length = head.length
    return await reader.readexactly(length) if length else b""


#: (raw response, status, whether the connection closes after it, body bytes)
Answer = tuple[bytes, int, bool, int]


async def read_response(reader: asyncio.StreamReader, method: bytes) -> Answer | None:
    """(raw response, status, connection closes after it, body bytes); None if the server closed at once."""
    interim: list[bytes] = []
    while True:
        try:
            raw = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial and not interim:
                return None
            raise
        head = parse_head(raw)
        status = int(head.first[1]) if len(head.first) > 1 and head.first[1].isdigit() else 0
        if 100 <= status < 200 and status != 101:
            interim.append(raw)  # an unsolicited 1xx: passed on, the final answer follows
            continue
        break
    closes = head.closes(head.first[0])
    if method == b"HEAD" or status in NO_BODY_STATUS or 100 <= status < 200:
        body = b""
    elif head.chunked:
        body = await read_chunked(reader)
    elif head.length is not None:
        body = await reader.readexactly(head.length)
    else:  # no framing: the body runs to the end of the connection
        body = await reader.read()
        closes = True
    return b"".join(interim) + raw + body, status, closes, len(body)


__all__ = ["Answer", "Head", "parse_head", "read_body", "read_chunked", "read_response", "without_expect"]
