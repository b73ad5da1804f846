"""The load benchmark's parts; `benchmarks/load.py` is how it is run (its docstring says what it does)."""
