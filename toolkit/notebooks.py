"""Running the notebooks with papermill into dated report folders, and the helpers their cells call.

``run_notebook`` runs one notebook into ``reports/<notebook>/<UTC timestamp>/``: the executed
``.ipynb``, an ``.html`` with the code hidden, and the files the notebook wrote itself (it writes
them to its ``output_dir`` parameter, which the runner injects). ``toolkit run``
(``toolkit.cli.run``) is its command.

Exit codes a scheduler can act on:

- 0 the notebook ran to the end;
- 1 the notebook ran and reported a failure: a cell raised ``NotebookFailure`` (exceptions over
  the threshold, outcomes not as expected);
- 2 an execution or infrastructure error (an unknown parameter, a bad input file, the service
  unreachable, a kernel that died, an output folder that cannot be written); the failing cell's
  number and error, or the reason, are printed on one line.

The API key and base URL reach the kernel only through the environment (``TOOLKIT_BASE_URL``,
``TOOLKIT_API_KEY``), never through parameters. The notebook is executed into a private temporary
folder, scrubbed of the key (raw, or JSON-, HTML-, repr- or URL-escaped) and only then written
beside the report; the runner writes each file to a temporary name and moves it into place.

A run touches only the files it wrote: the output folder's regular files are noted (inode, size,
times) before the kernel starts, and only files that are new or changed afterwards are scrubbed.
Symlinks are never followed, neither when scrubbing nor when writing. A file that holds the key
and cannot be rewritten is removed. The folder is checked writable before the kernel starts, so
an unwritable output stops the run before anything is sent to the service.

Each run also writes ``run.json`` (``toolkit.runlog``: what ran, its parameters, the sha256 of its
``*_path`` inputs, start and end, counts, exit code and reason), scrubbed like the rest, and
updates ``reports/index.html`` when its folder is under a ``reports`` folder.

Parameters named ``*_path`` given to the runner are resolved against the caller's working
directory; the kernel itself runs in the notebook's folder, so the notebooks' defaults
(``data/...``) work the same here, in JupyterLab and under nbval.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import functools
import importlib
import io
import json
import os
import re
import sqlite3
import stat
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.config import default_home
from toolkit.errors import NotebookFailure, OutputError, ParameterError, ToolkitError, error_text
from toolkit.output_record import RECORD_NAME, OutputRecord, claim
from toolkit.outputs import atomic_path, ensure_directory, fresh_folder, write_text_atomic
from toolkit.parameters import (
    OUTPUT_PARAMETER,
    check_parameters,
    parse_value,
)
from toolkit.reconcile.audit import audit_key
from toolkit.runlog import MANIFEST

#: The notebooks shipped in ``notebooks/``, by the name ``toolkit run`` accepts.
NOTEBOOKS: tuple[str, ...] = (
    "catalog_setup",
    "test_payments",
    "reconciliation_report",
    "payout_reconciliation",
    "fault_drill",
)
if TYPE_CHECKING:
    from nbformat import NotebookNode

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
DEFAULT_REPORTS = Path("reports")
KERNEL_NAME = "python3"
START_TIMEOUT_S = 120
#: No cell of these notebooks legitimately runs this long; a hung call becomes exit 2.
CELL_TIMEOUT_S = 900
REDACTED = "[redacted]"
EXIT_OK, EXIT_FAILURE, EXIT_ERROR = 0, 1, 2
_TEXT_SUFFIXES = frozenset(
    {".ipynb", ".html", ".htm", ".csv", ".txt", ".json", ".md", ".svg", ".log", ".xml", ".yaml", ".yml"}
)
_ZIP_SUFFIXES = frozenset({".xlsx", ".xlsm", ".zip"})


def import_jsonschema_without_iri_grammar() -> None:
    """Import jsonschema (papermill's nbformat validates notebooks with it) without the RFC 3987
    grammar it builds at import when ``rfc3987-syntax`` is installed (jupyterlab brings it, through
    jupyter-events): some 35 Earley parsers, 1.4 s of every ``toolkit run``, for the ``iri`` formats
    no notebook's schema has (python-jsonschema/jsonschema#1428). Called by the processes the
    toolkit owns (``toolkit run``, the demo) before anything imports jsonschema; jsonschema checks
    no ``iri`` format in them. Does nothing once jsonschema or the grammar is imported."""
    if "jsonschema" in sys.modules or "rfc3987_syntax" in sys.modules:
        return
    sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]  # its import raises ImportError
    try:
        importlib.import_module("jsonschema")
    finally:
        del sys.modules["rfc3987_syntax"]  # anyone may still import it later


@dataclass(frozen=True)
class RunResult:
    """What one run produced and how it ended (``exit_code`` 0, 1 or 2)."""

    notebook: str
    exit_code: int
    output_dir: Path
    executed: Path | None
    html: Path | None
    files: tuple[Path, ...] = field(default=())
    message: str | None = None
    failed_cell: int | None = None
    #: The last line the notebook's ``result``-tagged cell printed: its outcome in words.
    summary: str | None = None

    @property
    def ok(self) -> bool:
        """True when the notebook ran to the end (exit code 0)."""
        return self.exit_code == EXIT_OK

    def result_line(self) -> str:
        """One line a scheduler can forward: the outcome and where the report is."""
        outcome = self.summary if self.ok else self.message
        report = self.html or self.output_dir
        state = {EXIT_OK: "ok", EXIT_FAILURE: "findings"}.get(self.exit_code, "error")
        return f"{self.notebook}: {state}" + (f": {outcome}" if outcome else "") + f"; report: {report}"


# ---------------------------------------------------------------------------------------------
# Finding notebooks and checking parameters


def resolve_notebook(name_or_path: str | Path) -> Path:
    """One of the shipped names (``catalog_setup``) or a path to an ``.ipynb`` file."""
    text = str(name_or_path)
    stem = text[: -len(".ipynb")] if text.endswith(".ipynb") else text
    if stem in NOTEBOOKS and not Path(text).exists():
        return NOTEBOOK_DIR / f"{stem}.ipynb"
    path = Path(text).expanduser()
    if path.is_file() and path.suffix == ".ipynb":
        return path.resolve()
    close = difflib.get_close_matches(stem, NOTEBOOKS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (one of {', '.join(NOTEBOOKS)}, or a path)"
    raise ParameterError(f"notebook {text!r} not found{hint}")


def resolve_paths(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``*_path`` values given by the caller are relative to the caller, not the notebook folder."""
    out: dict[str, Any] = {}
    for name, value in parameters.items():
        if name.endswith("_path") and isinstance(value, str) and value.strip():
            value = str(Path(value).expanduser().resolve())
        out[name] = value
    return out


# ---------------------------------------------------------------------------------------------
# Secrets


def _embedded_key(home: Path) -> str | None:
    """The embedded sandbox's key stored in its database, read without creating anything."""
    from toolkit.sandbox import store
    from toolkit.sandbox.db import DATABASE_NAME

    database = home / DATABASE_NAME
    if not database.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as conn:
            return store.get_meta(conn, key="api_key") or None
    except sqlite3.Error:
        return None


def secrets_in_environment(env: Mapping[str, str] | None = None) -> list[str]:
    """Every key a run could know: ``TOOLKIT_API_KEY``, the embedded sandbox's stored key and the
    audit key of tracked runs (``TOOLKIT_AUDIT_KEY``, or the file ``TOOLKIT_AUDIT_KEY_FILE`` names)."""
    env = os.environ if env is None else env
    found = []
    if env.get("TOOLKIT_API_KEY"):
        found.append(env["TOOLKIT_API_KEY"])
    with contextlib.suppress(ToolkitError):  # a key file that cannot be read holds no key to hide
        audit = audit_key(env)
        if audit is not None:
            found.append(audit.decode("utf-8", "replace"))
    home = Path(env["TOOLKIT_HOME"]).expanduser() if env.get("TOOLKIT_HOME") else default_home()
    stored = _embedded_key(home)
    if stored:
        found.append(stored)
    # Short strings would redact ordinary words; real keys are long.
    return sorted({s for s in found if len(s) >= 8}, key=len, reverse=True)


#: Characters JSON or a Python repr write with a backslash in front: \", \\, \', \/.
_BACKSLASHED = frozenset("\"'\\/")
_ENTITY_NAMES = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}


