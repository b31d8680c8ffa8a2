"""The prompt of the routing stage's LLM step: phrase -> schema-entity mapping (the re-rank's step 2),
the prompt of the DB-routing paper's Appendix B. Beside its stage (the enrichment prompts are in
:mod:`dbrouter.enrich.prompts`)."""

from __future__ import annotations

PHRASE_MAPPING_SYSTEM = (
    "Role: You are an expert Database Administrator specializing in Natural Language Processing (NLP) "
    "and Schema Mapping."
)

PHRASE_MAPPING_USER = """Objective: Analyze a given natural language QUERY and map meaningful words or phrases within it to the most relevant columns in the provided database TABLE INFORMATION.

Inputs:
- QUERY: The natural language question posed by the user.
- TABLE INFORMATION: A description of the database schema, including table names and column definitions.

Instructions:
- Analyze Context: Thoroughly examine both the QUERY and the TABLE INFORMATION. Understand the relationships between tables and the likely data stored in each column.
- Identify Mappable Terms: From the QUERY, extract words or multi-word phrases that carry semantic weight related to the database schema. Focus on: Nouns (entities/attributes like "student", "name"); Verbs (actions like "find", "participate"); Adjectives/Adverbs only if they directly represent a state, category, or quantifiable attribute in a column (e.g., "oldest" -> Age); Specific Values (like 'Smith', 123). Do not map adjectives/adverbs tied to operations (e.g., "different", "unique", "lowest").
- Perform Column Mapping: For each identified term, determine its corresponding database column(s): Direct & Semantic Mapping (match terms to synonymous columns); Value Mapping (map specific values to the most likely TableName.ColumnName); Verb-to-Concept Mapping (map verbs to data columns reflecting results/status of the action); Multiple Mappings (list all valid mappings, one per line); N/A Mapping (if no match exists, map to N/A, used sparingly).
- Exclusions (DO NOT MAP): SQL Keywords (SELECT, FROM, WHERE, etc.); Functions (COUNT, SUM, AVG, etc.); NL Phrases ("number of", "how many", "list all", etc.); General Modifiers ("different", "unique", "various", etc.); Stop Words ("what", "who", "the", "a", "in", etc.).
- Precision: All mappings must be directly justifiable. No speculation.

Output Format (strict, nothing else):
word_or_phrase - TableName.ColumnName
word_or_phrase - AnotherTable.AnotherColumnName
word_or_phrase_not_found - N/A

Input:

QUERY: {query}

TABLE INFORMATION:
{schema}
"""
