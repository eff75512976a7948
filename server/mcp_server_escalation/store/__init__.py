"""The store: one aiosqlite connection per process, explicit transactions, migrations.

Repositories in this package take the connection handed out by ``Database.transaction()``
or ``Database.read()`` and return models; nothing above this package writes SQL.
"""
