"""The gate: test reports, what a runner's closing lines say, and the verdicts.

Pure: reads report and log texts and judges test runs; runs nothing.
"""
