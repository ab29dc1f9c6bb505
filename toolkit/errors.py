"""Every error the toolkit raises, under one base class.

    ToolkitError
    ├── ConfigurationError          settings that cannot work (bad URL, missing key for a live service)
    ├── MoneyError (ValueError)     an amount or currency that cannot be represented exactly
    ├── RequestValidationError      a request that breaks a rule of the spec; nothing was sent
    ├── APIError                    the service answered with a non-2xx status or an envelope code != 200
    │   ├── AuthenticationError     HTTP 401; carries the service's plain-string body
    │   └── NotFoundError           HTTP 404
    ├── TransportError              the request failed on the way; says whether it may have reached the server
    ├── OutcomeUnknownError         a create call may have taken effect; it is never re-sent by itself
    ├── JournalError                the local journal refuses an operation
    │   └── JournalConflictError    same business key, different request
    ├── FrameError                  data that cannot become an exact frame (an amount too fine)
    ├── InputError                  an input file or row that cannot be used; names the file, column or row
    ├── ParameterError              a notebook parameter that is not declared, is the runner's, or cannot work
    ├── NotebookFailure             raised by a notebook cell: the run failed on its merits (exit code 1)
    ├── OutputError                 an output that cannot be written (a file in the way, read-only, disk full)
    ├── EngineError                 the reconciliation engine cannot run (memory limit, spill space, no Spark)
    ├── TrackError                  a tracked reconciliation refuses (unknown track or id, run out of order)
    │   └── TrackIntegrityError     the track's audit log fails verification; names the first bad entry
    └── SandboxError                a sandbox-only control used against something that is not a sandbox

Messages never contain the API key: errors are built from status codes, envelope fields and
field names, never from request headers.
"""

from __future__ import annotations


class ToolkitError(Exception):
    """Base class of every error raised by the toolkit."""


class ConfigurationError(ToolkitError):
    """Settings that cannot work."""


class MoneyError(ToolkitError, ValueError):
    """An amount or currency that cannot be represented exactly."""


class RequestValidationError(ToolkitError, ValueError):
    """A request breaks a rule of the API spec; it was not sent.

    ``errors`` lists ``(field, message)`` pairs, the field as a dotted path of the spec's names.
    The message names the first ``SHOWN_ERRORS`` of them and counts the rest, so it stays short
    whatever the request.
    """

    SHOWN_ERRORS = 5

    def __init__(self, model: str, errors: list[tuple[str, str]]) -> None:
        self.model = model
        self.errors = errors
        super().__init__(f"invalid {model}: {self.detail}")

    @property
    def detail(self) -> str:
        """The first few problems, and how many more there are."""
        shown = [
            f"{field}: {message}" if field else message for field, message in self.errors[: self.SHOWN_ERRORS]
        ]
        more = len(self.errors) - len(shown)
        return "; ".join(shown) + (f"; and {more} more problem(s)" if more > 0 else "")


class APIError(ToolkitError):
    """The service said no: a non-2xx HTTP status, or an envelope whose code is not 200."""

    def __init__(self, message: str, *, http_status: int, code: int | None, msg: str | None) -> None:
        self.http_status = http_status
        self.code = code
        self.msg = msg
        super().__init__(message)


class AuthenticationError(APIError):
    """HTTP 401: the API key or timestamp was refused. ``body`` is the service's plain string."""

    def __init__(self, body: str) -> None:
        self.body = body
        super().__init__(
            f"authentication failed (HTTP 401): {body}; check TOOLKIT_API_KEY and TOOLKIT_BASE_URL",
            http_status=401,
            code=None,
            msg=body,
        )


class NotFoundError(APIError):
    """HTTP 404: the resource does not exist."""


class TransportError(ToolkitError):
    """The request failed in transit.

    ``may_have_reached_server`` is False only when the connection was never made (refused, connect
    timeout), so the service certainly did nothing.
    """

    def __init__(self, message: str, *, may_have_reached_server: bool) -> None:
        self.may_have_reached_server = may_have_reached_server
        super().__init__(message)


class OutcomeUnknownError(ToolkitError):
    """A create call may have reached the service, and its result is unknown.

    The spec has no idempotency key, so sending it again could charge twice: the toolkit never does
    that by itself. Look the payment up (for example in the processor's export) and record what you
    find with ``Journal.resolve``.
    """

    def __init__(self, message: str, *, method: str, path: str, http_status: int | None = None) -> None:
        self.method = method
        self.path = path
        self.http_status = http_status
        super().__init__(message)


class JournalError(ToolkitError):
    """The journal refuses an operation."""


class JournalConflictError(JournalError):
    """The same business key was journaled with a different request; nothing was sent."""


class FrameError(ToolkitError):
    """Data that cannot become an exact frame (an amount finer than its currency allows)."""


class InputError(ToolkitError):
    """An input that cannot be used: names the file, and the column or row where it can."""


class ParameterError(ToolkitError):
    """A parameter the notebook does not declare, the runner owns, or whose value cannot work."""


class NotebookFailure(ToolkitError):
    """Raised by a notebook cell when the run should fail on its merits (exit code 1).

    The runner recognises it by name in papermill's error, so a notebook raises it for
    "the numbers are wrong", and anything else it raises means "the run is broken" (exit 2).
    """


class OutputError(ToolkitError):
    """An output file or folder cannot be written; names the path and the reason (exit code 2)."""


class SandboxError(ToolkitError):
    """A sandbox-only control was aimed at something that is not a sandbox."""


class EngineError(ToolkitError):
    """The reconciliation engine could not run: its memory limit or spill space ran out, or the
    backend (Spark: Java, a cluster) could not start. The message says which and what to change."""


class TrackError(ToolkitError):
    """A tracked reconciliation refuses an operation: unknown track or exception id, a run whose
    cut-off is before the track's last run, a store that cannot be opened or is busy."""


class TrackIntegrityError(TrackError):
    """A track's audit log does not verify: an entry was changed, removed or inserted outside
    the toolkit. The message names the first entry that does not match."""


def error_text(exc: BaseException) -> str | None:
    """An error's text, or None when it cannot be had: a Spark error asks its JVM for its text,
    and a JVM that died (of heap memory, or killed) answers nothing but a refused connection."""
    try:
        return str(exc)
    except Exception:
        return None
