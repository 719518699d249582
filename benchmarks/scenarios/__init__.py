"""One module per benchmark scenario, each with a `run` that measures (or, for acceptance,
judges) and a `section` that renders its part of the report."""
