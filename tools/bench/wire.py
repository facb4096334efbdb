"""Incremental HTTP/1.1 response parsing and Server-Sent-Events splitting, with no I/O.

Both parsers are fed raw bytes as they arrive from the socket and do the least work per byte: a
chunked body is unframed with ``bytes.find`` and slicing, and SSE events are cut on blank lines
without decoding. The benchmark client calls them straight from the transport callback.
"""

from __future__ import annotations

from collections.abc import Callable

HEADER_END = b"\r\n\r\n"
MAX_HEADER_BYTES = 64 * 1024


class WireError(Exception):
    """The server sent something that is not a valid HTTP/1.1 response."""


class ResponseParser:
    """Parses one response: status line, headers, then the body handed piecewise to ``on_body``.

    Body framing follows the headers: ``Transfer-Encoding: chunked``, ``Content-Length``, or
    (neither) everything up to the connection close. ``complete`` turns True at the end of the body.
    """

    def __init__(self, on_body: Callable[[bytes], None]) -> None:
        self.on_body = on_body
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

    def feed(self, data: bytes) -> None:
        if self.complete:
            return
        if not self._in_body:
            data = self._feed_head(data)
            if not self._in_body:
                return
        if self._chunked:
            self._feed_chunked(data)
        elif self._remaining >= 0:
            piece = data[:self._remaining]
            self._remaining -= len(piece)
            if piece:
                self.on_body(piece)
            if self._remaining == 0:
                self.complete = True
        elif data:
            self.on_body(data)

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
        head, rest = self._head[:end], self._head[end + 4:]
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

    def _feed_chunked(self, data: bytes) -> None:
        if self._pending:
            data = self._pending + data
            self._pending = b""
        position, size = 0, len(data)
        while position < size:
            if self._remaining > 0:
                end = position + self._remaining
                piece = data[position:end]
                self._remaining -= len(piece)
                position += len(piece)
                self.on_body(piece)
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
                return
            self._remaining = chunk_size
        self._pending = data[position:]


class SseSplitter:
    """Cuts a byte stream into SSE events and returns the ``data:`` payload of each one.

    Multi-line data fields are joined with ``\\n`` as the SSE spec says; comments, ``event:`` and
    ``id:`` fields are dropped. Both ``\\n\\n`` and ``\\r\\n\\r\\n`` end an event.
    """

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, piece: bytes) -> list[bytes]:
        buffer = self._buffer + piece if self._buffer else piece
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        events = buffer.split(b"\n\n")
        self._buffer = events.pop()
        payloads = []
        for event in events:
            if event.startswith(b"data:") and b"\n" not in event:
                payloads.append(event[6:] if event[5:6] == b" " else event[5:])
            elif event:
                data_lines = [line[6:] if line[5:6] == b" " else line[5:]
                              for line in event.split(b"\n") if line.startswith(b"data:")]
                if data_lines:
                    payloads.append(b"\n".join(data_lines))
        return payloads
