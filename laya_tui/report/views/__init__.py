"""View models: what the dashboard and the HTML page show, computed once in Python
(docs/architecture.md, 'The dashboard'). ``text`` formats values, ``legend`` names the
status and outcome marks, ``signals`` makes a signal a table row, ``detail`` a signal or a
probe a list of sections, ``matrix`` the lowering matrix. The dashboard draws them with
rich and Textual, the page (``report/html.py``, ``page.js``) as HTML. Standard library only.
"""
