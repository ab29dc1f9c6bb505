"""Which service calls go to: the live one ``TOOLKIT_BASE_URL`` names, or the embedded sandbox.

This is the one module above both settings and the sandbox: ``toolkit.config`` only reads
settings, and starting the embedded sandbox (a uvicorn thread on a free loopback port, once per
process and database) happens here, when an environment without a base URL is resolved. The
client and the journal are handed the resolved ``Environment``; nothing else starts a server.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

import httpx
from pydantic import SecretStr

from toolkit.config import KEY_TEXT, Settings, load_settings
from toolkit.errors import ConfigurationError

logger = logging.getLogger("toolkit")


@dataclass(frozen=True)
class Environment:
    """Where calls go, and how the journal and reports name it.

    ``key`` is stable across runs: the embedded sandbox is named by its database (its port changes
    every run), any other service by its base URL. ``label`` is what reports print at the top.
    """

    kind: Literal["embedded-sandbox", "service"]
    base_url: str
    api_key: SecretStr = field(repr=False)
    key: str
    label: str
    #: The journal's name before URLs were named in one spelling, where it differs (``_service``).
    former_key: str | None = None

    @property
    def is_sandbox(self) -> bool:
        """True for the embedded sandbox (test data only), False for a service named by URL."""
        return self.kind == "embedded-sandbox"


_announced: set[str] = set()


def resolve_environment(
    settings: Settings | None = None,
    *,
    base_url: str | None = None,
    api_key: str | SecretStr | None = None,
    announce: bool = True,
) -> Environment:
    """Arguments win over the settings (read now when not given); with no base URL, the embedded
    sandbox under ``settings.home``, started once per process.

    The first use of the embedded sandbox is logged once per process, unless the caller says so
    itself (``announce=False``: the notebooks' banner, which a warning on stderr would duplicate).
    """
    settings = settings if settings is not None else load_settings()
    secret = SecretStr(api_key) if isinstance(api_key, str) else api_key
    _check_key_text(secret if secret is not None else settings.api_key)
    url = base_url or settings.base_url
    if not url:
        return _embedded_sandbox(settings, secret, announce=announce)
    return _service(url, secret or settings.api_key)


def _check_key_text(key: SecretStr | None) -> None:
    """Refuse a key that cannot travel in a header, before anything is started or sent."""
    if key is not None and not KEY_TEXT.fullmatch(key.get_secret_value()):
        raise ConfigurationError(
            "the API key must be printable ASCII without spaces or line breaks "
            "(a trailing newline from a file is a common cause)"
        )


def _embedded_sandbox(settings: Settings, key: SecretStr | None, *, announce: bool) -> Environment:
    """The embedded sandbox on ``settings.home``, started here (once) and announced once."""
    from toolkit.sandbox.embedded import embedded_sandbox

    sandbox = embedded_sandbox(settings.home)
    database = sandbox.db_path.resolve()
    if str(database) not in _announced:
        _announced.add(str(database))
        if announce:
            logger.warning(
                "toolkit: TOOLKIT_BASE_URL is not set; using the embedded sandbox at %s (database %s)",
                sandbox.base_url,
                database,
            )
    return Environment(
        kind="embedded-sandbox",
        base_url=sandbox.base_url,
        api_key=key or sandbox.api_key,
        key="sandbox-" + _digest(str(database)),
        label=f"embedded sandbox ({database})",
    )


def _service(url: str, key: SecretStr | None) -> Environment:
    """A service named by its URL, which needs a key."""
    parsed = urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname or url != url.strip():
        raise ConfigurationError(f"TOOLKIT_BASE_URL must be an http(s) URL, got {url!r}")
    # Each of these made the same service another journal, where its payments were sent again (and
    # a query or fragment sent every call to the wrong path); a user name may hold a password.
    given = {"a user name": "@" in parsed.netloc, "a query": "?" in url, "a fragment": "#" in url}
    if any(given.values()):
        extra = " or ".join(part for part, found in given.items() if found)
        shown = "" if given["a user name"] else f" (got {url!r})"
        raise ConfigurationError(
            f"TOOLKIT_BASE_URL must be the service's address alone, without {extra}{shown}: "
            "scheme, host, port and path"
        )
    if key is None or not key.get_secret_value():
        raise ConfigurationError(f"TOOLKIT_API_KEY is required to call {url}")
    try:  # one spelling of the URL: HTTP://Host:80/ and http://host name one service, one journal
        canonical = httpx.URL(str(httpx.URL(url)))  # twice: a default port goes once the scheme is lower case
    except httpx.InvalidURL as exc:
        raise ConfigurationError(f"TOOLKIT_BASE_URL {url!r} is not a valid URL ({exc})") from None
    named = _key(str(canonical).rstrip("/"), canonical.netloc.decode("ascii"))
    written = _key(url.rstrip("/"), parsed.netloc)
    url = str(canonical).rstrip("/")
    return Environment(
        kind="service",
        base_url=url,
        api_key=key,
        key=named,
        label=f"service at {url}",
        former_key=written if written != named else None,
    )


def _key(url: str, netloc: str) -> str:
    """A service's journal name: its host and port, readable, and a digest of its URL."""
    return re.sub(r"[^A-Za-z0-9]+", "-", netloc).strip("-") + "-" + _digest(url)


def _digest(text: str) -> str:
    """A short stable name for a database path or a URL (journal file names)."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]
