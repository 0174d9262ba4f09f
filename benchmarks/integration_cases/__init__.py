"""One module per agent framework, each run by ``benchmarks/integrations.py``.

A ``case_<framework>.py`` module raises ImportError at import when its framework is not installed (the
script skips it with a note), and defines:

- ``FRAMEWORK: str``, the framework's display name;
- ``hostile_rows() -> list[tuple[str, str, str]]``: for each case of ``_cases.CASES``, in order, the
  case's name, what the framework's native tool did and the model saw, and what the same tool did
  and the model saw through scopetool, computed by running both through the framework's own loop
  (``_cases.outcome`` formats a cell from the ``RAN`` log);
- ``overhead_cases() -> list[tuple[str, Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]]``:
  (label, one native tool call, the same call through scopetool), each an async callable running one
  call through the framework's own tool-execution layer (its module docstring says which).
"""
