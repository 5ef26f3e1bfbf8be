"""The cost-performance report: the runs of a site (read through topofoam.results) in one
tidy table, merged, analysed, drawn and written as Markdown and HTML
(``python -m topofoam.reporting``)."""
