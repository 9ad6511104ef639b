"""A deliberately broken copy of each unseen-domain fixture (tests/fixtures/unseen_domains/)
fails to load with an error naming the file, the line of the broken text and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from veritask.policy import SpecError, load_spec

UNSEEN = Path(__file__).parent.parent / "fixtures" / "unseen_domains"

# (spec, text to replace, replacement, field named, words of the message)
BREAKS = [
    ("library.yaml", "tier: reference", "tier: catalogue", "tables[0].tier", "Input should be"),
    ("library.yaml", "references: items.code", "references: items.isbn", "tables[3].columns[2].references", "unknown 'items.isbn'"),
    ("library.yaml", "code = NEW.item_code) < 1", "code = NEW.item_cod) < 1", "rules[1].condition", "no column 'item_cod'"),
    ("library.yaml", "agent_decides: [due_step]", "agent_decides: [due_stp]", "transactions[0].agent_decides[0]", "not one of the parameters"),
    ("bank.yaml", "{quantity: accounts.withdrawals, value: 3}", "{quantity: accounts.withdrawal, value: 3}", "rules[3].threshold.quantity", "accounts has no column 'withdrawal'"),
    ("bank.yaml", "{quantity: transfers.amount, column: accounts.balance}", "{quantity: transfers.amount, column: account.balance}", "rules[7].threshold.column", "unknown table 'account'"),
    ("bank.yaml", "status: POSTED}\n    - {id: 2", "status: POSTD}\n    - {id: 2", "seed.transfers[0].status", "'POSTD' is not one of"),
    ("bank.yaml", "tool: update_transfers\n    parameters", "tool: update_transfer\n    parameters", "transactions[1].tool", "not a write tool"),
    ("hr_leave.yaml", "references: employees.id, description: Line manager", "references: employee.id, description: Line manager", "tables[1].columns[3].references", "unknown 'employee.id'"),
    ("hr_leave.yaml", "description: \"A request ends when it is withdrawn, rejected, cancelled or taken.\"", "description: A request ends when it is withdrawn, rejected, cancelled or taken.", "tables[3].lifecycle.rejected", "quote the value"),
    ("hr_leave.yaml", "    - {id: e_md, full_name", "    - {id: e_md, fullname", "seed.employees[0].fullname", "no column 'fullname'"),
    ("warehouse.yaml", 'FROM "order" WHERE ref = NEW.order_ref) NOT IN', "FROM order WHERE ref = NEW.order_ref) NOT IN", "rules[1].condition", "'order' is an SQL keyword"),
    ("warehouse.yaml", "(SELECT \"group\" FROM products WHERE sku = NEW.sku) = 'CHILLED'", "(SELECT group FROM products WHERE sku = NEW.sku) = 'CHILLED'", "rules[3].condition", "'group' is an SQL keyword"),
    ("warehouse.yaml", "unique: [[sku, bin_code]]", "unique: [[sku, bin]]", "tables[3].unique[0]", "unknown column 'bin'"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "old", "new", "field", "words"), BREAKS)
def test_a_broken_copy_names_file_line_and_field(
    spec: str, old: str, new: str, field: str, words: str, tmp_path: Path
) -> None:
    text = (UNSEEN / spec).read_text(encoding="utf-8")
    assert old in text
    broken = tmp_path / spec
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(broken)
    issue = next(i for i in caught.value.issues if i.field == field)
    assert issue.path == str(broken)
    first = text[: text.index(old)].count("\n") + 1
    # the line of the broken text, or of the key a block scalar (``condition: >-``) starts on
    assert issue.line is not None and first - 1 <= issue.line <= first + old.count("\n")
    assert words in issue.message


@pytest.mark.parametrize("spec", sorted(p.name for p in UNSEEN.glob("*.yaml")))
def test_the_unseen_fixtures_load(spec: str) -> None:
    load_spec(UNSEEN / spec)
