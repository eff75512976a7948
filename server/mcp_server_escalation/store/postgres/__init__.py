"""The PostgreSQL backend: a connection the repositories use like SQLite's, its schema and transactions."""
