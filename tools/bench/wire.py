"""Incremental HTTP/1.1 response parsing and Server-Sent-Events splitting, with no I/O.

Both parsers are fed raw bytes as they arrive from the socket and do the least work per byte: a
chunked body is unframed with ``bytes.find`` and slicing, and SSE events are cut on blank lines
without decoding. The benchmark client calls them straight from the transport callback.
"""

from __future__ import annotations

HEADER_END = b"\r\n\r\n"
MAX_HEADER_BYTES = 64 * 1024


class WireError(Exception):
    """The server sent something that is not a valid HTTP/1.1 response."""


class ResponseParser:
    """Parses one response: status line, headers, then the body, returned piecewise by :meth:`feed`.

    Body framing follows the headers: ``Transfer-Encoding: chunked``, ``Content-Length``, or
    (neither) everything up to the connection close. ``complete`` turns True at the end of the body.
    """

    def __init__(self) -> None:
        self.status = 0
        self.reason = ""
        self.headers: dict[str, str] = {}
        self.complete = False
        self.keep_alive = True
        self._head = b""
        self._in_body = False
        self._chunked = False
        self._remaining = -1  # bytes left in a sized body or the current chunk; -1 = unknown
        self._pending = b""  # unparsed chunk framing

    def feed(self, data: bytes) -> bytes:
        """Consume ``data``; return the body bytes it completes (empty when none)."""
        if self.complete:
            return b""
        if not self._in_body:
            data = self._feed_head(data)
            if not self._in_body:
                return b""
        if self._chunked:
            return self._feed_chunked(data)
        if self._remaining >= 0:
            piece = data[: self._remaining]
            self._remaining -= len(piece)
            if self._remaining == 0:
                self.complete = True
            return piece
        return data

    def feed_eof(self) -> None:
        """The connection closed: completes a read-to-close body, otherwise the response was cut short."""
        if not self.complete and self._in_body and not self._chunked and self._remaining < 0:
            self.complete = True
            return
        if not self.complete:
            raise WireError("connection closed before the response was complete")

    def _feed_head(self, data: bytes) -> bytes:
        self._head += data
        end = self._head.find(HEADER_END)
        if end < 0:
            if len(self._head) > MAX_HEADER_BYTES:
                raise WireError("response headers exceed 64 KiB")
            return b""
        head, rest = self._head[:end], self._head[end + 4 :]
        self._head = b""
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise WireError(f"bad status line {lines[0][:100]!r}")
        self.status, self.reason = int(parts[1]), parts[2] if len(parts) > 2 else ""
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        connection = self.headers.get("connection", "").lower()
        http10 = parts[0] == "HTTP/1.0"
        self.keep_alive = connection != "close" and not (http10 and connection != "keep-alive")
        self._in_body = True
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            self._chunked = True
        elif "content-length" in self.headers:
            self._remaining = int(self.headers["content-length"])
            if self._remaining == 0:
                self.complete = True
        elif self.status in (204, 304) or 100 <= self.status < 200:
            self.complete = True
        else:
            self.keep_alive = False  # body ends at close
        return rest

    def _feed_chunked(self, data: bytes) -> bytes:
        """Unframe every complete chunk in ``data``; return their contents joined."""
        if self._pending:
            data = self._pending + data
            self._pending = b""
        elif self._remaining < 0:  # the usual read: exactly one whole chunk
            line_end = data.find(b"\r\n")
            if line_end > 0 and b";" not in data[:line_end]:
                size = int(data[:line_end], 16)
                if size and len(data) == line_end + size + 4 and data.endswith(b"\r\n"):
                    return data[line_end + 2 : line_end + 2 + size]
        pieces: list[bytes] = []
        position, size = 0, len(data)
        while position < size:
            if self._remaining > 0:
                end = position + self._remaining
                piece = data[position:end]
                self._remaining -= len(piece)
                position += len(piece)
                pieces.append(piece)
                continue
            if self._remaining == 0:  # the CRLF closing a chunk's data
                if size - position < 2:
                    break
                position += 2
                self._remaining = -1
                continue
            line_end = data.find(b"\r\n", position)
            if line_end < 0:
                break
            chunk_size = int(data[position:line_end].split(b";", 1)[0], 16)
            position = line_end + 2
            if chunk_size == 0:
                self.complete = True  # trailers, if any, are ignored
                break
            self._remaining = chunk_size
        if not self.complete:
            self._pending = data[position:]
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def data_payloads(complete: bytes) -> list[bytes]:
    """The ``data:`` payload of each event in ``complete`` (whole events, ``\n`` line ends)."""
    payloads = []
    for event in complete.split(b"\n\n"):
        if event.startswith(b"data:") and b"\n" not in event:
            payloads.append(event[6:] if event[5:6] == b" " else event[5:])
        elif event:
            data_lines = [
                line[6:] if line[5:6] == b" " else line[5:] for line in event.split(b"\n") if line.startswith(b"data:")
            ]
            if data_lines:
                payloads.append(b"\n".join(data_lines))
    return payloads


class SseSplitter:
    """Cuts a byte stream into SSE events.

    Multi-line data fields are joined with ``\\n`` as the SSE spec says; comments, ``event:`` and
    ``id:`` fields are dropped. Both ``\\n\\n`` and ``\\r\\n\\r\\n`` end an event.
    """

    def __init__(self) -> None:
        self._buffer = b""

    def take_complete(self, piece: bytes) -> bytes:
        """Add ``piece``; return every event completed so far (``\\n`` line ends), keep the rest.

        A lone ``\\r`` at the end stays in the buffer, so a CRLF split across reads still joins up.
        """
        buffer = self._buffer + piece if self._buffer else piece
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self._buffer = buffer
            return b""
        self._buffer = buffer[end + 2 :]
        return buffer[:end]

    def feed(self, piece: bytes) -> list[bytes]:
        """The ``data:`` payload of each event completed by ``piece``."""
        complete = self.take_complete(piece)
        return data_payloads(complete) if complete else []
