"""The report page's compiled template is kept between processes, and a cache folder that
cannot be written costs the compiling, never the report."""

from __future__ import annotations

from pathlib import Path

import pytest
from jinja2 import Environment, PackageLoader

from toolkit.reconcile.render.page import CompiledTemplates


def _page(cache: CompiledTemplates | None) -> str:
    env = Environment(
        loader=PackageLoader("toolkit.reconcile.render", "templates"), bytecode_cache=cache, autoescape=True
    )
    return env.get_template("payouts.html.j2").filename or ""


def test_a_template_compiled_by_one_process_is_loaded_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = CompiledTemplates.in_user_cache()
    assert first is not None
    _page(first)
    assert list((tmp_path / "cache" / "toolkit" / "templates").iterdir())  # kept in the user's cache

    def compile_again(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again although its code was kept")

    monkeypatch.setattr(Environment, "compile", compile_again)
    assert _page(CompiledTemplates.in_user_cache()).endswith("payouts.html.j2")  # a new process's


def test_a_cache_folder_that_cannot_be_made_or_written_still_gives_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
    assert CompiledTemplates.in_user_cache() is None
    assert _page(None).endswith("payouts.html.j2")

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache = CompiledTemplates.in_user_cache()
    assert cache is not None
    (tmp_path / "cache" / "toolkit" / "templates").rmdir()  # gone before the code is written
    assert _page(cache).endswith("payouts.html.j2")
