"""``toolkit sandbox``: serve the sandbox in the foreground until SIGINT/SIGTERM.

``toolkit sandbox faults add|list|clear`` drives the fault rules of a running one
(``toolkit.cli.sandbox_faults``).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

import uvicorn

from toolkit.cli import sandbox_faults
from toolkit.config import MAX_KEY_FILE, load_settings, read_key_file
from toolkit.errors import ConfigurationError
from toolkit.sandbox import faults, store
from toolkit.sandbox.app import DEFAULT_TOLERANCE_S, ENV_DB, ENV_KEY, ENV_LOG_REQUESTS, ENV_TOLERANCE
from toolkit.sandbox.db import DATABASE_NAME, Database
from toolkit.sandbox.protocol import SandboxProtocol

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765

KEY_HELP = f"""\
the key clients must send, first found of:
  --api-key KEY        visible to every user of this machine in the process list (ps): avoid it
  --api-key-file PATH  the file's one line (a regular file of at most {MAX_KEY_FILE // 1024} KiB)
  ${ENV_KEY}
  $TOOLKIT_API_KEY
  the test key stored in the database (generated as sk_test_... on first use; printed at start)
A key given by option, file or environment is never printed.

toolkit sandbox faults add|list|clear [-h] drives the fault rules of a running sandbox.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``toolkit sandbox`` arguments: where it listens, its database and its key."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = KEY_HELP
    parser.add_argument("--host", default=DEFAULT_HOST, help="interface to listen on (default %(default)s)")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT, help="port (default %(default)s)")
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help=f"SQLite file (default: $TOOLKIT_HOME/{DATABASE_NAME})",
    )
    key = parser.add_mutually_exclusive_group()
    key.add_argument(
        "--api-key",
        default=None,
        metavar="KEY",
        help="key clients must send; shown to anyone who runs ps: prefer --api-key-file or "
        f"${ENV_KEY} (see below)",
    )
    key.add_argument(
        "--api-key-file",
        type=Path,
        default=None,
        metavar="PATH",
        help="read the key from this file (one line)",
    )
    parser.add_argument("--workers", type=_workers, default=1, help="uvicorn worker processes (default 1)")
    parser.add_argument(
        "--timestamp-tolerance",
        type=float,
        default=DEFAULT_TOLERANCE_S,
        help="allowed X-Timestamp skew in seconds, past and future (default %(default)s)",
    )
    parser.add_argument(
        "--log-requests",
        action="store_true",
        help="print one line per request: time, method, path, status, latency, merchantReferenceId, "
        "fault (never headers or the key)",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    sandbox_faults.add_arguments(
        actions.add_parser(
            "faults",
            help="add, list or clear the fault rules of a running sandbox",
            description="Fault rules of a running sandbox (see docs/sandbox.md, Faults on demand).",
        )
    )


def _port(text: str) -> int:
    """A TCP port, 0 to 65535 (0: any free port): refused by argparse, exit 2, never a traceback."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def _workers(text: str) -> int:
    """At least one worker process."""
    try:
        workers = int(text)
    except ValueError:
        workers = 0
    if workers < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers (1 or more)")
    return workers


def run(args: argparse.Namespace) -> int:
    """Serve the sandbox in the foreground until SIGINT or SIGTERM; returns the exit code."""
    if args.action == "faults":
        return sandbox_faults.run(args)
    return serve(args)


def serve(args: argparse.Namespace) -> int:
    """Serve until stopped; uvicorn handles SIGINT and SIGTERM with a clean shutdown."""
    settings = load_settings()
    db_path = Path(args.db) if args.db is not None else settings.home / DATABASE_NAME
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db = Database(db_path)
    try:
        key, source = server_key(args, db)
    except ConfigurationError as exc:
        print(f"toolkit sandbox: {exc}", file=sys.stderr)
        return 2
    faults.clear_rules(db)  # fault rules never survive a restart
    os.environ[ENV_DB] = str(db_path.resolve())
    os.environ[ENV_KEY] = key
    os.environ[ENV_TOLERANCE] = str(args.timestamp_tolerance)
    os.environ[ENV_LOG_REQUESTS] = "1" if args.log_requests else "0"
    host = f"[{args.host}]" if ":" in args.host else args.host
    try:  # before saying where it serves: a busy port printed that, then uvicorn's error, exit 3
        socket.create_server((args.host, args.port)).close()
    except OSError as exc:
        print(f"toolkit sandbox: cannot serve on {host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"sandbox: http://{host}:{args.port}  database: {db_path}", flush=True)
    print(f"api key: {key if source == 'database' else f'from {source} (not printed)'}", flush=True)
    uvicorn.run(
        "toolkit.sandbox.app:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http=SandboxProtocol,
    )
    return 0


def server_key(args: argparse.Namespace, db: Database) -> tuple[str, str]:
    """The key to serve with, and where it came from (see ``KEY_HELP`` for the order)."""
    if args.api_key:
        return str(args.api_key), "--api-key"
    if args.api_key_file is not None:
        return read_key_file(args.api_key_file).get_secret_value(), str(args.api_key_file)
    from_env = os.environ.get(ENV_KEY)
    if from_env:
        return from_env, f"${ENV_KEY}"
    settings = load_settings()
    if settings.api_key is not None:
        return settings.api_key.get_secret_value(), "$TOOLKIT_API_KEY"
    return store.stored_api_key(db), "database"
