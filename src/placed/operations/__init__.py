"""Operations: what the service's routes ask of the store and the engine, one module per
noun's operations. A route authorizes, parses, calls one operation and serializes its
answer; the operation reads and writes the store in its transactions, plans with the
engine, and refuses with a domain error (`errors.py`) that the service answers as a
problem document. Nothing here knows HTTP: no web framework is imported."""
