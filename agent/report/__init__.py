"""``agent report``: a run as one self-contained HTML page with charts, or the charts alone as PNG files.

``records.py`` gathers what the report shows from the state document and the whole journal;
``configurations.py`` groups the benchmark levels by configuration and describes launch changes;
``charts.py`` draws the charts (matplotlib); ``page.py`` writes the page; ``build.py`` puts them together.
"""
