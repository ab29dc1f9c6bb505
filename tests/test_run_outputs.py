"""What ``toolkit run`` writes, and what it leaves alone.

A small notebook made here shows the API key every way a notebook can (printed, as JSON, as HTML,
as a repr) and writes it into files of its own; nothing else is needed, so no service is started.
Checked: only the files the run wrote are scrubbed, in every encoding of the key; files that were
already in the output folder, and the targets of symlinks, are left byte for byte; an output folder
that cannot be written is exit code 2 with one line, and leaves no partial file.
"""

from __future__ import annotations

import builtins
import errno
import html
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.leaks import KEY, encodings, leaks
from toolkit.cli import main


def leaky_notebook(folder: Path) -> Path:
    """A notebook that shows the key from the environment every way it can, and writes files with it."""

    def new_code_cell(source: str, **fields: Any) -> Any:
        return nbformat.v4.new_code_cell(source, **fields)  # type: ignore[no-untyped-call]

    book = nbformat.v4.new_notebook()  # type: ignore[no-untyped-call]
    book.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    book.cells = [
        new_code_cell('output_dir = ""', metadata={"tags": ["parameters"]}),
        new_code_cell(
            "import html, json, os\n"
            "from pathlib import Path\n"
            "import markupsafe\n"
            "from IPython.display import HTML, display\n"
            "key = os.environ['TOOLKIT_API_KEY']\n"
            "print(key)\n"
            "print(json.dumps({'key': key}))\n"
            "display(HTML('<b>' + html.escape(key) + '</b>'))\n"
            "display({'application/json': {'key': key}, 'text/plain': repr(key)}, raw=True)\n"
            "key"
        ),
        new_code_cell(
            "out = Path(output_dir)\n"
            "(out / 'notes.txt').write_text(key)\n"
            "(out / 'data.json').write_text(json.dumps({'key': key}))\n"
            "(out / 'page.html').write_text('<p>' + str(markupsafe.escape(key)) + '</p>')\n"
            "(out / 'sub').mkdir(exist_ok=True)\n"
            "(out / 'sub' / 'more.txt').write_text(html.escape(key))"
        ),
    ]
    path = folder / "leaky.ipynb"
    nbformat.write(book, str(path))  # type: ignore[no-untyped-call]
    return path


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLKIT_API_KEY", KEY)
    return leaky_notebook(tmp_path)


def toolkit_run(notebook: Path, output: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["run", str(notebook), "--output-dir", str(output)])
    out, err = capsys.readouterr()
    for text in (out, err):
        assert not [form for form in encodings(KEY) if form in text]
    return code, out, err


