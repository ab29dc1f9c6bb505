"""Schemathesis over the sandbox's own /openapi.json, as an outside tool runs it.

Every phase (examples, coverage, fuzzing, stateful) and every check, through schemathesis' engine
(what ``st run`` drives; its pytest loader does not run under pytest 9), bounded in examples per
operation and in wall time, with a fixed seed. One run per module; the tests read what it did.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from schemathesis.engine import Status

from tests.sandbox.conftest import TEST_KEY
from tests.sandbox.schemathesis_run import EVERY_CHECK, PHASES, Run, execute, load
from toolkit.sandbox.embedded import RunningSandbox, start_server

#: Wall time of the whole run at most: every phase has its turn, then fuzzing and stateful turn again
#: until the stateful phase has followed the links to LINKED.
BUDGET_S = 75
MAX_EXAMPLES = 25
#: The routes only a link from a created product leads to.
LINKED = frozenset({"POST /sandbox/subscriptions", "POST /sandbox/prices/{priceId}/deactivate"})


@pytest.fixture(scope="module")
def st_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningSandbox]:
    running = start_server(db_path=tmp_path_factory.mktemp("st") / "st.sqlite", api_key=TEST_KEY)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def run(st_sandbox: RunningSandbox) -> Run:
    # The fault controls change how every other route answers (drop, hang, error): fuzzing them
    # would sabotage the rest of the run. They have a run of their own (test_schemathesis_faults.py).
    schema = load(st_sandbox.base_url, budget_s=BUDGET_S, max_examples=MAX_EXAMPLES).exclude(
        path_regex=r"^/sandbox/faults"
    )
    return execute(schema, enough=lambda run: run.linked_operations() >= LINKED)


def documented_operations(sandbox: RunningSandbox) -> set[str]:
    """Every operation of the sandbox's document that the run covers (as schemathesis labels it)."""
    paths = httpx.get(f"{sandbox.base_url}/openapi.json", timeout=10).json()["paths"]
    return {
        f"{method.upper()} {path}"
        for path, operations in paths.items()
        if not path.startswith("/sandbox/faults")
        for method in operations
        if method in {"get", "post", "put", "patch", "delete"}
    }


@pytest.mark.slow
def test_every_check_passes_in_every_phase(run: Run, st_sandbox: RunningSandbox) -> None:
    assert run.errors == []
    assert run.failures == [], "\n\n".join(run.failures[:5])
    for phase in PHASES:  # a phase the time budget cuts short reports SKIP for that turn
        assert Status.SUCCESS in run.phases.get(phase, set()), (phase, run.phases)
        assert not {Status.FAILURE, Status.ERROR} & run.phases[phase], (phase, run.phases)
    assert run.checks == EVERY_CHECK, EVERY_CHECK ^ run.checks
    # Every operation answered, however many requests the budget allowed on a busy machine.
    answered, documented = {op for (_phase, op, _status) in run.answers}, documented_operations(st_sandbox)
    assert answered == documented, answered ^ documented
    assert run.seconds < BUDGET_S + 60, run.seconds


@pytest.mark.slow
def test_the_examples_phase_sends_the_documented_examples(run: Run) -> None:
    assert 200 in run.statuses("examples", "POST /payment")
    assert 200 in run.statuses("examples", "POST /product")


@pytest.mark.slow
def test_stateful_testing_follows_the_links_to_the_subscription_and_control_routes(run: Run) -> None:
    """A created product's ids lead the stateful phase to a subscription and to the price controls,
    and no request a link filled is answered with a server error.

    Whether a linked request succeeds depends on what Hypothesis draws for the fields the link
    leaves free (a customer it drew is unknown to the sandbox: 404) and on how many turns the time
    budget allows on a busy machine (a CI run reached one subscription request, answered 404);
    tests/sandbox/test_openapi.py follows every link deterministically and asserts its success.
    """
    assert run.linked_operations() >= LINKED, run.linked
    assert not {op for counter in run.linked for (op, status) in counter if status >= 500}, run.linked
