"""The store: one transaction mechanism (``database.py``) over SQLite's connections (``db.py``:
one writer and up to four readers per process, each in its own thread) or PostgreSQL's
(``postgres/``: pools of writers and readers); explicit transactions; migrations.

Repositories in this package are synchronous functions of the connection that
``Database.write(fn)`` or ``Database.read(fn)`` hands to ``fn``, and return models; nothing
above this package writes SQL.
"""
