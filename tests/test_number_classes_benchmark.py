"""benchmarks/number_classes.py: the classes and the reference rule against
hand-counted sizes and num2words, and a quick run writes what it promises."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_class_sizes_by_hand():
    import number_classes

    sizes = {k: int(m.sum()) for k, m in
             number_classes.classes(np.arange(1_000_000)).items()}
    assert sizes == {"0-99": 100, "100-999": 900, "round hundreds": 9_999,
                     "round thousands": 999, "1,000-9,999": 9_000,
                     "10,000-99,999": 90_000, "100,000-999,999": 900_000,
                     "held out": 10_309, "all": 1_000_000}


def test_reference_rule_by_hand():
    import number_classes

    src, tgt = number_classes.references([0, 1000, 1001, 1100, 101000, 999999])
    assert src == ["zero", "one thousand", "one thousand and one",
                   "one thousand, one hundred", "one hundred and one thousand",
                   "nine hundred and ninety-nine thousand, nine hundred and "
                   "ninety-nine"]
    assert tgt == ["null", "eintausend", "eintausendeins", "eintausendeinhundert",
                   "einhunderteinstausend",
                   "neunhundertneunundneunzigtausendneunhundertneunundneunzig"]


def test_quick_run(tmp_path):
    import number_classes

    out = tmp_path / "number_classes.json"
    number_classes.main(["--quick", "--out", str(out)])
    result = json.loads(out.read_text(encoding="utf-8"))
    greedy = result["greedy"]["classes"]
    # every 997th number: 0, 997, ..., 999,991
    assert greedy["all"]["n"] == 1004 and greedy["0-99"]["n"] == 1
    assert greedy["round thousands"]["n"] == 1  # 997,000
    for table in (greedy, result["beam4"]["classes"]):
        for row in table.values():
            assert 0 <= row["correct"] <= row["n"]
            assert row["exact_match"] == round(row["correct"] / row["n"], 6)
    assert result["beam4"]["classes"]["held out"]["n"] == 10  # 97 * 997 * k
    for rows in result["greedy"]["wrong"].values():
        assert all(r["output"] != r["reference"] for r in rows)


def test_parts_merge_to_the_same_table(tmp_path):
    import number_classes

    whole = number_classes.main(["--quick", "--out", str(tmp_path / "a.json")])
    out = ["--quick", "--out", str(tmp_path / "b.json")]
    for k in range(2):
        number_classes.main([*out, "--parts", "2", "--part", str(k)])
    number_classes.main([*out, "--beam-part"])
    merged = number_classes.main([*out, "--parts", "2", "--merge"])
    for key in ("greedy", "beam4"):
        assert merged[key]["classes"] == whole[key]["classes"]
