"""dbrouter_join_paths (python_udfs/join_paths.py) gives, from every table of the demo KB, the rows
kb_table_reachability holds (built by the SQL walk, table_reachability), and the route's join
paths on the UDF path are the pure-SQL path's walk."""

from __future__ import annotations

import json


def test_join_paths_from_every_table_are_the_stored_walk(kb_con):
    sources = kb_con.execute("select distinct db_id, from_table from kb_table_reachability "
                             "order by db_id, from_table").fetchall()
    assert len(sources) > 20
    got = kb_con.execute("""
        select u.p.db_id, u.p.from_table, u.p.to_table, u.p.hops,
               trim(replace(u.p.join_path, '|', ' > '), ' >') as join_path
        from (select unnest(dbrouter_join_paths('main.kb_walk_edges', ?, ?, 6)) as p) as u
        order by all""", [[s[0] for s in sources], [s[1] for s in sources]]).fetchall()
    stored = kb_con.execute("select db_id, from_table, to_table, hops, join_path from kb_table_reachability "
                            "order by all").fetchall()
    assert got == stored
    assert any(r[3] >= 2 for r in stored)  # paths of more than one hop were compared


def test_the_udf_paths_join_paths_are_the_sql_walks(kb_con):
    """route_query_ranked_udf reads the held graph, route_query_ranked_sql walks in SQL: for the
    same chosen tables the evidence's join paths agree (the two paths may choose other tables)."""
    questions = ["Show the name of every singer and the concerts they sang in",
                 "list the courses taught by each teacher with the teacher's name",
                 "which products are sold in which stores, with the store's address"]
    compared = 0
    for q in questions:
        udf = kb_con.execute("select db_id, evidence from route_query_ranked_udf(?, 3)", [q]).fetchall()
        sql = {r[0]: r[1] for r in kb_con.execute("select db_id, evidence from route_query_ranked_sql(?, 3)", [q]).fetchall()}
        for db_id, evidence in udf:
            a, b = json.loads(evidence), json.loads(sql.get(db_id) or "{}")
            if a.get("join_tables") and a.get("join_tables") == b.get("join_tables"):
                assert a.get("join_path") == b.get("join_path"), (q, db_id)
                compared += bool(a.get("join_path"))
    assert compared >= 1
