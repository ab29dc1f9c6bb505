"""Input files as they come: an export of the sandbox, a European Excel export, and writing one."""

from __future__ import annotations

from pathlib import Path

SANDBOX_EXPORT = (
    "orderId,merchantReferenceId,customerId,paymentMethodType,paymentInstrumentId,amount,currency,"
    "pricingAmount,pricingCurrency,status,createTime,updateTime\n"
    "o1,m1,c1,CARD,pi1,12.30,USD,12.30,USD,success,1700000000000,1700000000001\n"
    "o2,m2,c1,WECHAT,pi2,1200,JPY,8.00,USD,pending,1700000000000,1700000000001\n"
    "o3,m3,c1,CARD,pi1,1.250,KWD,,,next_action,1700000000000,1700000000001\n"
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# A European Excel export: semicolons, a rejected row (line 4), an accented column and value.
EXCEL_ROWS = (
    "merchantReferenceId;amount;currency;status;Bemerkung é\n"
    "m1;12.30;USD;success;café\n"
    "m2;1200;JPY;pending;\n"
    "m9;x;USD;success;crème\n"
)
