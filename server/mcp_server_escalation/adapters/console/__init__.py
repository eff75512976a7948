"""The operator console: see and answer escalations in a browser (docs/console.md)."""
