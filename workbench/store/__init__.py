"""Project files in SQLite. No Qt."""
