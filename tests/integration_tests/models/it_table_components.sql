{{ dbrouter.table_components(ref('it_graph_tables'), ref('it_graph_edges')) }}
