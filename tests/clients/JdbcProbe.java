// What a BI tool built on pgjdbc (DBeaver, Metabase, Tableau, DataGrip) asks `dbrouter serve` on
// connect and when a user browses a table, printed as one JSON object per line for the tests.
//
// Run: java -cp /usr/share/java/postgresql.jar JdbcProbe.java <jdbc-url> <schema> <table> <select-sql>
// Each line: {"call": name, "columns": [...], "rows": [[...], ...]} or {"call": name, "error": message}.
// <select-sql> is run as a prepared statement 10 times (pgjdbc turns to a server-side statement
// and binary results from the 5th run), each run's rows printed as call "prepared#N".

import java.sql.*;
import java.util.*;

public class JdbcProbe {
    static String quote(Object value) {
        if (value == null) return "null";
        if (value instanceof Number || value instanceof Boolean) return value.toString();
        String s = value.toString();
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        return out.append('"').toString();
    }

    interface Call { ResultSet run() throws SQLException; }

    static void emit(String name, Call call) {
        try (ResultSet rs = call.run()) {
            printRows(name, rs, 200);
        } catch (Exception e) {
            System.out.println("{\"call\": " + quote(name) + ", \"error\": " + quote(e.toString()) + "}");
        }
    }

    static void printRows(String name, ResultSet rs, int limit) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        StringBuilder out = new StringBuilder("{\"call\": " + quote(name) + ", \"columns\": [");
        for (int i = 1; i <= md.getColumnCount(); i++) {
            out.append(i > 1 ? ", " : "").append("[").append(quote(md.getColumnLabel(i))).append(", ")
               .append(quote(md.getColumnTypeName(i))).append(", ").append(md.getColumnType(i)).append("]");
        }
        out.append("], \"rows\": [");
        int n = 0;
        while (rs.next() && n < limit) {
            out.append(n++ > 0 ? ", " : "").append("[");
            for (int i = 1; i <= md.getColumnCount(); i++) {
                Object value = rs.getObject(i);
                if (value instanceof java.sql.Array) value = Arrays.toString((Object[]) ((java.sql.Array) value).getArray());
                else if (value instanceof java.math.BigDecimal) value = value.toString();
                else if (value instanceof Double && (((Double) value).isNaN() || ((Double) value).isInfinite())) value = value.toString();
                else if (value != null && !(value instanceof Number || value instanceof Boolean || value instanceof String)) {
                    value = value.getClass().getSimpleName() + ":" + value;
                }
                out.append(i > 1 ? ", " : "").append(quote(value));
            }
            out.append("]");
        }
        System.out.println(out.append("]}"));
    }

    public static void main(String[] args) throws Exception {
        String url = args[0], schema = args[1], table = args[2], select = args[3];
        try (Connection con = DriverManager.getConnection(url)) {
            DatabaseMetaData md = con.getMetaData();
            System.out.println("{\"call\": \"product\", \"columns\": [], \"rows\": [[" + quote(md.getDatabaseProductName())
                + ", " + quote(md.getDatabaseProductVersion()) + ", " + quote(md.getUserName()) + "]]}");
            emit("getCatalogs", md::getCatalogs);
            emit("getSchemas", md::getSchemas);
            emit("getTableTypes", md::getTableTypes);
            emit("getTables", () -> md.getTables(null, schema, "%", new String[] {"TABLE", "VIEW"}));
            emit("getColumns", () -> md.getColumns(null, schema, table, "%"));
            emit("getPrimaryKeys", () -> md.getPrimaryKeys(null, schema, table));
            emit("getImportedKeys", () -> md.getImportedKeys(null, schema, table));
            emit("getExportedKeys", () -> md.getExportedKeys(null, schema, table));
            emit("getIndexInfo", () -> md.getIndexInfo(null, schema, table, false, true));
            emit("getTypeInfo", md::getTypeInfo);
            emit("getFunctions", () -> md.getFunctions(null, "main", "route_query%"));
            emit("getProcedures", () -> md.getProcedures(null, "main", "route_query%"));
            emit("getTablePrivileges", () -> md.getTablePrivileges(null, schema, table));
            emit("getBestRowIdentifier", () -> md.getBestRowIdentifier(null, schema, table, DatabaseMetaData.bestRowSession, true));
            emit("getVersionColumns", () -> md.getVersionColumns(null, schema, table));
            emit("getUDTs", () -> md.getUDTs(null, "main", "%", null));
            emit("getClientInfoProperties", md::getClientInfoProperties);
            try (PreparedStatement ps = con.prepareStatement(select)) {
                for (int run = 1; run <= 10; run++) {
                    final int n = run;
                    emit("prepared#" + n, ps::executeQuery);
                }
            }
            emit("routed", () -> {
                PreparedStatement ps = con.prepareStatement("select route_query(?) as db");
                ps.setString(1, "How many singers do we have?");
                return ps.executeQuery();
            });
        }
    }
}
