"""Citations that read the same in JupyterLab and in the book.

A chapter cites as a Markdown link to the entry's key in ``references.bib``::

    [Vaswani et al., 2017](../references.bib#vaswani2017attention)

JupyterLab (and any notebook viewer) shows the author-year text, a link to the bibliography
file. For the book, this extension turns each such link back into the ``{cite}`` role when
Sphinx reads the source, so sphinxcontrib-bibtex renders, links and lists the citation as
before. ``tests/test_citations.py`` checks every link's text against ``references.bib``.
"""

import re

LINK = re.compile(r"\[[^\]\n]+\]\(\.\./references\.bib#([\w.:-]+(?:,[\w.:-]+)*)\)")


def _to_cite_role(app, docname, source):
    source[0] = LINK.sub(lambda m: "{cite}`" + m[1] + "`", source[0])


def setup(app):
    app.connect("source-read", _to_cite_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
