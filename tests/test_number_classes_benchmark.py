"""benchmarks/number_classes.py: the shapes against hand-counted sizes, the sample
rule, and a quick run scores what it promises."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def test_shapes_and_sample_by_hand():
    import number_classes
    from mini_transformer.number_words.data import SHAPES, shape_members

    # a shape with k non-zero digits has 9**k numbers; 2**(L-1) shapes of length L
    assert len(SHAPES) == 64 and SHAPES[:4] == ("0", "d", "d0", "dd")
    assert sum(len(shape_members(s)) for s in SHAPES) == 1_000_000
    assert list(shape_members("d0000d")[:3]) == [100_001, 100_002, 100_003]
    assert len(shape_members("d000d0")) == 81 and shape_members("d000d0")[-1] == 900_090
    sample = number_classes.shape_sample(2000)
    sizes = {s: len(v) for s, v in sample.items()}
    assert sizes["0"] == 1 and sizes["d"] == 9 and sizes["dd"] == 81
    assert sizes["ddd"] == 729 and sizes["dddd"] == 2000 == sizes["dddddd"]
    # 6 shapes of 9, 15 of 81, 20 of 729, and 22 sampled to 2,000; and zero
    assert sum(sizes.values()) == 1 + 6 * 9 + 15 * 81 + 20 * 729 + 22 * 2000
    again = number_classes.shape_sample(2000)
    assert all((again[s] == v).all() for s, v in sample.items())


def test_quick_run():
    import number_classes

    result = number_classes.main(["--quick"])
    rows = result["shapes"]
    assert len(rows) == 64 and result["decoded"] == sum(r["decoded"] for r in
                                                         rows.values())
    for row in rows.values():
        assert 0 <= row["greedy"] <= row["decoded"] and 0 <= row["beam4"] <= \
            row["decoded"]
        assert all(w["output"] != w["reference"] for w in row["greedy_wrong"])
    worst = result["minimum"]["greedy"]
    assert worst["correct"] / worst["decoded"] == min(
        r["greedy"] / r["decoded"] for r in rows.values())
