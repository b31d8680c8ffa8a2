"""Prompts of the agentic schema linker (AutoLink, Figure 6), adapted to dbrouter.

Adaptations to the paper's template: the SQL environment runs only one read-only SELECT, so the
metadata examples are SELECTs over ``sqlite_master``/``pragma_table_info`` (SQLite) or
``information_schema`` (DuckDB) instead of ``PRAGMA``; the database's dialect is named; a database
ingested without data has no SQL environment, and the prompt says so; the stop action is
``@stop()`` (``@stop_action()`` is accepted too).
"""

from __future__ import annotations

AGENT_SYSTEM = """\
You are an intelligent assistant designed to help identify all relevant schema elements (tables and columns) \
in a large, unfamiliar database to answer a user's natural language question. You do NOT have access to the \
full database schema. Instead, you can interact with two external environments:

1. Database Environment ('DB Environment'): {db_env}
2. Schema Vector Store Environment ('VS Environment'): this lets you semantically search for the most relevant \
columns using a natural language query. You get back structured schema snippets (column, parent table, type, \
optional description, sample values). Columns you have already seen are never returned again.

Your goal is to maximize recall of truly relevant schema elements for the question, using as few, but as \
effective, interactions as possible. The linked schema starts as the initial schema shown below.

Interaction rules:
- Work in multiple turns (each with reasoning and actions); at most {max_turns} turns.
- After each turn you receive the observation of every action you took, in order.
- In each turn:
  - Write your reasoning in <think></think> tags: what schema or information is still missing? What do you \
want to find or verify?
  - Output one or more actions in <actions></actions> tags, separated by semicolons or new lines.

Available actions:
- @explore_schema(sql_query) Run one read-only SELECT in the DB Environment to explore tables, columns, \
structure, or preview data: list the columns of a table, show sample values, find tables/columns matching \
keywords, check keys. {explore_examples}
- @retrieve_schema(natural_language_query) Use the VS Environment to semantically search for up to {m} \
columns by describing the desired concept, column, or property in plain language.
- @verify_schema(sql_query) Attempt a full SQL query that answers the user's question using ONLY the \
currently linked schema. Use the result or errors to identify what is still missing.
- @add_schema(table.column; ...) After discovering new, relevant columns (using retrieve or explore), add \
them to the linked schema. Always use full table.column names, separated by semicolons. Cannot be used alone \
in a turn: pair it with a feedback action (explore, retrieve, verify) or @stop().
- @stop() Use when the linked schema covers everything needed to answer the question, or when {max_turns} \
turns have been reached.

How to behave:
- In early turns, focus on obvious gaps in the linked schema using semantic retrieval or basic exploration.
- If you suspect that critical columns or concepts are missing, use @retrieve_schema with the relevant \
keyword or phrase.
- Use @explore_schema for table or structural exploration, such as unknown table layouts, join conditions \
or key relationships.
- Use @verify_schema to confirm whether the linked schema suffices or to uncover missing schema via errors.
- Whenever you get new candidate columns that are likely relevant, add them with @add_schema (paired with a \
feedback action in the same turn).
- End with @stop() only if you are confident no more relevant schema elements are missing.

Always answer in this format (every turn):
<think> your reasoning about what is known, what is missing, and which actions you take and why </think>
<actions>
@retrieve_schema(a concept or a guessed column name)
@add_schema(table.column; table2.column2)
</actions>

Remember:
- Never use @add_schema by itself in a turn.
- Write SQL arguments as plain SQL (no quotes around the whole query needed) in the {dialect} dialect.
- Use meaningful natural-language queries in @retrieve_schema; do not just repeat the question."""

DB_ENV_SQL = ("this lets you run one read-only SQL SELECT at a time on the {dialect} database to explore "
              "schema metadata, table/column names, relationships, keys or sample values. Results show at most "
              "5 rows, the total row count and the time; errors are shown verbatim; each query may take at most "
              "{timeout:g} seconds.")

DB_ENV_NONE = ("NOT AVAILABLE for this database (it was ingested from a schema description without data): "
               "@explore_schema and @verify_schema will only answer that exploration is unavailable, so use "
               "@retrieve_schema and @add_schema.")

EXPLORE_EXAMPLES = {
    "sqlite": ["SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%order%'",
               "SELECT * FROM orders LIMIT 5",
               "SELECT DISTINCT status FROM orders WHERE status LIKE '%ship%' LIMIT 5"],
    "duckdb": ["SELECT table_name, column_name, data_type FROM information_schema.columns "
               "WHERE column_name ILIKE '%status%'",
               "SELECT * FROM orders LIMIT 5",
               "SELECT DISTINCT status FROM orders WHERE status ILIKE '%ship%' LIMIT 5"],
}
"""Example exploration queries per dialect (each must pass :func:`dbrouter.query.guard.check_read_only`;
SQLite's PRAGMA and pragma functions are refused, so column names come from ``SELECT * ... LIMIT 5``)."""

EXPLORE_NOTES = {"sqlite": " PRAGMA statements and pragma_* functions are not allowed."}

AGENT_USER = """\
[Question]
{question}

[All tables of database {db}] ({n_tables})
{tables}

[Initial schema: the {n_initial} columns most similar to the question; the linked schema starts as these]
{schema}

You are now ready to begin. Write <think> and <actions> blocks in the required format."""

FORMAT_HELP = (
    "Answer with <think>your reasoning</think> then <actions> holding one or more actions, one per line, e.g.\n"
    "<actions>\n@retrieve_schema(date of the concert)\n@add_schema(concert.Year; stadium.Name)\n</actions>\n"
    "Actions: @explore_schema(sql), @retrieve_schema(text), @verify_schema(sql), @add_schema(t.c; t2.c2), "
    "@stop(). @add_schema must be paired with @explore_schema, @retrieve_schema, @verify_schema or @stop().")


def agent_prompt(question: str, db: str, tables: list[str], schema: str, n_initial: int, m: int,
                 max_turns: int, dialect: str | None, sql_timeout: float, sql_available: bool = True
                 ) -> tuple[str, str]:
    """Render the (system, first user) messages of the linking dialogue (the paper's H0).

    Args:
        question: the user's question.
        db: the database id.
        tables: every table name of the database.
        schema: the rendered initial schema.
        n_initial: how many columns the initial schema holds.
        m: columns per @retrieve_schema.
        max_turns: the turn limit.
        dialect: ``sqlite``/``duckdb`` of the SQL environment (None: not known).
        sql_timeout: seconds per query.
        sql_available: False when the database has no data to run SQL on (the prompt says so).

    Returns:
        (system prompt, first user message)
    """
    if sql_available:
        db_env = DB_ENV_SQL.format(dialect=dialect or "SQL", timeout=sql_timeout)
        queries = EXPLORE_EXAMPLES.get(dialect or "", [])
        examples = ("Examples: " + "; ".join(queries) + "." if queries else "") + EXPLORE_NOTES.get(dialect or "", "")
    else:
        db_env, examples = DB_ENV_NONE, ""
    system = AGENT_SYSTEM.format(db_env=db_env, explore_examples=examples, m=m, max_turns=max_turns,
                                 dialect=dialect or "standard SQL")
    user = AGENT_USER.format(question=question, db=db, n_tables=len(tables), tables="\n".join(tables),
                             n_initial=n_initial, schema=schema)
    return system, user
