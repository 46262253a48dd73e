"""A finished run laid out, deciding nothing (the verdicts are the run's findings and comparisons):

- :mod:`mlmh.report.markdown`: report.md, its tables and the findings in words;
- :mod:`mlmh.report.plots`: the figures, their data apart from their drawing (the TUI's plots reuse it).
"""