def one_error_line(err: str) -> str:
    """The command's stderr is one ``error: ...`` line, no traceback."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------------------------------------
# Only what the run wrote is scrubbed, in every encoding


@pytest.mark.slow
def test_key_with_characters_that_escape_is_in_no_output_in_any_encoding(
    notebook: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out"
    code, _, _ = toolkit_run(notebook, output, capsys)
    assert code == 0
    assert {p.name for p in output.rglob("*")} == {
        "leaky.ipynb",
        "leaky.html",
        "notes.txt",
        "data.json",
        "page.html",
        "sub",
        "more.txt",
        "run.json",  # the run's manifest (toolkit.runlog), scrubbed like the rest
        ".toolkit-written.json",  # the files the toolkit wrote here, with their sha256
    }
    assert not leaks(output), leaks(output)
    book = nbformat.read(str(output / "leaky.ipynb"), as_version=4)  # type: ignore[no-untyped-call]
    assert "[redacted]" in json.dumps(book)
    assert json.loads((output / "data.json").read_text()) == {"key": "[redacted]"}


@pytest.mark.slow
def test_files_the_run_did_not_write_and_symlink_targets_are_left_alone(
    notebook: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out"
    (output / "old").mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    untouched = {
        output / "toolkit.env": f"TOOLKIT_API_KEY={KEY}\n",
        output / "old" / "previous.json": json.dumps({"key": KEY}),
        outside / "toolkit.env": f"TOOLKIT_API_KEY={KEY}\n",
        outside / "report.html": f"<p>{html.escape(KEY)}</p>",
        outside / "folder" / "inside.txt": KEY,
    }
    for path, text in untouched.items():
        path.write_text(text)
    (output / "linked.env").symlink_to(outside / "toolkit.env")
    (output / "leaky.html").symlink_to(outside / "report.html")  # where the runner writes its HTML
    (output / "folder").symlink_to(outside / "folder", target_is_directory=True)
    before = {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in untouched}

    # A symlink where the runner writes its HTML is not a file the toolkit wrote: refused, before
    # the kernel starts, and neither it nor its target is touched.
    code, _, err = toolkit_run(notebook, output, capsys)
    assert code == 2 and "leaky.html: it is not a regular file the toolkit wrote" in err
    assert (output / "leaky.html").is_symlink()
    (output / "leaky.html").unlink()
    code, _, _ = toolkit_run(notebook, output, capsys)
    assert code == 0
    assert {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in untouched} == before
    assert (output / "linked.env").is_symlink() and (output / "folder").is_symlink()
    assert "[redacted]" in (output / "leaky.html").read_text()
    assert "[redacted]" in (output / "notes.txt").read_text()


# ---------------------------------------------------------------------------------------------
# An output folder that cannot be written: exit 2, one line, nothing partial


def test_output_folder_that_is_a_file_is_exit_2_with_one_line(tmp_path: Path) -> None:
    """Run as a process: the exit code and stderr a scheduler sees."""
    in_the_way = tmp_path / "out"
    in_the_way.write_text("not a folder")
    notebook = leaky_notebook(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "toolkit.cli", "run", str(notebook), "--output-dir", str(in_the_way)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "not a folder" in one_error_line(done.stderr)
    assert in_the_way.read_text() == "not a folder"


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """An existing folder this process cannot write to, whoever runs the tests.

    A folder with mode 0o555 does not stop root (tests often run as root in containers); sysfs
    refuses new files even to root, and these two folders hold no file a scan could hang on.
    """
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        yield _refusing_writes([folder, Path("/sys/dev"), Path("/sys/power")])
    finally:
        folder.chmod(0o755)


def _refusing_writes(candidates: list[Path]) -> Path:
    for candidate in candidates:
        try:
            handle, name = tempfile.mkstemp(dir=candidate)
        except OSError:
            if candidate.is_dir():
                return candidate
            continue
        os.close(handle)
        os.unlink(name)
    pytest.skip("no folder here refuses writes to this process (run as root, and /sys is writable)")


@pytest.mark.parametrize("where", ["existing read-only folder", "folder under a read-only one"])
def test_read_only_output_folder_is_exit_2_before_anything_runs(
    where: str,
    read_only: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = read_only if where.startswith("existing") else read_only / "toolkit-run-out"
    started = []
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: started.append(a))
    monkeypatch.setenv("TOOLKIT_API_KEY", KEY)
    code, _, err = toolkit_run(leaky_notebook(tmp_path), output, capsys)
    assert code == 2
    assert str(output) in one_error_line(err)
    assert not started, "the notebook ran although its output cannot be written"


class _FullDisk(io.RawIOBase):
    """A file on a disk that fills up after a few bytes."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.handle.write(data[:10])
        self.handle.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self) -> None:
        self.handle.close()
        super().close()


@pytest.fixture
def full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder where every file this process opens for writing fills the disk after 10 bytes.

    The kernel is another process and writes its own files normally: the disk fills while the
    runner writes its report.
    """
    folder = tmp_path / "full"
    folder.mkdir()
    real_open = builtins.open

    def open_on_full_disk(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        if (
            isinstance(file, str | os.PathLike)
            and any(m in mode for m in "wax+")
            and Path(os.fspath(file)).resolve().is_relative_to(folder.resolve())
        ):
            return _FullDisk(handle)
        return handle

    monkeypatch.setattr(builtins, "open", open_on_full_disk)
    monkeypatch.setattr(io, "open", open_on_full_disk)
    yield folder


@pytest.mark.slow
def test_full_disk_is_exit_2_and_leaves_no_partial_report_nor_the_key(
    notebook: Path, full_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = toolkit_run(notebook, full_disk, capsys)
    assert code == 2
    line = one_error_line(err)
    assert line.startswith(f"error: cannot write {full_disk / 'leaky.ipynb'}: No space left on device"), line
    assert "removed 4 file(s) the key could not be redacted in" in line  # the notebook's own, not scrubbable
    left = sorted(p.name for p in full_disk.rglob("*") if p.is_file())
    assert "leaky.ipynb" not in left and "leaky.html" not in left, left
    assert not [name for name in left if name.endswith(".tmp")], left
    assert not leaks(full_disk), leaks(full_disk)