def _character_forms(char: str) -> str:
    """A regex for one character of a secret as files show it.

    Raw; as an HTML entity (named, decimal or hex, escaped once more as ``&amp;...``); with the
    backslashes JSON or a repr put before it, once or twice over (``\\"``, ``\\\\'``, ``\\\\\\"``),
    and that HTML-escaped too (``\\&quot;``, as nbconvert renders an escaped string); as a
    ``\\uXXXX`` escape; URL-encoded.
    Longer forms come first; ``_redactions`` widens a match so it never cuts an escape in two.
    """
    code = ord(char)
    entity = f"#0*{code}|#x0*{code:x}" + (f"|{_ENTITY_NAMES[char]}" if char in _ENTITY_NAMES else "")
    html_forms = f"&(?:amp;)*(?i:{entity});|{re.escape(char)}"
    if char == "&":
        html_forms = f"&(?:amp;)*(?i:{entity});|&(?:amp;)*"
    units = [code] if code <= 0xFFFF else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + (code & 0x3FF)]
    unicode_escape = "".join(f"\\\\(?:\\\\)?u(?i:{unit:04x})" for unit in units)
    percent = "".join(f"%(?i:{byte:02x})" for byte in char.encode("utf-8"))
    forms = [unicode_escape, percent]
    if char == "\\":
        forms = [r"\\{4}", r"\\{2}", *forms]
    elif char in _BACKSLASHED:
        forms = [rf"\\{{3}}(?:{html_forms})", rf"\\{{1,2}}(?:{html_forms})", *forms]
    return "(?:" + "|".join([*forms, html_forms]) + ")"


