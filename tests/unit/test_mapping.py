from dbrouter.mapping import parse_mapping, schema_text

COLS = {("singer", "name"), ("singer", "age"), ("concert", "year")}


def test_parse_mapping_lines_and_na():
    out = parse_mapping("singers - Singer.Name\nold - singer.Age\nsingers - concert.Year\nmoon - N/A\n", "db", COLS)
    assert [(m.phrase, m.table_name, m.column_name) for m in out] == [
        ("singers", "Singer", "Name"), ("old", "singer", "Age"), ("singers", "concert", "Year"), ("moon", None, None)]


def test_parse_mapping_tolerates_fences_and_bullets():
    out = parse_mapping("```\n- singer - singer.name\n```", "db", COLS)
    assert out and out[0].column_name == "name"


def test_parse_mapping_rejects_prose_unknown_columns_and_empty():
    assert parse_mapping("Here are the mappings: singer is singer.name", "db", COLS) is None
    assert parse_mapping("singer - singer.height", "db", COLS) is None
    assert parse_mapping("singer - stadium.name", "db", COLS) is None
    assert parse_mapping("", "db", COLS) is None


def test_schema_text_groups_columns_by_table():
    assert schema_text([("singer", "name", "text"), ("singer", "age", None), ("concert", "year", "int")]) == (
        "singer(name text, age)\nconcert(year int)")
