"""``toolkit run NOTEBOOK [-p NAME VALUE ...] [--output-dir DIR]``: one notebook, run by papermill
into a report folder, with one result line a scheduler can forward (``toolkit.notebooks`` runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from toolkit import runlog
from toolkit.cli import unexpected
from toolkit.errors import ToolkitError
from toolkit.notebooks import (
    EXIT_ERROR,
    NOTEBOOKS,
    RunResult,
    import_jsonschema_without_iri_grammar,
    one_line,
    resolve_notebook,
    resolve_paths,
    run_notebook,
    scrub_text,
    secrets_in_environment,
)
from toolkit.parameters import declared_parameters, parse_value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``toolkit run NOTEBOOK [-p NAME VALUE ...] [--output-dir DIR]``."""
    parser.add_argument("notebook", help=f"one of {', '.join(NOTEBOOKS)}, or a path to a notebook")
    parser.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="set a parameter (YAML scalar: 5, true, 2024-05-01 stays text)",
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="where to write the run (default reports/<notebook>/<UTC time>/)",
    )
    parser.epilog = (
        "exit codes: 0 success; 1 the notebook reported a failure; "
        "2 execution, input or infrastructure error (an unwritable output folder too)"
    )


def run(args: argparse.Namespace) -> int:
    """Run the notebook; print where its report is; return 0, 1 or 2."""
    import_jsonschema_without_iri_grammar()
    try:
        path = resolve_notebook(args.notebook)
        defaults = declared_parameters(path)
        parameters = {name: parse_value(value, defaults.get(name)) for name, value in args.parameter}
        started = runlog.now_text()
        result = run_notebook(path, parameters, args.output_dir)
        warning = _record_run(result, parameters, started, _input_files(path, defaults, parameters))
    except (ToolkitError, OSError) as exc:  # bad parameter or input, unwritable output: one line
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug: its traceback is kept, but the exit code must not say "findings"
        return unexpected(exc)
    if warning:
        print(one_line(warning), file=sys.stderr)
    # The last line is the run's result, for a scheduler to forward; failures go to stderr.
    print(one_line(result.result_line()), file=sys.stdout if result.ok else sys.stderr)
    return result.exit_code


def _input_files(notebook: Path, defaults: Mapping[str, Any], parameters: Mapping[str, Any]) -> list[str]:
    """The files the run reads, for their hashes: each ``*_path`` parameter as given (relative to
    here) or, when it is not given, its default (relative to the notebook's folder, where the
    notebook runs): a run on the default ledger is recorded with that ledger's hash too."""
    given = resolve_paths(parameters)
    files = []
    for name in [*given, *(n for n in defaults if n not in given)]:
        value = given[name] if name in given else defaults[name]
        if name.endswith("_path") and isinstance(value, str) and value.strip():
            files.append(
                value if name in given else str((notebook.parent / Path(value).expanduser()).resolve())
            )
    return files


def _record_run(
    result: RunResult, parameters: Mapping[str, Any], started: str, inputs: list[str]
) -> str | None:
    """``run.json`` beside the run's outputs (scrubbed like them), then the reports index; returns
    a warning when the index could not be updated (``OutputError`` when run.json cannot be written)."""
    track = parameters.get("track")
    manifest: dict[str, Any] = {
        "kind": "notebook",
        "name": result.notebook,
        "parameters": {k: v for k, v in parameters.items()},
        "inputs": runlog.file_hashes(inputs),
        "started": started,
        "ended": runlog.now_text(),
        "exitCode": result.exit_code,
        "status": runlog.STATUS.get(result.exit_code, "error"),
        "reason": result.summary if result.ok else result.message,
        "report": result.html.name if result.html is not None else None,
        **({"track": track, **_audit_head(str(track))} if track else {}),
        **runlog.counts_from_folder(result.output_dir),
    }
    text = scrub_text(json.dumps(manifest, default=str), secrets_in_environment())
    runlog.write_manifest(result.output_dir, json.loads(text), inputs=inputs)
    return runlog.index_warning(result.output_dir)


def _audit_head(track: str) -> dict[str, str]:
    """The track's audit head once the run recorded it (``auditHead``, as a tracked command's
    run.json has it), for ``verify --against``; nothing when the track has none (not recorded)."""
    from toolkit.reconcile.audit import saved_head
    from toolkit.reconcile.tracking.store import check_track_name, store_path

    try:
        head = saved_head(store_path(), check_track_name(track))
    except ToolkitError:
        return {}
    return {} if head is None else {"auditHead": head.text}
