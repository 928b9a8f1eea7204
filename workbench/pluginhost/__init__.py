"""Plugin host: pluggy hookspecs, guarded loading, plugin status records. No Qt."""
