"""Benches: bench and arm files, finding them, and coverage of the human reference.

Pure: reads the files a user writes and scores diffs; runs nothing.
"""
