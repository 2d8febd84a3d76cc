"""docs/reference.md documents every option and every report field: each ``Options`` field has a row
in its Options table and each ``Report`` field one in its Report fields table, and no row names a
field that no longer exists (an option renamed, a field removed)."""
import dataclasses
import pathlib
import re

import pytest

from eqsat_torch.options import Options
from eqsat_torch.report import Report

REFERENCE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "reference.md"
ROW = re.compile(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", re.M)


def section(text: str, heading: str) -> str:
    """The text under ``## heading`` up to the next ``## ``."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"docs/reference.md has no '## {heading}' section"
    return match.group(1)


def rows(heading: str) -> set[str]:
    """The names in the first cell of each table row under ``heading``."""
    return set(ROW.findall(section(REFERENCE.read_text(encoding="utf-8"), heading)))


@pytest.mark.parametrize("cls, heading", [(Options, "Options"), (Report, "Report fields")],
                         ids=["Options", "Report"])
def test_every_field_has_a_row_and_every_row_a_field(cls, heading):
    fields = {f.name for f in dataclasses.fields(cls)}
    documented = rows(heading)
    missing, stale = sorted(fields - documented), sorted(documented - fields)
    assert not missing, f"{cls.__name__} fields with no row under '## {heading}' in docs/reference.md: {missing}"
    assert not stale, f"rows under '## {heading}' in docs/reference.md that name no {cls.__name__} field: {stale}"