@functools.lru_cache(maxsize=8)
def _secret_pattern(secrets: tuple[str, ...]) -> re.Pattern[str]:
    """One regex matching every secret in every encoding ``_character_forms`` knows, longest first."""
    return re.compile("|".join("".join(map(_character_forms, secret)) for secret in secrets))


def _backslashes_before(text: str, end: int, floor: int) -> int:
    """How many backslashes run up to ``end`` (not before ``floor``): odd means the next is escaped."""
    count = 0
    while end - count > floor and text[end - count - 1] == "\\":
        count += 1
    return count


def _redactions(text: str, secrets: Sequence[str]) -> Iterator[tuple[int, int]]:
    """The spans of ``text`` to redact: each match, widened so that no backslash escape is cut in two.

    A match that starts on an escaped character takes the backslash before it, and one that ends
    on a backslash escaping what follows takes that too, so JSON around a redaction stays valid.
    """
    floor = 0
    for match in _secret_pattern(tuple(secrets)).finditer(text):
        start, end = match.span()
        if _backslashes_before(text, start, floor) % 2:
            start -= 1
        if _backslashes_before(text, end, start) % 2 and end < len(text):
            end += 5 if re.match(r"u[0-9a-fA-F]{4}", text[end : end + 5]) else 1
        start = max(start, floor)  # the previous span, widened, may have taken its first character
        if end > start:
            yield start, end
            floor = end


def _replace(text: str, secrets: Sequence[str], replacement: Callable[[str], str]) -> str:
    """``text`` with each span of ``_redactions`` replaced by ``replacement(span)``."""
    if not secrets:
        return text
    parts, done = [], 0
    for start, end in _redactions(text, secrets):
        parts += [text[done:start], replacement(text[start:end])]
        done = end
    return "".join([*parts, text[done:]])


