"""Run history for scheduled users: a ``run.json`` beside each run's outputs, ``reports/index.html``.

Every ``toolkit run`` and every tracked ``toolkit reconcile`` writes ``run.json`` into its output
folder: what ran (``kind`` command or notebook, ``name``), its parameters (never the API key: it is
not a parameter, and the notebook runner scrubs the file besides), the sha256 of its input files,
when it started and ended, its counts, its exit code, status and reason, and for a tracked run the
track, the run number, the cut-off and the unacknowledged exceptions by age.

``write_index(root)`` then rewrites ``root/index.html`` from every ``run.json`` under ``root`` (up to
three folders deep): the runs newest first with their status and links to their reports, and for
each track a chart of its new and open exceptions by age over its runs. The page is one file with
no script and nothing fetched (its Content-Security-Policy allows nothing else), readable from the
file system. ``root`` is the nearest folder named ``reports`` above the run's output folder; a run
written elsewhere gets its ``run.json`` but updates no index.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from toolkit.errors import OutputError
from toolkit.output_record import claim
from toolkit.outputs import write_text_atomic

MANIFEST = "run.json"
INDEX = "index.html"
STATUS = {0: "ok", 1: "findings", 2: "error"}
#: Age buckets shown in the chart, oldest on top, with their colours.
_BUCKET_COLOURS = (
    ("0-1 days", "#9ecae1"),
    ("2-7 days", "#4292c6"),
    ("8-30 days", "#e6a23c"),
    ("over 30 days", "#c0392b"),
)


def _e(value: object) -> str:
    return html.escape(str(value))


def now_text() -> str:
    """The current UTC time as ``run.json`` writes it."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_hashes(paths: Iterable[str | Path]) -> list[dict[str, str]]:
    """The sha256 of each path that is a file (others are left out: a table name, a glob); a
    file that cannot be read gets the reason instead, so that the run that failed on it is still
    recorded."""
    out = []
    for item in paths:
        path = Path(item)
        if not path.is_file():
            continue
        try:
            with path.open("rb") as handle:
                out.append({"path": str(path), "sha256": hashlib.file_digest(handle, "sha256").hexdigest()})
        except OSError as exc:
            out.append({"path": str(path), "error": f"cannot be read ({exc.strerror or exc})"})
    return out


