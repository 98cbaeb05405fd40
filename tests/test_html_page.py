"""``--html``: the self-contained page opened in a real headless Chromium, checked by what a
reader sees: the matrix, a failing cell's diagnostic and source after a click, filtering and
sorting the signals, a diff's changes, and not one network request.

Needs Chromium (``apt-get install -y chromium``); skipped with that hint without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from laya_tui.cli.main import main
from tests._browser import INSTALL_HINT, Browser, find_chromium
from tests._tui import DEMO_REPORT, DEMO_WS, RECORDED, REPO, TILELANG_REPORT

CHROMIUM = find_chromium()


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    with Browser(CHROMIUM) as b:
        b.call("Network.enable", session=True)
        yield b


def _page(tmp_path: Path, report: Path, workspace: Path, *extra: str) -> Path:
    out = tmp_path / "page.html"
    assert main(["show", str(report), "--html", str(out), "--workspace", str(workspace),
                 *extra]) == 0
    return out


def _visible(b: Browser, selector: str) -> bool:
    return b.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                  " return !!e && e.checkVisibility(); })()")


def _open(b: Browser, path: Path) -> None:
    b.open(path.as_uri())
    assert b.console_errors() == []
    requests = [e["params"]["request"]["url"] for e in b.events
                if e.get("method") == "Network.requestWillBeSent"]
    assert requests == [path.as_uri()]  # the page itself, nothing else


def test_matrix_and_a_failing_cells_diagnostic_after_a_click(browser, tmp_path):
    page = _page(tmp_path, TILELANG_REPORT, REPO)
    _open(browser, page)
    assert _visible(browser, "#matrix")
    matrix = browser.eval("document.querySelector('#matrix').innerText")
    assert "attn_kernel" in matrix and "✗ lower" in matrix and "✓ ran" in matrix
    assert not _visible(browser, "#detail")
    browser.click('td[data-cell="attn_kernel|c|fp16|gpu"]')
    assert _visible(browser, "#detail")
    text = browser.eval("document.querySelector('#detail').innerText")
    assert "CPU fill only supports local and global buffers" in text
    assert "tl.LowerTileOp" in text and "lower-failed" in text
    assert "call site kernels/attn.py:49" in text.replace("\u00a0", " ").replace("  ", " ")
    highlighted = browser.eval("document.querySelector('#detail pre .hl').innerText")
    assert highlighted.split()[0] == "49" and "acc_o = S.frag" in highlighted
    browser.screenshot(tmp_path / "matrix-cell.png")
    assert (tmp_path / "matrix-cell.png").stat().st_size > 10_000


def test_signals_filter_by_kind_and_text_and_sort(browser, tmp_path):
    _open(browser, _page(tmp_path, DEMO_REPORT, DEMO_WS))
    count = "document.querySelector('#signals-count').textContent"
    assert browser.eval(count) == "14 of 14 signals"
    browser.eval("(() => { const s = document.querySelector('#signals-kind'); "
                 "s.value = 'tolerance'; s.dispatchEvent(new Event('change')); })()")
    assert browser.eval(count) == "2 of 14 signals"
    browser.eval("document.querySelector('#signals-kind').value = ''; "
                 "document.querySelector('#signals-kind').dispatchEvent(new Event('change'))")
    browser.click("#signals-text")
    browser.call("Input.insertText", session=True, text="rms_norm")  # typed, as a user
    assert browser.eval(count) == "4 of 14 signals"
    rows = browser.eval("[...document.querySelectorAll('#signals td[data-col=subject]')]"
                        ".map(td => td.innerText)")
    assert sorted(rows) == ["aten::_to_copy", "aten::gelu", "aten::mul.out", "d2d_copy"]
    browser.eval("(() => { const t = document.querySelector('#signals-text'); t.value = '';"
                 " t.dispatchEvent(new Event('input')); const s = "
                 "document.querySelector('#signals-sort'); s.value = 'bytes';"
                 " s.dispatchEvent(new Event('change')); })()")
    browser.click("#signals-reverse")
    first = browser.eval("document.querySelector('#signals tbody tr:nth-child(1)').innerText")
    assert "aten::_softmax" in first and "1.5 MiB" in first
    browser.click("#signals tbody tr:nth-child(1)")
    text = browser.eval("document.querySelector('#detail').innerText")
    assert "pad prompts to a multiple of 32 tokens" in text and "def attention" in text


def test_probe_detail_tolerance_table_and_environment(browser, tmp_path):
    _open(browser, _page(tmp_path, DEMO_REPORT, tmp_path))  # sources not here
    assert browser.eval("document.querySelector('#verdict').innerText") == "FAIL"
    gates = browser.eval("document.querySelector('#gates').innerText")
    assert "no-crash" in gates and "FAIL (1)" in gates
    tol = browser.eval("document.querySelector('#tolerance').innerText")
    assert "hidden_states" in tol and "0.231" in tol and "NO" in tol and "5 / 7" in tol
    browser.click('tr[data-probe="faults/segfault"]')
    text = browser.eval("document.querySelector('#detail').innerText")
    assert "worker killed by SIGSEGV" in text and "stderr tail" in text
    browser.click("#tolerance tr.failing")
    text = browser.eval("document.querySelector('#detail').innerText")
    assert "source not readable where this page was written: model.py" in text
    body = browser.eval("document.body.innerText")
    assert "library versions" in body and "2.13.0+cpu" in body


def test_diff_page_shows_the_changes(browser, tmp_path):
    from tests.test_diff import changed_demo

    new = tmp_path / "new.json"
    new.write_text(json.dumps(changed_demo()))
    out = tmp_path / "diff.html"
    assert main(["diff", str(DEMO_REPORT), str(new), "--headless", "--html", str(out),
                 "--workspace", str(DEMO_WS)]) == 0
    _open(browser, out)
    assert browser.eval("document.querySelector('#diff-counts').innerText").startswith(
        "4 regression(s), 3 improvement(s), 3 note(s)")
    assert browser.eval("document.querySelector('#changes-count').textContent") == \
        "10 of 10 signals"
    browser.eval("(() => { const t = document.querySelector('#changes-text'); "
                 "t.value = 'silu'; t.dispatchEvent(new Event('input')); })()")
    browser.click("#changes tbody tr:nth-child(1)")
    text = browser.eval("document.querySelector('#detail').innerText")
    assert "new fallback aten::silu" in text and "regression" in text
    assert '"count":2' in text.replace(" ", "")


def test_page_is_one_file_with_nothing_to_fetch(tmp_path):
    text = _page(tmp_path, TILELANG_REPORT, REPO).read_text()
    for needle in ("<script src", "<link", "@import", "url(http", "src=\"http"):
        assert needle not in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text


def test_report_text_cannot_end_the_script(browser, tmp_path):
    doc = json.loads(DEMO_REPORT.read_text())
    evil = "</script><script>document.title='owned'</script><!--"
    doc["probes"][0]["log_tail"] = evil
    doc["probes"][0]["reason"] = evil
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    page = _page(tmp_path, path, tmp_path)
    assert evil not in page.read_text()
    _open(browser, page)
    assert browser.eval("document.title") != "owned"
    browser.click('tr[data-probe="env/demo_facts"]')
    assert evil in browser.eval("document.querySelector('#detail').innerText")


# -- issue 30: readable at 1400 px ------------------------------------------------------------

_OVERFLOW = """(() => {
  const d = document.documentElement, out = [];
  if (d.scrollWidth > d.clientWidth) out.push(['page', d.scrollWidth, d.clientWidth]);
  for (const e of document.querySelectorAll('.scroll, .hscroll, #detail, pre.wrap, dd'))
    if (e.checkVisibility() && e.scrollWidth > e.clientWidth + 1)
      out.push([e.id || e.className || e.tagName, e.scrollWidth, e.clientWidth]);
  return out; })()"""
PAGES = [pytest.param(p, id=p.stem) for p in
         (TILELANG_REPORT, DEMO_REPORT, RECORDED / "aoti_gpu_report.json",
          RECORDED / "mlx_report.json", RECORDED / "env_report.json") if p.exists()]


@pytest.mark.parametrize("report", PAGES)
def test_the_page_fits_1400_px_without_sideways_scrolling(browser, tmp_path, report):
    _open(browser, _page(tmp_path, report, REPO))
    assert browser.eval("window.innerWidth") == 1400
    assert browser.eval(_OVERFLOW) == []  # the matrix, the tables, every panel
    # every signal row shows text in its first cells, and a long reason is clamped
    heights = browser.eval("[...document.querySelectorAll('#signals tbody tr')]"
                           ".map(r => [r.getBoundingClientRect().height, r.innerText.trim()])")
    assert heights and all(text for _, text in heights)
    line = browser.eval("parseFloat(getComputedStyle(document.body).lineHeight) || 20")
    assert max(h for h, _ in heights) <= 4 * line + 16
    # every detail panel a row opens fits too (the first rows of each kind)
    seen: set[str] = set()
    for key, kind in browser.eval("[...document.querySelectorAll('#signals tbody tr')]"
                                  ".map(r => [r.dataset.key, r.cells[0].innerText])"):
        if kind in seen:
            continue
        seen.add(kind)
        browser.click(f'#signals tr[data-key="{key}"]')
        assert browser.eval(_OVERFLOW) == [], kind


def test_the_cell_panel_wraps_its_diagnostic_and_formats_numbers(browser, tmp_path):
    _open(browser, _page(tmp_path, TILELANG_REPORT, REPO))
    legend = browser.eval("document.querySelector('#matrix-legend').innerText")
    assert "◐ built" in legend and "built, not run here" in legend and "✗ lower" in legend
    assert browser.eval("(() => { const m = document.querySelector('#matrix');"
                        " return m.scrollWidth <= m.parentElement.clientWidth; })()")
    browser.click('td[data-cell="attn_kernel|c|fp16|gpu"]')
    assert _visible(browser, "#detail")
    assert browser.eval(_OVERFLOW) == []
    wrapped = browser.eval("[...document.querySelectorAll('#detail pre.wrap')]"
                           ".map(p => getComputedStyle(p).whiteSpace)")
    assert wrapped and set(wrapped) == {"pre-wrap"}  # the diagnostic wraps in its box
    facts = browser.eval("Object.fromEntries([...document.querySelectorAll('#detail dt')]"
                         ".map(dt => [dt.innerText, dt.nextElementSibling.innerText]))")
    assert facts["seconds"] == "5.0 s" and facts["stages"] == "trace 0.19 s, lower 5.0 s"
    import re

    body = browser.eval("document.body.innerText")
    assert not re.search(r"\b\d\.\d{5,}\b", body)  # no raw floats like 2.487275


def test_the_filter_boxes_show_their_whole_placeholder(browser, tmp_path):
    _open(browser, _page(tmp_path, DEMO_REPORT, DEMO_WS))
    clipped = browser.eval("""[...document.querySelectorAll('input[type=search]')].filter(i => {
      const c = document.createElement('canvas').getContext('2d'), s = getComputedStyle(i);
      c.font = s.fontSize + ' ' + s.fontFamily;
      const pad = parseFloat(s.paddingLeft) + parseFloat(s.paddingRight);
      return c.measureText(i.placeholder).width + pad > i.clientWidth; }).map(i => i.id)""")
    assert clipped == []


def test_control_characters_are_escaped_on_the_page_and_the_terminal(browser, tmp_path,
                                                                     capsys):
    doc = json.loads(DEMO_REPORT.read_text())
    raw = "nul\x00 esc\x1b[31m bell\x07"
    doc["probes"][3]["reason"] = raw  # faults/segfault: crashed (in the summary)
    doc["probes"][3]["log_tail"] = raw
    doc["probes"][6]["signals"][0]["reason"] = raw
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    page = _page(tmp_path, path, tmp_path)
    out = capsys.readouterr().out
    assert "\x00" not in out and "\x1b" not in out and "\\x00" in out  # the summary
    _open(browser, page)
    browser.click('tr[data-probe="faults/segfault"]')
    body = browser.eval("document.body.innerText")
    for c in ("\x00", "\x1b", "\x07"):
        assert c not in body
    assert "nul\\x00 esc\\x1b[31m bell\\x07" in body


def test_a_pass_beside_findings_no_gate_reads_is_not_green(browser, tmp_path):
    """The recorded TileLang run passes with 14 lowering findings no gate reads: the
    page's verdict badge takes the warning colour, as the dashboard header does."""
    _open(browser, _page(tmp_path, TILELANG_REPORT, REPO))
    assert browser.eval("document.querySelector('#verdict').innerText") == "PASS"
    assert browser.eval("document.querySelector('#verdict').className") == "badge warn"
    colour = browser.eval("getComputedStyle(document.querySelector('#verdict'))"
                          ".backgroundColor")
    assert colour == "rgb(154, 103, 0)", colour  # --warn, not --ok's rgb(26, 127, 55)
