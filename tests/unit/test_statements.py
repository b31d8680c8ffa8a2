import json

import pytest

from python_udfs.statements import Schema, resolve_references, schema_from_json, structure_statement

SCHEMA = Schema([("molecule", "label", "label"), ("molecule", "molecule_id", "molecule id"),
                 ("state", "name", "name"), ("state", "abbreviation", "abbreviation"),
                 ("country", "county", "county"), ("zip_data", "zip_code", "zip code"),
                 ("ingredient", "name", "name"), ("yearmonth", "Date", "date"),
                 ("population", "population_growth", "population growth"),
                 ("sales", "Customer Names", "customer names")])


@pytest.mark.parametrize("text, expression, snippet, refs", [
    ("'non-carcinogenic' refers to molecule.label = '-'", "non-carcinogenic", "molecule.label = '-'",
     ["molecule.label"]),
    ("postal points refer to zip_code", "postal points", "zip_code", ["zip_data.zip_code"]),
    ("Negative growth in population means population_growth < 0", "Negative growth in population",
     "population_growth < 0", ["population.population_growth"]),
    ("label = '-' means molecules are non-carcinogenic", "molecules are non-carcinogenic", "label = '-'",
     ["molecule.label"]),
    ("September 2013 refers to Date = '201309'", "September 2013", "Date = '201309'", ["yearmonth.Date"]),
    ("'Montana' is the name of state", "Montana", "state.name = 'Montana'", ["state.name"]),
    ("\"PHILLIPS\" is the county", "PHILLIPS", "country.county = 'PHILLIPS'", ["country.county"]),
    ("'graham cracker crumbs' is a name of an ingredient", "graham cracker crumbs",
     "ingredient.name = 'graham cracker crumbs'", ["ingredient.name"]),
    ("growth rate = population_growth * 100", "growth rate", "population_growth * 100",
     ["population.population_growth"]),
])
def test_common_shapes_are_structured_and_validated(text, expression, snippet, refs):
    s = structure_statement(text, SCHEMA)
    assert (s.expression, s.snippet, s.references, s.status) == (expression, snippet, refs, "structured")


def test_unknown_columns_are_flagged_not_kept_silently():
    s = structure_statement("big molecules refers to molecule.weight > 100", SCHEMA)
    assert s.status == "invalid_reference" and "unknown column 'molecule.weight'" in s.problems
    s = structure_statement("rich refers to net_worth > 5", SCHEMA)
    assert s.status == "invalid_reference" and "unknown column 'net_worth'" in s.problems
    s = structure_statement("x refers to nothing.col", SCHEMA)
    assert "unknown table 'nothing'" in s.problems


def test_unstructurable_statements_are_marked():
    assert structure_statement("Molecules can be large.", SCHEMA).status == "unstructured"
    assert structure_statement("", SCHEMA).problems == ["empty statement"]


def test_functions_literals_and_aliases_are_not_identifiers():
    refs, problems = resolve_references("DIVIDE(COUNT(T1.molecule_id), 100) WHERE label = 'big_one'", SCHEMA)
    assert refs == ["molecule.molecule_id", "molecule.label"] and problems == []
    refs, _ = resolve_references("OrderNumber where Customer Names = 'Pacific Ltd'", SCHEMA)
    assert "sales.Customer Names" in refs


def test_schema_from_json_and_canonical_expression():
    schema = schema_from_json(json.dumps([["t", "c", "the c"]]))
    s = structure_statement("in 2017 refers to t.c = 2017", schema)
    assert s.canonical_expression == "in 100"
    assert json.loads(s.to_json())["canonical_expression"] == "in 100"


def test_reversed_sides_and_identifier_phrases():
    s = structure_statement("label = '+' refers to carcinogenic", SCHEMA)
    assert (s.expression, s.snippet) == ("carcinogenic", "label = '+'")
    s = structure_statement("'Utah' is the zip_code", SCHEMA)
    assert s.snippet == "zip_data.zip_code = 'Utah'"


def test_a_pasted_document_is_not_structured_into_a_huge_snippet():
    text = "big molecules refers to molecule.weight > 100. " * 2100  # ~98 kB
    s = structure_statement(text, SCHEMA)
    assert s.status == "unstructured" and s.snippet is None and s.expression is None
    assert "not structured; split it" in s.problems[0]
