"""``toolkit sandbox``: serve the sandbox in the foreground until SIGINT/SIGTERM."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import uvicorn

from toolkit.config import load_settings
from toolkit.sandbox import store
from toolkit.sandbox.app import DEFAULT_TOLERANCE_S, ENV_DB, ENV_KEY, ENV_TOLERANCE
from toolkit.sandbox.embedded import DATABASE_NAME

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=DEFAULT_HOST, help="interface to listen on (default %(default)s)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default %(default)s)")
    parser.add_argument(
        "--db", type=Path, default=None,
        help=f"SQLite file (default: $TOOLKIT_HOME/{DATABASE_NAME})",
    )
    parser.add_argument(
        "--api-key", default=None,
        help="key clients must send (default: $TOOLKIT_API_KEY, else the test key stored in the database)",
    )
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (default 1)")
    parser.add_argument(
        "--timestamp-tolerance", type=float, default=DEFAULT_TOLERANCE_S,
        help="allowed X-Timestamp skew in seconds, past and future (default %(default)s)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until stopped; uvicorn handles SIGINT and SIGTERM with a clean shutdown."""
    settings = load_settings()
    db_path = Path(args.db) if args.db is not None else settings.home / DATABASE_NAME
    db_path.parent.mkdir(parents=True, exist_ok=True)
    if args.api_key:
        key = str(args.api_key)
    elif settings.api_key is not None:
        key = settings.api_key.get_secret_value()
    else:
        key = store.stored_api_key(store.Database(db_path))
    os.environ[ENV_DB] = str(db_path.resolve())
    os.environ[ENV_KEY] = key
    os.environ[ENV_TOLERANCE] = str(args.timestamp_tolerance)
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"sandbox: http://{host}:{args.port}  database: {db_path}", flush=True)
    print(f"api key: {key}", flush=True)
    uvicorn.run(
        "toolkit.sandbox.app:app_from_env", factory=True, host=args.host, port=args.port,
        workers=max(1, args.workers), log_level="warning", access_log=False, lifespan="off",
    )
    return 0
