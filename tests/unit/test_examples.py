from python_udfs.examples import describe_example, main_clause, normalize_question, parse_sql


def test_normalize_removes_values_display_words_and_generalises_time():
    assert normalize_question("Show me the names of singers from 'France' in 2014?",
                              "SELECT name FROM singer WHERE country = 'France' AND year = 2014") == \
        "names of singers from some value for some time range"
    assert normalize_question("Display sales data") == "sales data"
    assert normalize_question("What are the ids of stadium_info rows with capacity above 5000") == \
        "ids of rows with capacity above some number"
    assert normalize_question("   ") is None


def test_main_clause_cuts_at_first_modifier():
    assert main_clause("number of active users by country over the past month") == "number of active users"
    assert main_clause("total revenue") == "total revenue"


def test_parse_sql_resolves_aliases_and_entities():
    sql = ("SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
           "GROUP BY T1.stadium_id")
    tables, columns, entities, ok = parse_sql(sql)
    assert ok and tables == ["concert", "stadium"]
    assert "stadium.name" in columns and "concert.stadium_id" in columns
    assert entities == ["name of stadium", "count rows of concert"]
    assert parse_sql("SELEC nonsense (((")[3] is False


def test_describe_example_places_unqualified_columns_with_schema():
    d = describe_example("How many singers are older than 30?", "SELECT count(*) FROM singer WHERE age > 30",
                         {"singer": ["Singer_ID", "Age"]})
    assert d.tables == ["singer"] and d.columns == ["singer.Age"]
    assert d.normalized_question == "how many singers are older than some number"
    assert d.main_clause == "how many singers are older"


def test_short_literals_replace_whole_words_only_and_deterministically():
    q = "What are the names of all students who took class A or C?"
    sql = "SELECT name FROM student WHERE grade = 'A' OR grade = 'C'"
    assert normalize_question(q, sql) == "names of all students who took class some value or some value"
    import subprocess
    import sys

    code = ("from python_udfs.examples import normalize_question as n; "
            "print(n('a b ab ba c', \"x = 'ab' or y = 'ba' or z = 'a'\"))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout for seed in range(6)}
    assert outs == {"some value b some value some value c\n"}
