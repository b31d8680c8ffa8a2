"""The one SQL-usage extractor (python_udfs.sql_usage), behind example descriptors and eval gold."""

from dbrouter.eval.gold import gold_schema
from python_udfs.examples import parse_sql
from python_udfs.sql_usage import sql_usage

SCHEMA = {"Author": ["author_id", "name"], "Author_list": ["author_id", "paper_id"], "Paper": ["paper_id", "venue"]}


def test_an_alias_means_its_own_table_in_each_sub_query():
    sql = ("SELECT T1.name FROM Author AS T1 WHERE T1.author_id NOT IN "
           "(SELECT T1.author_id FROM Author_list AS T1 JOIN Paper AS T2 ON T1.paper_id = T2.paper_id)")
    usage = sql_usage(sql, SCHEMA)
    assert usage.tables == ["Author", "Author_list", "Paper"]
    assert usage.columns == ["Author.name", "Author.author_id", "Author_list.author_id", "Author_list.paper_id",
                             "Paper.paper_id"]


def test_string_literals_cte_columns_and_aliases_are_not_columns():
    """Before: the examples' extractor listed "ACL" (a double-quoted SQLite string) as a column."""
    sql = ('WITH c AS (SELECT venue AS v FROM Paper) SELECT v, count(*) AS n FROM c '
           'WHERE v = "ACL" GROUP BY v ORDER BY n')
    usage = sql_usage(sql, SCHEMA)
    assert usage.columns == ["Paper.venue"]
    assert parse_sql(sql, SCHEMA)[1] == ["Paper.venue"]


def test_schema_spelling_wins_and_gold_is_its_lower_case_view():
    usage = sql_usage("select NAME from author", SCHEMA)
    assert usage.tables == ["Author"] and usage.columns == ["Author.name"]
    gold = gold_schema("select NAME from author", {t.lower(): {c.lower() for c in cs} for t, cs in SCHEMA.items()})
    assert gold.tables == {"author"} and gold.columns == {"author.name"}


def test_without_a_schema_a_single_table_scope_places_its_columns():
    assert sql_usage("select a, b from t").columns == ["t.a", "t.b"]
    assert sql_usage("select a from t join u on t.x = u.y").columns == ["t.x", "u.y"]


def test_unparseable_sql_is_an_error_not_an_exception():
    assert sql_usage("select from from").error
    assert sql_usage("").error and sql_usage(None).error
    assert parse_sql("select from from") == ([], [], [], False)


def test_columns_inside_having_aggregates_are_used():
    """Before: both extractors missed `bikes_available` (sqlglot's scopes leave HAVING aggregates out)."""
    schema = {"station": ["id", "lat"], "status": ["station_id", "bikes_available"]}
    sql = ("SELECT id FROM station WHERE lat > 37.4 EXCEPT SELECT station_id FROM status "
           "GROUP BY station_id HAVING min(bikes_available) < 7")
    assert set(sql_usage(sql, schema).columns) == {"station.id", "station.lat", "status.station_id",
                                                   "status.bikes_available"}
