"""Reference exchange rates: the file's rules, exact conversion, half-away-from-zero rounding."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from toolkit.errors import InputError
from toolkit.money import minor_digits
from toolkit.reconcile.fx import Conversion, Rates, load_rates

DAY = date(2026, 11, 18)
HEADER = "date,base,quote,rate"


def write(tmp_path: Path, *lines: str, name: str = "rates.csv") -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def rates(tmp_path: Path, *rows: str) -> Rates:
    return load_rates(write(tmp_path, HEADER, *rows))


def expected(conversion: Conversion | None) -> int:
    assert conversion is not None
    return conversion.expected_minor


# --- conversion ------------------------------------------------------------------------------


def test_usd_to_php_at_a_three_decimal_rate_is_exact(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,USD,PHP,56.125")
    conversion = fx.convert(1000, "USD", "PHP", DAY)  # USD 10.00
    assert conversion is not None
    assert conversion.expected_minor == 56125  # PHP 561.25
    assert conversion.rate == Decimal("56.125") and isinstance(conversion.rate, Decimal)
    assert not conversion.inverse
    assert conversion.rate_text() == "1 USD = 56.125 PHP"


def test_zero_digit_currency_to_two_digits_and_back(tmp_path: Path) -> None:
    assert minor_digits("JPY") == 0
    fx = rates(tmp_path, "2026-11-18,JPY,USD,0.0064", "2026-11-18,USD,JPY,156.25")
    assert expected(fx.convert(15000, "JPY", "USD", DAY)) == 9600  # JPY 15,000 -> USD 96.00
    assert expected(fx.convert(9600, "USD", "JPY", DAY)) == 15000  # USD 96.00 -> JPY 15,000


def test_three_digit_currency_both_ways(tmp_path: Path) -> None:
    assert minor_digits("KWD") == 3
    fx = rates(tmp_path, "2026-11-18,USD,KWD,0.3075")
    assert expected(fx.convert(1000, "USD", "KWD", DAY)) == 3075  # USD 10.00 -> KWD 3.075
    assert expected(fx.convert(3075, "KWD", "USD", DAY)) == 1000  # inverse, exactly back


@pytest.mark.parametrize(
    ("minor", "result"),
    [(1, 1), (-1, -1), (3, 2), (-3, -2), (5, 3), (-5, -3), (4, 2), (-4, -2), (0, 0)],
)
def test_ties_round_half_away_from_zero(tmp_path: Path, minor: int, result: int) -> None:
    # At 0.5, odd amounts land exactly on .5: 2.5 -> 3 and -2.5 -> -3 (half-even would give 2).
    fx = rates(tmp_path, "2026-11-18,USD,EUR,0.5")
    assert expected(fx.convert(minor, "USD", "EUR", DAY)) == result


@pytest.mark.parametrize(
    ("rate", "minor", "result"), [("1.005", 100, 101), ("1.015", 100, 102), ("1.005", -100, -101)]
)
def test_ties_that_float_arithmetic_gets_wrong(tmp_path: Path, rate: str, minor: int, result: int) -> None:
    # 100 x 1.005 is 100.5 exactly; in float it is 100.49999999999999, which rounds to 100.
    assert round(abs(minor) * float(rate)) != abs(result)
    fx = rates(tmp_path, f"2026-11-18,USD,EUR,{rate}")
    assert expected(fx.convert(minor, "USD", "EUR", DAY)) == result


def test_just_below_a_tie_rounds_down(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,USD,EUR,0.499999999999999999")
    assert expected(fx.convert(1, "USD", "EUR", DAY)) == 0
    assert expected(fx.convert(-1, "USD", "EUR", DAY)) == 0


def test_inverse_rate_is_an_exact_fraction(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,EUR,USD,1.087")
    assert fx.rate("EUR", "USD", DAY) == Decimal("1.087")
    assert fx.rate("USD", "EUR", DAY) == Fraction(1000, 1087)
    conversion = fx.convert(108700, "USD", "EUR", DAY)  # USD 1,087.00 -> EUR 1,000.00 exactly
    assert conversion is not None
    assert conversion.expected_minor == 100000
    assert conversion.inverse and conversion.rate == Decimal("1.087")
    assert conversion.rate_text() == "1 USD = 1/1.087 EUR (inverse of 1 EUR = 1.087 USD)"


def test_inverse_of_a_rate_with_no_finite_decimal_rounds_once(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,EUR,USD,3")
    assert fx.rate("USD", "EUR", DAY) == Fraction(1, 3)
    assert expected(fx.convert(10000, "USD", "EUR", DAY)) == 3333  # 3333.33...
    assert expected(fx.convert(20000, "USD", "EUR", DAY)) == 6667  # 6666.66...
    assert expected(fx.convert(-20000, "USD", "EUR", DAY)) == -6667


def test_direct_pair_wins_over_the_inverse_of_the_reverse(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,EUR,USD,1.087", "2026-11-18,USD,EUR,0.92")
    assert fx.rate("USD", "EUR", DAY) == Decimal("0.92")
    assert fx.rate("EUR", "USD", DAY) == Decimal("1.087")


def test_rate_text_keeps_the_digits_as_written(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,USD,EUR,0.920")
    conversion = fx.convert(100, "USD", "EUR", DAY)
    assert conversion is not None
    assert conversion.rate_text() == "1 USD = 0.920 EUR"


def test_same_currency_is_the_identity(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,EUR,USD,1.087")
    assert fx.rate("EUR", "EUR", DAY) == 1
    assert expected(fx.convert(12345, "EUR", "EUR", DAY)) == 12345


def test_numpy_integers_are_amounts_floats_are_not(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,USD,PHP,56.125")
    assert expected(fx.convert(np.int64(1000), "USD", "PHP", DAY)) == 56125  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fx.convert(10.0, "USD", "PHP", DAY)  # type: ignore[arg-type]


# --- missing rates -----------------------------------------------------------------------------


def test_missing_day_is_none_never_another_day(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-17,EUR,USD,1.087", "2026-11-19,EUR,USD,1.09")
    assert fx.rate("EUR", "USD", DAY) is None
    assert fx.rate("USD", "EUR", DAY) is None
    assert fx.convert(100, "EUR", "USD", DAY) is None
    assert fx.missing_text("EUR", "USD", DAY) == "no rate for EUR/USD on 2026-11-18"


def test_missing_pair_is_none(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,EUR,USD,1.087")
    assert fx.rate("GBP", "USD", DAY) is None
    assert fx.convert(100, "GBP", "EUR", DAY) is None
    assert fx.missing_text("GBP", "USD", DAY) == "no rate for GBP/USD on 2026-11-18"


# --- reading -----------------------------------------------------------------------------------


def test_rows_pairs_and_source(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        HEADER,
        "2026-11-18,USD,PHP,56.125",
        "2026-11-18,EUR,USD,1.087",
        "2026-11-17,EUR,USD,1.09",
        "2026-11-18,EUR,USD,1.0870",  # the same rate again: fine, held once
    )
    fx = load_rates(str(path))
    assert fx.source == str(path)
    assert len(fx) == 3
    assert fx.pairs() == (("EUR", "USD"), ("USD", "PHP"))
    assert load_rates(path).source == str(path)


def test_bom_crlf_blank_lines_and_spaces_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "rates.csv"
    text = "date,base,quote,rate\r\n\r\n 2026-11-18 , usd , php , 56.125 \r\n\r\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    fx = load_rates(path)
    assert fx.rate("USD", "PHP", DAY) == Decimal("56.125")


def test_header_case_whitespace_and_order_are_tolerated(tmp_path: Path) -> None:
    fx = load_rates(write(tmp_path, " Rate , QUOTE,Date ,base", "56.125,PHP,2026-11-18,USD"))
    assert fx.rate("USD", "PHP", DAY) == Decimal("56.125")


def test_rate_is_decimal_never_float(tmp_path: Path) -> None:
    fx = rates(tmp_path, "2026-11-18,EUR,USD,1.1")
    value = fx.rate("EUR", "USD", DAY)
    assert isinstance(value, Decimal) and value == Decimal("1.1")


GOOD = "2026-11-17,EUR,USD,1.087"


@pytest.mark.parametrize(
    ("lines", "line", "fragment"),
    [
        (
            [HEADER, GOOD, "2026/11/18,EUR,USD,1.087"],
            3,
            "date '2026/11/18' is not an ISO date; expected YYYY-MM-DD",
        ),
        ([HEADER, GOOD, "18.11.2026,EUR,USD,1.087"], 3, "expected YYYY-MM-DD"),
        ([HEADER, "2026-02-30,EUR,USD,1.087"], 2, "date '2026-02-30' does not exist"),
        ([HEADER, ",EUR,USD,1.087"], 2, "date is empty"),
        ([HEADER, GOOD, "2026-11-18,XYZ,USD,1.087"], 3, "base 'XYZ' is not an ISO 4217 currency code"),
        ([HEADER, "2026-11-18,EUR,EURO,1.087"], 2, "quote 'EURO' is not an ISO 4217 currency code"),
        ([HEADER, "2026-11-18,,USD,1.087"], 2, "base is empty"),
        ([HEADER, GOOD, "2026-11-18,EUR,USD,abc"], 3, "rate 'abc' is not a plain decimal"),
        ([HEADER, "2026-11-18,EUR,USD,0"], 2, "rate '0' is zero; expected a positive decimal"),
        ([HEADER, "2026-11-18,EUR,USD,0.000"], 2, "rate '0.000' is zero"),
        ([HEADER, "2026-11-18,EUR,USD,-1"], 2, "rate '-1' is not a plain decimal"),
        ([HEADER, "2026-11-18,EUR,USD,+1"], 2, "rate '+1' is not a plain decimal"),
        ([HEADER, "2026-11-18,EUR,USD,1e3"], 2, "rate '1e3' is not a plain decimal"),
        ([HEADER, '2026-11-18,EUR,USD,"1,5"'], 2, "rate '1,5' is not a plain decimal"),
        ([HEADER, '2026-11-18,EUR,USD,"1,087.5"'], 2, "without sign, exponent or thousands separator"),
        ([HEADER, "2026-11-18,EUR,USD,.5"], 2, "rate '.5' is not a plain decimal"),
        ([HEADER, "2026-11-18,EUR,USD,NaN"], 2, "rate 'NaN' is not a plain decimal"),
        ([HEADER, "2026-11-18,EUR,USD,"], 2, "rate is empty"),
        ([HEADER, "2026-11-18,EUR,USD,   "], 2, "rate is empty"),
        ([HEADER, "2026-11-18,EUR,USD,1.0000000000000000001"], 2, "20 significant digits; at most 18"),
        ([HEADER, "2026-11-18,EUR,eur,1"], 2, "base and quote are both EUR"),
        (
            [HEADER, GOOD, "2026-11-17,EUR,USD,1.09"],
            3,
            "EUR/USD on 2026-11-17 is 1.09 here and 1.087 on line 2",
        ),
        ([HEADER, GOOD, "2026-11-18,EUR,USD,1,5"], 3, "5 field(s), the header has 4"),
        ([HEADER, "2026-11-18,EUR,USD"], 2, "3 field(s), the header has 4"),
        (["date,base,rate", GOOD], 1, "missing column(s) quote; expected the header date,base,quote,rate"),
        (
            [HEADER + ",source", GOOD],
            1,
            "unexpected column(s) 'source'; expected the header date,base,quote,rate",
        ),
        (["date,base,quote,rate,date", GOOD], 1, "column(s) date given twice"),
        (["", "", HEADER, GOOD, "", "2026-11-18,EUR,USD,x"], 6, "rate 'x'"),  # blank lines counted
        ([HEADER, GOOD, '2026-11-18,EUR,USD,"1.0"8'], 3, "not valid CSV"),
    ],
)
def test_malformed_file_names_the_file_and_line(
    tmp_path: Path, lines: list[str], line: int, fragment: str
) -> None:
    path = write(tmp_path, *lines)
    with pytest.raises(InputError) as caught:
        load_rates(path)
    message = str(caught.value)
    assert message.startswith(f"{path}, line {line}: "), message
    assert fragment in message, message


def test_lines_are_counted_across_a_quoted_line_break(tmp_path: Path) -> None:
    path = tmp_path / "rates.csv"
    path.write_text(
        f'{HEADER}\n{GOOD}\n2026-11-18,GBP,USD,"1.2\n"\n2026-11-18,EUR,USD,bad\n', encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"rates\.csv, line 5: rate 'bad'"):
        load_rates(path)


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "rates.csv"
    path.write_bytes(f"{HEADER}\r\n{GOOD}\r\n2026-11-18,EUR,USD,1.0\xe98\r\n".encode("latin-1"))
    with pytest.raises(
        InputError, match=r"rates\.csv, line 3: not UTF-8 \(byte 0xe9\); save the file as UTF-8"
    ):
        load_rates(path)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"", ": empty file; expected the header date,base,quote,rate"),
        (b"\xef\xbb\xbf\n\n  \n", ": empty file"),
        (b"date,base,quote,rate\n", ": no rates after the header"),
        (b"date,base,quote,rate\n\n,,,\n", ": no rates after the header"),
    ],
)
def test_file_without_rates_is_named(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "rates.csv"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        load_rates(path)
    assert str(caught.value).startswith(f"{path}{fragment}")


def test_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.csv"
    with pytest.raises(InputError) as caught:
        load_rates(path)
    assert str(caught.value) == f"{path}: file not found"


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_rates(tmp_path)  # a folder: cannot be read as a file
    assert str(caught.value).startswith(f"{tmp_path}: cannot be read (")
