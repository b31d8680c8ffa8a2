"""Schema linking: which tables and columns of one database a question needs.

* :mod:`dbrouter.linking.columns` - column retrieval over the KB (``retrieve_columns`` table
  function), column lookup by name, and the M-Schema-like rendering used in prompts.
* :mod:`dbrouter.linking.linker` - the LLM-free linker (default, always available).
* :mod:`dbrouter.linking.agent` - the agentic linker (explore / retrieve / verify / add / stop).
"""

LINKERS = ("retrieval", "agent")
"""The schema linkers a caller can choose (`dbrouter link|ask --linker`): LLM-free, or the agent."""

MAX_COLUMNS = 40
"""Most columns the LLM-free linker hands on by default (`dbrouter link --max-columns`): a prompt a
SQL writer reads whole. A wider selection, or a database wider than this with no stored examples
(the selection rule's thresholds were fitted where examples vote; without them it hands on one
table's columns), is linked tables first (:mod:`dbrouter.linking.budget`)."""
