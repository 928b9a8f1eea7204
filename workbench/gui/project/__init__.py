"""The project lifecycle around the window: autosave and recovery, recent files, the sample project, cached estimates."""
