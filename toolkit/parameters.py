"""A notebook's parameters, checked for name, type and value before a kernel starts.

A scheduler's mistake (``period_start 2025-13-01``, a ledger path that does not exist, ``max_exceptions
ten``) must cost one line and exit code 2 at once, not a kernel start and a traceback. The type of a
parameter is the type of its default in the notebook's ``parameters`` cell; two naming conventions
add value rules: ``*_path`` names a file that must exist (empty means "the notebook's default"), and
``period_*`` / ``*_date`` a calendar date written ``YYYY-MM-DD`` (empty means "no bound"). The payout
reconciliation's ``window``, ``holidays`` and ``backend`` are read as ``toolkit reconcile payouts``
reads them, and its ``processor_path`` and ``bank_path`` go together.
"""

from __future__ import annotations

import ast
import difflib
import glob
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from toolkit.errors import ParameterError

#: The parameter every notebook declares and the runner sets: where the notebook writes its files.
OUTPUT_PARAMETER = "output_dir"

_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


def declared_parameters(path: Path) -> dict[str, Any]:
    """The notebook's parameters and their defaults, from its ``parameters`` cell (papermill)."""
    import papermill

    described: dict[str, Any] = papermill.inspect_notebook(str(path))
    if not described:
        raise ParameterError(f"{path}: no cell tagged 'parameters'")
    return {name: _literal(info.get("default")) for name, info in described.items()}


def _literal(source: Any) -> Any:
    """A default as papermill reports it (source text) -> its Python value, or the text itself."""
    if not isinstance(source, str):
        return source
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError):
        return source


def parse_value(text: str, default: Any = None) -> Any:
    """A ``-p`` value as the parameter's type wants it (its default's type); text stays text.

    Without a typed default, YAML scalars are read as papermill's CLI reads them (numbers,
    booleans, null), and dates stay text.
    """
    stripped = text.strip()
    if isinstance(default, bool):
        if stripped.lower() in _TRUE | _FALSE:
            return stripped.lower() in _TRUE
        return text
    if isinstance(default, int):
        try:
            return int(stripped)
        except ValueError:
            return text
    if isinstance(default, float):
        try:
            return float(stripped)
        except ValueError:
            return text
    if isinstance(default, str):
        return text
    import yaml

    try:
        value = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError):  # ValueError: a YAML date such as 2025-13-01
        return text
    if value is None and stripped.lower() in ("null", "none", "~"):
        return None
    return value if isinstance(value, bool | int | float) else text


def _type_problem(name: str, value: Any, default: Any) -> str | None:
    if name.endswith("_tolerance") and isinstance(value, int) and not isinstance(value, bool):
        return None  # minor units, as the text form's plain number
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"{name}: {value!r} is not true or false"
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{name}: {value!r} is not a whole number"
        return None
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{name}: {value!r} is not a number"
        return None
    if isinstance(default, str) and not isinstance(value, str):
        return f"{name}: {value!r} is not text"
    return None


#: Whole-number parameters and the least each can be (``max_exceptions`` and ``max_age`` take
#: -1 for "no threshold").
LEAST_VALUES = {"concurrency": 1, "max_exceptions": -1, "max_age": -1}


def _value_problem(name: str, value: Any) -> str | None:
    least = LEAST_VALUES.get(name)
    if least is not None and isinstance(value, int) and not isinstance(value, bool) and value < least:
        return f"{name}: {value} is less than {least}"
    if name.endswith("_tolerance") or name in ("as_of", "grace"):
        return _rule_problem(name, value)
    if name in ("ledger_format", "processor_format"):
        return _layout_problem(name, value)
    if name in PAYOUT_RULES:
        return _payout_problem(name, value)
    if name.endswith("_map") or (name.startswith("ledger_") and not name.endswith("_path")):
        return _reading_problem(name, value)
    if not isinstance(value, str) or not value.strip():
        return None
    if name.endswith("_path") and not _readable_path(value):
        return f"{name}: no such file {value!r}"
    if name.startswith("period_") or name.endswith("_date"):
        try:
            date.fromisoformat(value.strip())
        except ValueError:
            return f"{name}: {value!r} is not a date written YYYY-MM-DD"
    return None


def _readable_path(value: str) -> bool:
    """A file, a folder, or a glob that matches a file (reconciliation inputs may be a folder or
    a glob of Parquet files, as ``toolkit reconcile`` takes them)."""
    path = Path(value).expanduser()
    return (
        path.is_file()
        or path.is_dir()
        or any(Path(p).is_file() for p in glob.iglob(str(path), recursive=True))
    )


