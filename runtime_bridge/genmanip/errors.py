"""Errors of the GenManip protocol: each knows the HTTP status the server answers with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_bt.errors import BridgeError

__all__ = ["ActionError", "HttpError"]


class HttpError(BridgeError):
    """A message of the GenManip HTTP protocol is unreadable, hostile, too large or malformed.

    ``http_status`` is what a server answers with: 400 for an unreadable or refused body (as
    upstream does for a bad pickle), 413 for an oversized body, 500 for anything else (upstream
    answers every other failure with 500).
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        http_status: int = 400,
        where: str | None = None,
        fix: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.http_status = http_status
        super().__init__(code, message, where=where, fix=fix, details=details)

    def _render(self) -> str:
        text = super()._render()
        if self.where and self.message.startswith(self.where):
            text = text[len(self.where) + 2:]  # the message already says where
        return text


class ActionError(HttpError):
    """An action does not fit the embodiment: wrong length, non-finite value, bad quaternion,
    unknown or missing ``control_type``. The message names the field and the expected shape."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        where: str | None = None,
        fix: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(code, message, http_status=500, where=where, fix=fix, details=details)
