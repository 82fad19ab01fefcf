"""The class of one of mcpd's failures, read from its status details.

A failure of mcpd's with a class carries a google.rpc.Status in the
grpc-status-details-bin trailer, whose details hold a google.rpc.ErrorInfo
of domain "mcpd.dev" (see ErrorReason in mcpd.proto). The package reads only
those three messages' few fields, so it decodes them here rather than
depending on googleapis' protos."""

from __future__ import annotations

from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union

# Metadata keys of mcpd's calls and of its replies.
CLIENT_NAME = "mcpd-client-name"  # the app's name
CLIENT_VERSION = "mcpd-client-version"  # the app's version
DAEMON = "mcpd-daemon"  # trailer: the status is mcpd's own
STATUS_DETAILS = "grpc-status-details-bin"  # trailer: google.rpc.Status

ERROR_DOMAIN = "mcpd.dev"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
_REASON_PREFIX = "ERROR_REASON_"

Field = Tuple[int, Union[int, bytes]]


def _fields(buf: bytes) -> Iterator[Field]:
    """The fields of one protobuf message as (number, value): bytes for
    length-delimited fields, an int for varints."""
    i = 0

    def varint() -> int:
        nonlocal i
        v, shift = 0, 0
        while True:
            if i >= len(buf) or shift > 63:
                raise ValueError("truncated varint")
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            if b < 0x80:
                return v
            shift += 7

    while i < len(buf):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            yield num, varint()
        elif wire == 1:
            i += 8
        elif wire == 2:
            n = varint()
            if i + n > len(buf):
                raise ValueError("truncated field")
            yield num, buf[i:i + n]
            i += n
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")


def _error_info(buf: bytes) -> Tuple[str, str, Dict[str, str]]:
    reason, domain, metadata = "", "", {}
    for num, v in _fields(buf):
        if num == 1:
            reason = bytes(v).decode()
        elif num == 2:
            domain = bytes(v).decode()
        elif num == 3:
            entry = dict(_fields(bytes(v)))
            metadata[bytes(entry.get(1, b"")).decode()] = bytes(entry.get(2, b"")).decode()
    return reason, domain, metadata


def reason_of(trailer: Iterable[Tuple[str, Union[str, bytes]]]) -> Tuple[Optional[str], Dict[str, str]]:
    """The class of a call's failure from its trailing metadata: the
    ErrorReason's name without its prefix ("UNKNOWN_SERVER", "TIMED_OUT",
    ...) and the metadata that comes with it; (None, {}) for a failure
    without a class."""
    for key, raw in trailer:
        if key != STATUS_DETAILS or not isinstance(raw, bytes):
            continue
        try:
            details: List[bytes] = [bytes(v) for n, v in _fields(raw) if n == 3]
            for any_msg in details:
                parts = dict(_fields(any_msg))
                if bytes(parts.get(1, b"")).decode() != ERROR_INFO_TYPE:
                    continue
                reason, domain, metadata = _error_info(bytes(parts.get(2, b"")))
                if domain == ERROR_DOMAIN:
                    if reason.startswith(_REASON_PREFIX):
                        reason = reason[len(_REASON_PREFIX):]
                    return reason, metadata
        except (ValueError, UnicodeDecodeError):
            return None, {}
    return None, {}