def scrub_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret, raw or JSON-, HTML-, repr- or URL-escaped, replaced by ``[redacted]``."""
    return _replace(text, secrets, lambda _: REDACTED)


def one_line(text: str) -> str:
    """``text`` scrubbed of any key a run could know and folded onto one line, for a scheduler to
    forward."""
    return " ".join(scrub_text(text, secrets_in_environment()).splitlines()).strip()


def error_line(exc: BaseException) -> str:
    """An error's text as ``one_line`` gives it, or what stands for it when the error cannot give
    its text (a Spark error whose JVM died): the line that says why a run stopped is never lost."""
    text = error_text(exc)
    return "(its text cannot be read)" if text is None else one_line(text)


def _scrub_bytes(data: bytes, secrets: Sequence[str], *, keep_length: bool) -> bytes:
    """``scrub_text`` for bytes in any encoding; ``keep_length`` overwrites with ``*`` byte for byte."""
    text = data.decode("utf-8", "surrogateescape")  # every byte survives the round trip

    def stars(found: str) -> str:
        return "*" * len(found.encode("utf-8", "surrogateescape"))

    scrubbed = _replace(text, secrets, stars if keep_length else lambda _: REDACTED)
    return scrubbed.encode("utf-8", "surrogateescape")


def _read_regular_file(path: Path) -> tuple[bytes, os.stat_result] | None:
    """The bytes and status of ``path`` if it is a regular file; a symlink is never followed."""
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink
            return None
        raise OutputError(f"cannot read {path} to redact it: {exc.strerror or type(exc).__name__}") from None
    with os.fdopen(handle, "rb") as file:
        info = os.fstat(file.fileno())
        return (file.read(), info) if stat.S_ISREG(info.st_mode) else None


def _scrub_zip(data: bytes, secrets: Sequence[str]) -> bytes | None:
    """A zip (an .xlsx workbook) with its members scrubbed, or ``data`` when none held a secret.

    None when it cannot be read as a zip: it is then scrubbed as bytes like any other file.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = [(item, archive.read(item)) for item in archive.infolist()]
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, ValueError):  # RuntimeError: encrypted
        return None
    scrubbed = [(item, _scrub_bytes(body, secrets, keep_length=False)) for item, body in members]
    if all(new == old for (_, new), (_, old) in zip(scrubbed, members, strict=True)):
        return data
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for item, body in scrubbed:
            archive.writestr(item, body)
    return buffer.getvalue()


def scrub_file(path: Path, secrets: Sequence[str]) -> bool:
    """Redact secrets in a written file (text, or the members of a zip such as .xlsx).

    Other binary files get each match overwritten with as many ``*``. The file is replaced whole
    (same mode), so a failure leaves it as it was; a symlink is never followed nor replaced.
    Returns whether anything was found. ``OutputError`` when it cannot be read or rewritten.
    """
    if not secrets:
        return False
    found = _read_regular_file(path)
    if found is None:
        return False
    data, info = found
    suffix = path.suffix.lower()
    result = _scrub_zip(data, secrets) if suffix in _ZIP_SUFFIXES else None
    if result is None:
        result = _scrub_bytes(data, secrets, keep_length=suffix not in _TEXT_SUFFIXES)
    if result == data:
        return False
    with atomic_path(path) as temporary:
        temporary.write_bytes(result)
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
    return True


def _scrub_node(node: Any, secrets: Sequence[str]) -> Any:
    """A parsed JSON document with every string (keys too) scrubbed; its serialisation stays valid JSON."""
    if isinstance(node, str):
        return scrub_text(node, secrets)
    if isinstance(node, list):
        return [_scrub_node(item, secrets) for item in node]
    if isinstance(node, dict):
        return {scrub_text(k, secrets): _scrub_node(v, secrets) for k, v in node.items()}
    return node


# ---------------------------------------------------------------------------------------------
# Running


#: What changes when a file is written or replaced: device, inode, size, mtime and ctime (ns).
_Signature = tuple[int, int, int, int, int]


def declared_outputs(notebook: Path) -> tuple[str, ...]:
    """The files a notebook writes into its ``output_dir``, as its metadata declares them
    (``metadata.toolkit.outputs``), so that the runner can refuse to replace an input or a file the
    toolkit did not write before the kernel starts; none when the notebook declares none."""
    try:
        metadata = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return ()
    declared = metadata.get("toolkit", {}).get("outputs", []) if isinstance(metadata, dict) else []
    return tuple(str(name) for name in declared if isinstance(name, str))


