"""The input panels (model, hardware, scenario), their tables and editors, and the Results panel."""
