"""The local sandbox of the payment service: a stateful FastAPI app over one SQLite file.

Start it in-process with ``toolkit.sandbox.embedded.start_server`` (or ``embedded_sandbox`` for the
process-wide default), or in the foreground with ``toolkit sandbox``. Its documented choices
(outcomes, currencies, FX, ids, subscription rules) are in docs/sandbox.md.
"""
