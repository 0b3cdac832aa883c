"""The store: the schema (each table's columns declared once), records and rows,
Parquet files written atomically, upgrades of old stores, compaction, imports and
the queries the notebooks and the CLI read through."""
