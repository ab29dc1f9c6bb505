"""The journal fails closed: a file that is there but empty, damaged or not a journal stops the run
with one clear line and nothing is sent; the default home is one per user, whatever the folder."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import exported_payments
from toolkit import Journal, JournalError, create_payments
from toolkit.cli import main
from toolkit.config import Settings, default_home, load_settings
from toolkit.environment import resolve_environment
from toolkit.sandbox.embedded import RunningSandbox


def batch(prefix: str, count: int) -> list[dict[str, Any]]:
    return [
        {
            "merchantReferenceId": f"{prefix}-{i:03d}",
            "paymentMethodType": "CARD",
            "paymentInstrumentId": "pi_test_success",
            "returnUrl": "https://shop/r",
            "customerEmail": f"{prefix}{i}@example.com",
            "amount": f"{i + 1}.25",
            "currency": "USD",
        }
        for i in range(count)
    ]


def use_sandbox(monkeypatch: pytest.MonkeyPatch, sandbox: RunningSandbox) -> None:
    monkeypatch.setenv("TOOLKIT_BASE_URL", sandbox.base_url)
    monkeypatch.setenv("TOOLKIT_API_KEY", sandbox.api_key.get_secret_value())


def journal_path() -> Path:
    settings = load_settings()
    return Journal.path_for(resolve_environment(settings), settings.home)


def sent_with(sandbox: RunningSandbox, prefix: str) -> int:
    return sum(str(p["merchantReferenceId"]).startswith(prefix) for p in exported_payments(sandbox))


def damage_empty(path: Path) -> None:
    path.write_bytes(b"")


def damage_zeroed(path: Path) -> None:
    path.write_bytes(b"\0" * path.stat().st_size)


def damage_empty_database(path: Path) -> None:
    path.unlink()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE something_else (a)")


def damage_garbage(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


def damage_half(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    "damage", [damage_empty, damage_zeroed, damage_empty_database, damage_garbage, damage_half]
)
def test_a_rerun_on_an_emptied_or_damaged_journal_sends_nothing(
    damage: Any,
    sandbox: RunningSandbox,
    unique: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_sandbox(monkeypatch, sandbox)
    rows = batch(unique, 30)
    first = create_payments(rows, progress=False)
    assert first.sent == 30 and first.ok
    path = journal_path()
    for leftover in path.parent.glob(path.name + "-*"):  # the WAL is checkpointed on close
        leftover.unlink()
    damage(path)
    with pytest.raises(JournalError) as raised:
        create_payments(rows, progress=False)
    message = str(raised.value)
    assert str(path) in message and "Nothing was sent" in message and "\n" not in message
    assert sent_with(sandbox, unique) == 30


def test_a_new_journal_is_made_only_where_no_file_exists(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "journal.sqlite"
    with Journal(path, environment="test") as journal:
        assert journal.records() == []
    assert not list(path.parent.glob("*.new"))  # the temporary file it was built in is gone
    path.write_bytes(b"")
    with pytest.raises(JournalError, match="an empty file"):
        Journal(path, environment="test")
    assert path.stat().st_size == 0  # refused, not rebuilt


def test_a_journal_that_cannot_be_opened_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite"
    path.mkdir()  # a folder where the file should be
    with pytest.raises(JournalError) as raised:
        Journal(path, environment="test")
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("damage", [damage_garbage, damage_empty])
def test_journal_list_on_a_damaged_journal_is_one_line_and_exit_2(
    damage: Any,
    sandbox: RunningSandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_sandbox(monkeypatch, sandbox)
    path = journal_path()
    Journal(path, environment="test").close()
    damage(path)
    assert main(["journal", "list"]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_journal_list_says_where_the_journal_is(
    sandbox: RunningSandbox,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    use_sandbox(monkeypatch, sandbox)
    assert main(["journal", "list", "--unknown"]) == 0  # in a home that has none: it makes none
    out = capsys.readouterr().out
    assert f"journal: {journal_path()} (none: nothing journaled for the " in out, out
    assert not journal_path().exists()
    Journal(journal_path(), environment="test").close()
    assert main(["journal", "list"]) == 0
    assert f"journal: {journal_path()}\n" in capsys.readouterr().out
    assert main(["journal", "resolve", "X-1", "--response", "{not json"]) == 2
    assert capsys.readouterr().err.startswith("toolkit journal: --response is not valid JSON (")


def test_a_full_journal_refuses_new_calls_and_keeps_what_it_recorded(
    sandbox: RunningSandbox,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_sandbox(monkeypatch, sandbox)
    journal = Journal(tmp_path / "journal.sqlite", environment="full disk")
    first = create_payments(batch(unique, 5), journal=journal, progress=False)
    assert first.sent == 5
    # SQLite's own way to make a database full: no page may be added any more.
    pages = journal._db.execute("PRAGMA page_count").fetchone()[0]
    journal._db.execute(f"PRAGMA max_page_count = {pages}")
    more = batch(unique + "-more", 40)
    second = create_payments(more, journal=journal, progress=False)
    errors = second.errors
    assert len(errors) > 0 and set(errors["stage"]) <= {"journal", "unknown"}
    assert errors["error"].str.contains("full").all()
    at_server = {str(p["merchantReferenceId"]) for p in exported_payments(sandbox)}
    journaled = {r.key: r.state for r in journal.records()}
    # refused before sending: not at the service, not in the journal
    refused = set(errors.loc[errors["stage"] == "journal", "merchantReferenceId"])
    assert not refused & at_server and not refused & set(journaled)
    # sent, but the answer could not be written: at the service, and unknown in the journal for good
    cut_off = set(errors.loc[errors["stage"] == "unknown", "merchantReferenceId"])
    assert cut_off <= at_server and all(journaled[k] == "sending" for k in cut_off)
    # every payment the service holds is in the journal; the first five keep their outcome
    assert {r["merchantReferenceId"] for r in more} & at_server <= set(journaled)
    assert all(journaled[f"{unique}-{i:03d}"] == "succeeded" for i in range(5))
    assert journal.integrity_check() == "ok"


def test_an_answer_that_cannot_be_recorded_stays_unknown_and_is_never_sent_again(
    sandbox: RunningSandbox,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_sandbox(monkeypatch, sandbox)
    journal = Journal(tmp_path / "journal.sqlite", environment="full disk")

    def disk_full(*args: Any, **kwargs: Any) -> Any:
        raise JournalError(f"the journal {journal.path}: database or disk is full")

    monkeypatch.setattr(journal, "finish", disk_full)
    first = create_payments(batch(unique, 1), journal=journal, progress=False)
    (error,) = first.errors.to_dict("records")
    assert error["stage"] == "unknown" and "could not be recorded" in error["error"]
    assert "orderId" in error["error"]  # what the service did is in front of the user
    monkeypatch.undo()
    again = create_payments(batch(unique, 1), journal=journal, progress=False)
    assert again.sent == 0 and sent_with(sandbox, unique) == 1
    assert [r.state for r in journal.unknown()] == ["sending"]


# -- one home per user ----------------------------------------------------------------------------


def test_the_default_home_is_per_user_not_the_working_directory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOOLKIT_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    assert load_settings().home == default_home() == tmp_path / "data" / "toolkit"


@pytest.mark.parametrize("empty", ["", "  "])
def test_a_home_set_but_empty_is_the_per_user_home_not_the_working_directory(
    empty: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TOOLKIT_HOME=$X`` with ``X`` unset (a crontab) gave a journal and a track store per folder."""
    monkeypatch.setenv("TOOLKIT_HOME", empty)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    assert load_settings().home == tmp_path / "data" / "toolkit"


def test_a_relative_home_is_pinned_where_it_was_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings(home=Path("here")).home == tmp_path / "here"


def test_one_batch_from_two_folders_is_sent_once(
    sandbox: RunningSandbox,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_sandbox(monkeypatch, sandbox)
    monkeypatch.delenv("TOOLKIT_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    rows = batch(unique, 20)
    sent = []
    for folder in ("first", "second"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        sent.append(create_payments(rows, progress=False).sent)
    assert sent == [20, 0] and sent_with(sandbox, unique) == 20


def test_a_journal_in_a_folder_that_cannot_be_written_is_one_line_naming_it() -> None:
    """sysfs refuses new files even to root, where a chmod'ed folder would not."""
    folder = Path("/sys/kernel")
    if not folder.is_dir() or not _refuses_files(folder):
        pytest.skip("no folder here refuses new files")
    path = folder / "toolkit-journal" / "journal.sqlite"
    with pytest.raises(JournalError) as raised:
        Journal(path, environment="test")
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def _refuses_files(folder: Path) -> bool:
    try:
        (folder / "toolkit-probe").touch()
    except OSError:
        return True
    (folder / "toolkit-probe").unlink()
    return False
