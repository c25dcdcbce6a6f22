"""The server's log lines: `text` (one readable line each) or `json` (one object per line).

A JSON line carries the time (UTC, ISO 8601), level, logger and message, and every field a caller
passed with `extra=` among `JSON_FIELDS`: the access line gives the request id, method, path,
status and duration, so a log pipeline can join a line to the `X-PowerContext-Request-ID` a client
quotes.
"""

from __future__ import annotations

import datetime
import json
import logging

from uvicorn.config import LOG_LEVELS

LOG_FORMATS = ("text", "json")
JSON_FIELDS = ("request_id", "method", "path", "status", "duration_ms")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line |= {field: getattr(record, field) for field in JSON_FIELDS if hasattr(record, field)}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def configure_logging(level: str, log_format: str = "text") -> None:
    handler = logging.StreamHandler()
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=LOG_LEVELS[level], handlers=[handler])
