"""What the notebooks' cells show and write, one concept per module; the cells stay thin.

    banner         the environment banner (and its label) at the top of every notebook
    files          where a notebook writes its files, and frames written as safe CSV
    tables         frames as a reader should see them (blanks, money with its currency)
    processor      the processor side of a reconciliation: a file, the sandbox's export, the journal
    reading        how the files given are read: the reading parameters as the loaders' options
    subscriptions  the subscription ledger against the API's subscriptions
    threshold      the exceptions threshold that fails a run on its merits

Charts are ``toolkit.charts``, the period filter ``toolkit.reconcile.period``; running the
notebooks is ``toolkit.notebooks``.
"""

from toolkit.views.banner import environment_banner, environment_label
from toolkit.views.files import output_file, write_frame
from toolkit.views.processor import processor_side
from toolkit.views.reading import reading_options
from toolkit.views.subscriptions import subscription_checks
from toolkit.views.tables import count_words, errors_table, exceptions_table, first_rows_note, table
from toolkit.views.threshold import check_threshold

__all__ = [
    "check_threshold",
    "count_words",
    "environment_banner",
    "environment_label",
    "errors_table",
    "exceptions_table",
    "first_rows_note",
    "output_file",
    "processor_side",
    "reading_options",
    "subscription_checks",
    "table",
    "write_frame",
]
