"""Analysis: compare, paired and flips over many runs, their statistics, plots, the
pilot table for PR bodies, and the terminal's text tables."""
