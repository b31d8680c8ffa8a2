"""Prompts of the LLM steps, with the default few-shot exemplars.

The statement-structuring prompt follows the domain-statement paper (system: DBA with the
schema; user: instructions plus exemplars). Default exemplars cover the four categories of
statements: cryptic names, categorical values, format mismatches and formulas. Users add their
own per database in the seed ``statement_exemplars`` (``db_id, statement, structured``;
``db_id`` ``*`` applies to every database).
"""

from __future__ import annotations

DEFAULT_STATEMENT_EXEMPLARS: list[tuple[str, str]] = [
    # cryptic schema names
    ("A12 indicates the unemployment ratio for year 1995",
     "'unemployment ratio of year 100' refers to district.A12"),
    # categorical column values
    ("Non-carcinogenic molecules are labelled as '-'",
     "'non-carcinogenic molecules' refers to molecule.label = '-'"),
    ("female is also represented as 'F'", "'female' refers to Patient.SEX = 'F'"),
    # format mismatches
    ("September 2013 is represented as the date format year month = '201309'",
     "'1000-10-10' refers to yearmonth.Date = '100009'"),
    ("patient born between Year 1930 to 1940 represents Birthday BETWEEN the dates '1930-12-31' AND '1940-01-01'",
     "'patient born between year 100 and 100' refers to STRFTIME('%Y', Patient.Birthday) BETWEEN '100' AND '100'"),
    # formulas
    ("Highest potential score is an attribute player calculated by taking maximum of potential",
     "'highest potential score' refers to ORDER BY Player_Attributes.potential DESC LIMIT 1"),
    ("Normal level of complement 3 suggests value of C3 > 35",
     "'normal level of complement 3' refers to Laboratory.C3 > 100"),
]

STATEMENT_SYSTEM = (
    "You are a database administrator. You have been given a few examples of domain statement and "
    "their corresponding templated DSs. The DSs are for the database {db_id} whose schema is provided below:\n"
    "{schema}"
)

STATEMENT_USER = (
    "For the given domain statement, you need to create a templated statement. Provide the statement in "
    "one sentence only. Generate the templated domain statement in the following form: "
    "'Relevant text component' refers to 'corresponding SQL syntax'. Use table.column names of the schema "
    "above and replace numbers by 100 and dates by 1000-10-10 in the text component.\n"
    "### Few Shot Exemplars\n{exemplars}\n"
    "### Task\nDomain Statement: {statement}\nTemplated Domain Statement:"
)


def statement_prompt(db_id: str, schema_ddl: str, statement: str,
                     exemplars: list[tuple[str, str]]) -> tuple[str, str]:
    """Render the (system, user) prompt that structures one statement.

    Args:
        db_id: the database.
        schema_ddl: its DDL-like schema text.
        statement: the statement as written.
        exemplars: (statement, templated statement) pairs.

    Returns:
        (system prompt, user prompt)
    """
    shots = "\n".join(f"Example:\nDomain Statement: {s}\nTemplated Domain Statement: {t}" for s, t in exemplars)
    return (STATEMENT_SYSTEM.format(db_id=db_id, schema=schema_ddl),
            STATEMENT_USER.format(exemplars=shots, statement=statement))

EXAMPLE_SYSTEM = (
    "You are a data analyst who documents question/SQL examples of the database {db_id} so that "
    "similar questions can find them. Answer with one JSON object and nothing else."
)

EXAMPLE_USER = (
    "Question: {question}\nSQL: {sql}\n\n"
    "Return JSON with these keys:\n"
    '- "normalized_question": the question without specific values, table or column names and display '
    'words ("show", "list", "display"); generalise conditions ("in 2023" -> "for some time range"); '
    'keep the directive form ("Show sales data" -> "sales data").\n'
    '- "main_clause": the primary data request only, without filters, grouping or ordering.\n'
    '- "requested_entities": list of the key data elements requested (e.g. "number of transactions per region").\n'
    '- "paraphrases": list of 3 differently worded questions with the same meaning as the normalized question.'
)


def example_prompt(db_id: str, question: str, sql: str) -> tuple[str, str]:
    """Render the (system, user) prompt that describes one example."""
    return EXAMPLE_SYSTEM.format(db_id=db_id), EXAMPLE_USER.format(question=question, sql=sql)
