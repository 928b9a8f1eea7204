"""The Compare, Solve and Sensitivity pages: candidates against targets, inverse solvers, the tornado."""
