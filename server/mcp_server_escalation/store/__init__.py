"""The store: one SQLite connection per process, explicit transactions, migrations.

Repositories in this package are synchronous functions of the connection that
``Database.write(fn)`` or ``Database.read(fn)`` hands to ``fn``, and return models; nothing
above this package writes SQL.
"""
