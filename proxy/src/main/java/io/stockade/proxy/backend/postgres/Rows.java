package io.stockade.proxy.backend.postgres;

import java.math.BigDecimal;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import io.stockade.policy.BackendConfig.Statement;
import io.stockade.proxy.json.JsonWriter;

/** Result rows as JSON objects: numbers and booleans as JSON, json/jsonb as they are, the rest as strings. */
final class Rows {
    private Rows() {
    }

    static List<String> read(ResultSet r) throws SQLException {
        try (r) {
            ResultSetMetaData md = r.getMetaData();
            int n = md.getColumnCount();
            String[] names = new String[n];
            String[] types = new String[n];
            for (int i = 0; i < n; i++) {
                names[i] = JsonWriter.quote(md.getColumnLabel(i + 1));
                types[i] = md.getColumnTypeName(i + 1);
            }
            List<String> rows = new ArrayList<>();
            while (r.next()) {
                StringBuilder b = new StringBuilder(64).append('{');
                for (int i = 0; i < n; i++) {
                    if (i > 0) {
                        b.append(',');
                    }
                    b.append(names[i]).append(':').append(value(r, i + 1, types[i]));
                }
                rows.add(b.append('}').toString());
            }
            return rows;
        }
    }

    private static String value(ResultSet r, int column, String type) throws SQLException {
        Object v = r.getObject(column);
        if (v == null) {
            return "null";
        }
        if (type.equals("json") || type.equals("jsonb")) {
            return r.getString(column);
        }
        if (v instanceof BigDecimal d) {
            return d.toPlainString();
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        return JsonWriter.quote(r.getString(column));
    }

    /** Whether a statement only reads (its rows are not "affected"). */
    static boolean isQuery(Statement s) {
        String head = s.sql().jdbc().stripLeading().toLowerCase(Locale.ROOT);
        return head.startsWith("select") || head.startsWith("values") || head.startsWith("table")
                || head.startsWith("show");
    }
}