def _output_folder(notebook: str, output_dir: str | Path | None, reports_root: Path) -> Path:
    """The run's folder, made and proven writable before the kernel starts (before anything is sent)."""
    folder = fresh_folder(reports_root / notebook) if output_dir is None else ensure_directory(output_dir)
    try:
        handle, probe = tempfile.mkstemp(prefix=".toolkit-write-check.", dir=folder)
    except OSError as exc:
        raise OutputError(f"cannot write to {folder}: {exc.strerror or exc}") from None
    os.close(handle)
    os.unlink(probe)
    return folder.resolve()


def _regular_files(root: Path) -> dict[Path, _Signature]:
    """Every regular file under ``root`` with its signature; symlinks (to files or folders) are skipped."""
    found: dict[Path, _Signature] = {}
    for folder, _, names in os.walk(root):  # followlinks=False: a symlinked folder is not entered
        for name in names:
            path = Path(folder, name)
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found[path] = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    return found


def _scrub_written(
    root: Path, before: Mapping[Path, _Signature], secrets: Sequence[str]
) -> tuple[tuple[Path, ...], str]:
    """Scrub the regular files the run created or changed under ``root``, and no other file.

    A file that may hold the key and cannot be rewritten is removed: the key is never left behind.
    Returns the files written (those removed left out) and what went wrong, or an empty string.
    """
    written = sorted(p for p, signature in _regular_files(root).items() if before.get(p) != signature)
    failures: list[OutputError] = []
    removed: list[str] = []
    kept: list[str] = []
    for file in written:
        try:
            scrub_file(file, secrets)
        except OutputError as exc:
            failures.append(exc)
            try:
                file.unlink(missing_ok=True)
                removed.append(str(file.relative_to(root)))
            except OSError:
                kept.append(str(file.relative_to(root)))
    problem = str(failures[0]) if failures else ""
    if removed:
        problem += f"; removed {len(removed)} file(s) the key could not be redacted in: {', '.join(removed)}"
    if kept:
        problem += f"; the key may remain in {', '.join(kept)}, which could not be removed"
    return tuple(f for f in written if f.exists()), problem


def _record_written(folder: Path, written: Sequence[Path], problem: str) -> str:
    """Note the run's files, as they are once scrubbed, in the folder's record
    (``toolkit.output_record``); returns ``problem`` with what went wrong doing so, if anything."""
    ours = [f.relative_to(folder).as_posix() for f in written if f.name != RECORD_NAME]
    try:
        OutputRecord.read(folder).updated(ours)
    except OutputError as exc:
        return "; ".join(filter(None, [problem, str(exc)]))
    return problem


@contextlib.contextmanager
def _kernel_environment() -> Iterator[None]:
    """The kernel inherits this process's environment: pin TOOLKIT_HOME to an absolute path.

    The kernel runs in the notebook's folder, so a relative home would otherwise point somewhere
    else than the caller's.
    """
    before = os.environ.get("TOOLKIT_HOME")
    home = Path(before).expanduser().resolve() if before else default_home()
    os.environ["TOOLKIT_HOME"] = str(home)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TOOLKIT_HOME", None)
        else:
            os.environ["TOOLKIT_HOME"] = before


