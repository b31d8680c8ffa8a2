"""Schema linking: which tables and columns of one database a question needs.

* :mod:`dbrouter.linking.columns` - column retrieval over the KB (``retrieve_columns`` table
  function), column lookup by name, and the M-Schema-like rendering used in prompts.
* :mod:`dbrouter.linking.linker` - the LLM-free linker (default, always available).
* :mod:`dbrouter.linking.agent` - the agentic linker (explore / retrieve / verify / add / stop).
"""

LINKERS = ("retrieval", "agent")
"""The schema linkers a caller can choose (`dbrouter link|ask --linker`): LLM-free, or the agent."""
