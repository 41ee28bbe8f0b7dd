"""Sphinx configuration: the user guide (Markdown, MyST) and the API reference (numpydoc).

Build with ``make docs``; warnings are errors.
"""

project = "meshorder + gpusolver"
author = "the meshorder + gpusolver developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "numpydoc", "sphinx.ext.mathjax"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "results/**"]
myst_heading_anchors = 3
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_mock_imports = ["cupy", "cupyx", "mpi4py"]
html_theme = "alabaster"
html_title = project
suppress_warnings = ["myst.xref_missing"]