def _write_html(notebook: NotebookNode, path: Path, secrets: Sequence[str]) -> None:
    """The report with the code hidden, from the scrubbed notebook, scrubbed once more as HTML."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(  # type: ignore[no-untyped-call]
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    )
    body, _ = exporter.from_notebook_node(notebook)
    write_text_atomic(path, scrub_text(body, secrets))


def _finish_notebook(executed: Path, target: Path, secrets: Sequence[str]) -> NotebookNode:
    """Read the executed notebook, scrub it, drop what papermill recorded about the machine.

    Every string of the parsed JSON is scrubbed rather than the file's text, so a key that JSON
    escapes is found decoded and the rewritten notebook is valid JSON whatever the key holds.
    """
    import nbformat

    document = _scrub_node(json.loads(executed.read_text(encoding="utf-8")), secrets)
    notebook: NotebookNode = nbformat.reads(json.dumps(document), as_version=4)  # type: ignore[no-untyped-call]
    recorded = notebook.metadata.get("papermill", {})
    recorded.pop("environment_variables", None)
    recorded["input_path"] = Path(str(recorded.get("input_path", ""))).name
    recorded["output_path"] = target.name
    text = nbformat.writes(notebook)  # type: ignore[no-untyped-call]
    write_text_atomic(target, text if text.endswith("\n") else text + "\n")
    return notebook


@contextlib.contextmanager
def _signals_to_the_kernel(managers: list[Any]) -> Iterator[None]:
    """Ctrl-C (or a scheduler's SIGTERM) interrupts the notebook's kernel, which runs in a session
    of its own and never saw it: a batch went on charging until the kernel was shut down, seconds
    later. Interrupted, the cell stops as in Jupyter (no further call starts; the one in flight is
    journaled unknown) and the run ends as a failed one, its files written and one line said. A
    second signal acts as it would have (from the main thread only: signals go nowhere else)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.getsignal(number) for number in caught}

    def interrupt(number: int, frame: Any) -> None:
        for each, handler in previous.items():
            signal.signal(each, handler)
        kernels = [getattr(manager.provisioner, "process", None) for manager in managers]
        running = [kernel for kernel in kernels if kernel is not None and kernel.poll() is None]
        if not running:  # no kernel yet: stop here, as without this handler
            signal.raise_signal(number)
            return
        for kernel in running:  # as the manager's interrupt does, from a handler that cannot await
            kernel.send_signal(signal.SIGINT)

    for number in caught:
        signal.signal(number, interrupt)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _local_kernel_manager(sockets: Path, managers: list[Any]) -> type:
    """A kernel manager that talks to the kernel over IPC sockets instead of TCP on loopback.

    No port is opened, and the kernel does not print its warning about unencrypted TCP into
    every scheduled run's log. The sockets are made in ``sockets``, the run's own folder: by
    default they were ``kernel-ipc-1`` and on in the kernel's working folder (the notebooks'),
    where two runs at once took the same ones (``Invalid Signature``) and a killed run left them.
    """
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    # Async, as nbclient's own default: with the blocking manager its client waited for a cell's
    # reply in one blocking call, so the check that the kernel is alive never ran, and a kernel
    # killed mid-cell hung the run past the cell's timeout.
    class LocalKernelManager(AsyncKernelManager):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            managers.append(self)  # for _signals_to_the_kernel

        @default("transport")
        def _default_transport(self) -> str:
            return "ipc"

        @default("ip")
        def _default_ip(self) -> str:
            return str(sockets / "kernel-ipc")

    return LocalKernelManager


