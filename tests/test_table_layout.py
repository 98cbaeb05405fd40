"""tui/widgets/table_layout.py: which rows a column measurement reads. Rows streaming in
are formatted to be measured; the sample keeps its rows as the table grows, so a
re-measure formats only the rows new to it (it formatted a fresh spread of ~300 at each
re-measure: 10-20 ms in the pass before a repaint at 200,000 rows)."""

from __future__ import annotations

from laya_tui.tui.widgets.table_layout import MEASURE_ALL, SAMPLE, sample_indices


def test_a_few_rows_are_all_measured_and_many_are_sampled():
    assert sample_indices(0) == [] and sample_indices(MEASURE_ALL) == list(range(MEASURE_ALL))
    for n in (MEASURE_ALL + 1, 10_000, 200_000, 1_000_000):
        picked = sample_indices(n)
        assert len(picked) <= SAMPLE and picked == sorted(set(picked))
        assert picked[0] == 0 and picked[-1] == n - 1 and all(0 <= i < n for i in picked)
        # spread over the rows: no gap wider than a few hundredths of them
        gaps = [b - a for a, b in zip(picked, picked[1:], strict=False)]
        assert max(gaps) <= 2 * n / (SAMPLE // 2)


def test_a_growing_table_keeps_its_sample():
    edge = SAMPLE // 4
    n = 1_000
    before = set(sample_indices(n))
    while n < 400_000:
        grown = n + n // 7
        now = set(sample_indices(grown))
        new = now - before
        # new to the sample: the last rows, and grid points among the rows just added
        assert all(i >= n - edge for i in new), sorted(new)[:5]
        assert len(new - set(range(n, grown))) <= edge
        before, n = now, grown