def write_manifest(
    folder: str | Path, manifest: Mapping[str, Any], *, inputs: Iterable[str | Path | None] = ()
) -> Path:
    """Write ``run.json`` into ``folder`` (whole or not at all), only over a run.json the toolkit
    wrote there and that is none of ``inputs`` (``toolkit.output_record``); ``OutputError`` names it."""
    record = claim(folder, [MANIFEST], inputs=inputs)
    text = json.dumps(dict(manifest), indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    path = write_text_atomic(Path(folder) / MANIFEST, text)
    record.updated([MANIFEST])
    return path


def reports_root(folder: str | Path) -> Path | None:
    """The nearest folder named ``reports`` holding ``folder`` (None when there is none)."""
    here = Path(folder).resolve()
    for candidate in (here, *here.parents):
        if candidate.name == "reports":
            return candidate
    return None


def update_index(folder: str | Path) -> Path | None:
    """Rewrite the index of the reports folder holding ``folder``; None when there is none.

    A failure to write the index never changes a run's outcome: it is reported as ``OutputError``
    for the caller to print as a warning.
    """
    root = reports_root(folder)
    return None if root is None else write_index(root)


def read_manifests(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every readable ``run.json`` under ``root`` (up to three folders deep), newest first."""
    found = []
    for pattern in ("*/run.json", "*/*/run.json", "*/*/*/run.json"):
        for path in root.glob(pattern):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a manifest being written, or not ours: left out of the index
            if isinstance(data, dict):
                found.append((path, data))
    found.sort(key=lambda item: (str(item[1].get("started", "")), str(item[0])), reverse=True)
    return found


def write_index(root: Path) -> Path:
    """``root/index.html`` from the manifests under ``root``."""
    manifests = read_manifests(root)
    return write_text_atomic(root / INDEX, render_index(root, manifests))


def _link(root: Path, manifest_path: Path, manifest: Mapping[str, Any]) -> str:
    folder = manifest_path.parent
    report = manifest.get("report")
    target = folder / str(report) if report and (folder / str(report)).is_file() else folder
    relative = target.relative_to(root).as_posix()
    label = target.name if target != folder else f"{folder.name}/"
    return f'<a href="{html.escape(relative)}">{html.escape(label)}</a>'


def _counts(manifest: Mapping[str, Any]) -> str:
    counts = manifest.get("counts") or {}
    if not isinstance(counts, Mapping) or not counts:
        return ""
    order = ("exceptions", "new", "open", "acknowledged", "resolved")
    return ", ".join(f"{counts[k]} {k}" for k in order if k in counts)


def _chart(track: str, runs: list[Mapping[str, Any]]) -> str:
    """An inline SVG: per run of the track (oldest left), new and open exceptions stacked by age."""
    width, height, pad = 640, 180, 28
    totals = [
        {
            b["age"]: int(b.get("unacknowledged", 0))
            for b in run.get("ageBuckets", [])
            if isinstance(b, Mapping)
        }
        for run in runs
    ]
    peak = max([sum(t.values()) for t in totals] + [1])
    step = (width - 2 * pad) / max(len(runs), 1)
    bar = max(step * 0.7, 1.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="new and open exceptions by age over the runs of track {html.escape(track)}">',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#888"/>',
        f'<text x="{pad}" y="12" font-size="11">peak {peak}</text>',
    ]
    for i, (run, total) in enumerate(zip(runs, totals, strict=True)):
        x = pad + i * step + (step - bar) / 2
        y = float(height - pad)
        for label, colour in _BUCKET_COLOURS:
            count = total.get(label, 0)
            if not count:
                continue
            h = (height - 2 * pad) * count / peak
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{colour}">'
                f"<title>run {_e(run.get('run', ''))} ({_e(run.get('asOf', ''))}): "
                f"{count} {label}</title></rect>"
            )
        parts.append(
            f'<text x="{x + bar / 2:.1f}" y="{height - pad + 14}" font-size="10" text-anchor="middle">'
            f"{html.escape(str(run.get('run', '')))}</text>"
        )
    parts.append("</svg>")
    legend = " ".join(
        f'<span class="key" style="background:{colour}"></span> {label}' for label, colour in _BUCKET_COLOURS
    )
    return "".join(parts) + f'<p class="legend">{legend} (new and open exceptions, by age; x: run)</p>'


def _index_row(root: Path, path: Path, manifest: Mapping[str, Any], status: str, track: Any) -> str:
    """One run's row of ``reports/index.html``."""
    return (
        "<tr>"
        f"<td>{html.escape(str(manifest.get('started', '')))}</td>"
        f'<td>{html.escape(str(manifest.get("name", "")))} <span class="muted">'
        f"{html.escape(str(manifest.get('kind', '')))}</span></td>"
        f'<td class="{_e(status)}">{_e(status)} ({_e(manifest.get("exitCode", ""))})</td>'
        f"<td>{html.escape(str(track or ''))}"
        + (f" run {html.escape(str(manifest.get('run')))}" if track and manifest.get("run") else "")
        + "</td>"
        f"<td>{html.escape(_counts(manifest))}</td>"
        f"<td>{html.escape(str(manifest.get('reason', '') or ''))}</td>"
        f"<td>{_link(root, path, manifest)}</td>"
        "</tr>"
    )


def render_index(root: Path, manifests: list[tuple[Path, dict[str, Any]]]) -> str:
    """``reports/index.html`` for the runs under ``root``: newest first, and a chart per track."""
    rows = []
    tracks: dict[str, dict[Any, Mapping[str, Any]]] = {}
    for path, manifest in manifests:
        status = str(manifest.get("status") or STATUS.get(manifest.get("exitCode", -1), "unknown"))
        track = manifest.get("track")
        if track and manifest.get("ageBuckets") is not None and manifest.get("exitCode") in (0, 1):
            tracks.setdefault(str(track), {})[(manifest.get("run"), manifest.get("started"))] = manifest
        rows.append(_index_row(root, path, manifest, status, track))
    charts = []
    for track, runs in sorted(tracks.items()):
        ordered = sorted(runs.values(), key=lambda m: (int(m.get("run") or 0), str(m.get("started", ""))))
        charts.append(f"<h2>Track {html.escape(track)}</h2>{_chart(track, ordered)}")
    body = (
        "<table><thead><tr><th>started (UTC)</th><th>what</th><th>status</th><th>track</th>"
        "<th>counts</th><th>result</th><th>report</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        if rows
        else "<p>No runs yet.</p>"
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>Runs</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 1rem 2rem; color: #1f2328; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ border: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; vertical-align: top;
  overflow-wrap: anywhere; }}
th {{ background: #f3f4f6; }}
.ok {{ color: #1a7f37; }}
.findings {{ color: #9a6700; font-weight: 600; }}
.error {{ color: #a40e26; font-weight: 600; }}
.muted {{ color: #59636e; font-size: .85em; }}
.key {{ display: inline-block; width: .8rem; height: .8rem; vertical-align: middle; }}
</style>
</head>
<body>
<h1>Runs, newest first</h1>
<p class="muted">From the run.json of each run under this folder; regenerated after every run.
Generated {now_text()}.</p>
{body}
{"".join(charts)}
</body>
</html>
"""


def index_warning(folder: Path) -> str | None:
    """Update the index for a run in ``folder``; a one-line warning when it could not be written."""
    try:
        update_index(folder)
    except OutputError as exc:
        return f"warning: the run index was not updated: {exc}"
    return None


def counts_from_folder(folder: Path) -> dict[str, Any]:
    """What a notebook's report files say: ``counts`` (exceptions, and the states of a tracked run)
    and ``ageBuckets`` (a tracked run's ages.csv), as far as those files are there."""
    import csv

    out: dict[str, Any] = {}
    counts: dict[str, int] = {}
    try:
        exceptions = folder / "exceptions.csv"
        if exceptions.is_file():
            with exceptions.open(encoding="utf-8", newline="") as handle:
                # Rows for information (in transit, within tolerance) are no exceptions: the result
                # line left them out, and run.json and the index counted them in.
                rows = csv.DictReader(handle)
                counts["exceptions"] = sum(1 for row in rows if row.get("severity") != "info")
        states = folder / "states.csv"
        if states.is_file():
            with states.open(encoding="utf-8", newline="") as handle:
                for row in csv.DictReader(handle):
                    for state in ("new", "open", "acknowledged", "resolved"):
                        counts[state] = counts.get(state, 0) + int(row.get(state) or 0)
        ages = folder / "ages.csv"
        if ages.is_file():
            with ages.open(encoding="utf-8", newline="") as handle:
                out["ageBuckets"] = [
                    {
                        "age": row["age"],
                        "unacknowledged": int(row["unacknowledged"]),
                        "acknowledged": int(row["acknowledged"]),
                    }
                    for row in csv.DictReader(handle)
                ]
    except (OSError, ValueError, KeyError):
        pass  # a notebook's own files are not a contract: counts are left out, the run is not
    if counts:
        out["counts"] = counts
    return out