def _layout_problem(name: str, value: Any) -> str | None:
    """An export layout (``ledger_format``, ``processor_format``): a shipped one's name or a
    layout file, read as the loaders will read it; blank: recognised from the header."""
    from toolkit.errors import InputError
    from toolkit.reconcile.exports import layout_named

    if not isinstance(value, str) or not value.strip():
        return None
    try:
        layout = layout_named(value.strip())
    except InputError as exc:
        return f"{name}: {exc}"
    side = name.removesuffix("_format")
    if layout.side != side:
        return f"{name}: {layout.name} is a layout of a {layout.side}'s file, not a {side}'s"
    return None


def _reading_problem(name: str, value: Any) -> str | None:
    """A column mapping, or a reading option of the ledger (``ledger_decimal``: ``READ_OPTIONS``),
    read as the loaders will read it."""
    from toolkit.errors import InputError
    from toolkit.reconcile.inputs import parse_mapping
    from toolkit.reconcile.sources import READ_OPTIONS
    from toolkit.views.reading import reading_options

    if not name.endswith("_map") and name.removeprefix("ledger_") not in READ_OPTIONS:
        return None
    try:
        if name.endswith("_map"):
            parse_mapping(str(value), name)
        else:
            reading_options(**{name.removeprefix("ledger_"): value})
    except InputError as exc:
        return f"{name}: {str(exc).split(': ', 1)[-1]}"
    return None


def _rule_problem(name: str, value: Any) -> str | None:
    """A reconciliation rule's value (tolerance, cut-off, settlement window) read as the engine
    will read it, so that a mistake stops the run before the kernel starts."""
    from toolkit.errors import InputError
    from toolkit.reconcile.timing import parse_as_of, parse_grace
    from toolkit.reconcile.tolerance import Tolerance

    if isinstance(value, str) and not value.strip() and name != "grace":
        return None
    try:
        if name == "as_of":
            parse_as_of(str(value))
        elif name == "grace":
            parse_grace(str(value))
        else:
            Tolerance.of(value)
    except InputError as exc:
        return f"{name}: {str(exc).split(': ', 1)[-1] if str(exc).startswith('--') else exc}"
    return None


#: The payout reconciliation's options checked by their names (as ``toolkit reconcile payouts``
#: reads them), and the two files that go together: both given, or neither (the sandbox's).
PAYOUT_RULES = ("window", "holidays", "backend")
PAIRED = ("processor_path", "bank_path")


def _payout_problem(name: str, value: Any) -> str | None:
    """The payout run's ``window`` (business days), ``holidays`` (dates or a file of them) and
    ``backend``, read as the notebook will read them."""
    from toolkit.errors import InputError
    from toolkit.reconcile.payouts import business_days
    from toolkit.views.payouts import holiday_dates

    if name == "backend":
        return None if value in ("duckdb", "pyspark") else f"backend: {value!r} is not duckdb or pyspark"
    try:
        business_days(str(value), "window") if name == "window" else holiday_dates(str(value))
    except InputError as exc:
        return f"{name}: {str(exc).split(': ', 1)[-1]}"
    except OSError as exc:
        return f"{name}: cannot read {value!r} ({exc.strerror or exc})"
    return None


def _pair_problem(declared: Mapping[str, Any], parameters: Mapping[str, Any]) -> str | None:
    """``processor_path`` without ``bank_path`` (or the other way) where a notebook takes both."""
    if not all(name in declared for name in PAIRED):
        return None
    given = [name for name in PAIRED if str(parameters.get(name, declared[name]) or "").strip()]
    if len(given) == 1:
        return f"{' and '.join(PAIRED)} go together: give both, or neither (the sandbox's)"
    return None


def check_parameters(path: Path, parameters: Mapping[str, Any]) -> None:
    """Refuse unknown names (papermill alone only warns), the runner's ``output_dir``, and values of
    the wrong type or that cannot work; every problem in one ``ParameterError``, nothing run."""
    declared = declared_parameters(path)
    problems = []
    for name, value in parameters.items():
        if name == OUTPUT_PARAMETER:
            problems.append(f"{name!r} is set by the runner (use --output-dir)")
        elif name not in declared:
            close = difflib.get_close_matches(name, list(declared), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(f"unknown parameter {name!r}{hint}")
        else:
            problem = _type_problem(name, value, declared[name]) or _value_problem(name, value)
            if problem:
                problems.append(problem)
    paired = _pair_problem(declared, parameters)
    if paired:
        problems.append(paired)
    if problems:
        known = ", ".join(n for n in declared if n != OUTPUT_PARAMETER)
        raise ParameterError(f"{path.name}: " + "; ".join(problems) + f" (parameters: {known})")