def run_notebook(
    name_or_path: str | Path,
    parameters: Mapping[str, Any] | None = None,
    output_dir: str | Path | None = None,
    *,
    reports_root: str | Path = DEFAULT_REPORTS,
    kernel_name: str = KERNEL_NAME,
    cell_timeout: int = CELL_TIMEOUT_S,
) -> RunResult:
    """Run one notebook with papermill; see the module docstring.

    Raises ``ParameterError`` before anything runs, and ``OutputError`` when the output folder cannot
    be written: before the kernel starts when that shows, else after it, the run's files scrubbed.
    """
    path = resolve_notebook(name_or_path)
    given = dict(parameters or {})
    check_parameters(path, given)
    name = path.stem
    target_dir = _output_folder(name, output_dir, Path(reports_root))
    values = resolve_paths(given) | {OUTPUT_PARAMETER: str(target_dir)}
    executed_path = target_dir / f"{name}.ipynb"
    html_path = target_dir / f"{name}.html"
    # Nothing is sent, nor written, when a file the run would replace is an input or not the
    # toolkit's: the notebook's own files (as its metadata declares them) and the runner's.
    inputs = [v for k, v in values.items() if k.endswith("_path") and isinstance(v, str)]
    claim(target_dir, [executed_path.name, html_path.name, MANIFEST, *declared_outputs(path)], inputs=inputs)
    before = _regular_files(target_dir)
    managers: list[Any] = []
    with (
        _kernel_environment(),
        tempfile.TemporaryDirectory(prefix="toolkit-run-") as private,
        _signals_to_the_kernel(managers),
    ):
        scratch = Path(private) / f"{name}.ipynb"
        exit_code, message, failed_cell = _execute(path, scratch, values, kernel_name, cell_timeout, managers)
        secrets = secrets_in_environment()
        unwritten, notebook = "", None
        try:
            notebook = _finish_notebook(scratch, executed_path, secrets) if scratch.is_file() else None
            if notebook is not None:
                _write_html(notebook, html_path, secrets)
        except OutputError as exc:
            unwritten = str(exc)
        finally:  # the notebook's own files are scrubbed whatever happened to the report
            written, unredacted = _scrub_written(target_dir, before, secrets)
            unredacted = _record_written(target_dir, written, unredacted)
    if unwritten or unredacted:
        raise OutputError("; ".join(filter(None, [unwritten, unredacted])))
    return RunResult(
        notebook=name,
        exit_code=exit_code,
        output_dir=target_dir,
        executed=executed_path if executed_path in written else None,
        html=html_path if html_path in written else None,
        files=tuple(f for f in written if f not in (executed_path, html_path)),
        message=None if message is None else scrub_text(message, secrets),
        failed_cell=failed_cell,
        summary=None if notebook is None else _result_summary(notebook),
    )


def _execute(
    path: Path,
    scratch: Path,
    values: dict[str, Any],
    kernel_name: str,
    cell_timeout: int,
    managers: list[Any],
) -> tuple[int, str | None, int | None]:
    """Execute the notebook into ``scratch``: its exit code, what went wrong (None: nothing) and in
    which cell. A ``NotebookFailure`` raised by a cell is a finding (exit 1); anything else is
    infrastructure (exit 2)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    try:
        papermill.execute_notebook(
            str(path),
            str(scratch),
            parameters=values,
            kernel_name=kernel_name,
            cwd=str(path.parent),
            progress_bar=False,
            log_output=False,
            start_timeout=START_TIMEOUT_S,
            execution_timeout=cell_timeout,
            kernel_manager_class=_local_kernel_manager(scratch.parent, managers),
        )
    except PapermillExecutionError as exc:
        if exc.ename == NotebookFailure.__name__:
            return EXIT_FAILURE, str(exc.evalue), exc.exec_count
        if exc.ename == KeyboardInterrupt.__name__:
            interrupted = (
                f"interrupted in cell [{exc.exec_count}]: no further call was started; one in "
                "flight is journaled unknown (toolkit journal list --unknown)"
            )
            return EXIT_ERROR, interrupted, exc.exec_count
        failed = f"cell [{exc.exec_count}] (cell #{exc.cell_index + 1}): {exc.ename}: {exc.evalue}"
        return EXIT_ERROR, failed, exc.exec_count
    except Exception as exc:  # kernel death, timeouts, unreadable notebook: all infrastructure
        return EXIT_ERROR, f"{type(exc).__name__}: {exc}", None
    return EXIT_OK, None, None


def _result_summary(notebook: NotebookNode) -> str | None:
    """The last line printed by the cell tagged ``result`` (already scrubbed with the notebook)."""
    for cell in notebook.cells:
        if "result" not in cell.get("metadata", {}).get("tags", []):
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1] if lines else None
    return None


__all__ = [
    "EXIT_ERROR",
    "EXIT_FAILURE",
    "EXIT_OK",
    "NOTEBOOKS",
    "NotebookFailure",
    "ParameterError",
    "RunResult",
    "check_parameters",
    "parse_value",
    "resolve_notebook",
    "resolve_paths",
    "run_notebook",
    "scrub_file",
    "scrub_text",
    "secrets_in_environment",
]
