package io.stockade.proxy.admin;

import java.lang.reflect.RecordComponent;
import java.util.Collection;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import io.stockade.policy.StockadeConfig;
import io.stockade.proxy.json.JsonWriter;

import org.jspecify.annotations.Nullable;

/**
 * The policies in force as JSON, for {@code GET /admin/policies}: every record of the model rendered by its
 * components, with secrets redacted. A component is a secret when its name says so (password, token, secret,
 * credential, key), so a field added later is redacted without anyone remembering to.
 */
final class ConfigView {
    static final String REDACTED = "(redacted)";
    private static final Set<String> SECRET_WORDS = Set.of("password", "token", "secret", "credential", "key");

    private ConfigView() {
    }

    static String json(StockadeConfig config) {
        StringBuilder b = new StringBuilder(1024);
        write(b, config, null);
        return b.toString();
    }

    private static void write(StringBuilder b, @Nullable Object value, @Nullable String name) {
        if (value == null) {
            b.append("null");
        } else if (name != null && secret(name) && !(value instanceof Boolean) && !(value instanceof Number)) {
            b.append(JsonWriter.quote(REDACTED));
        } else if (value instanceof Record record) {
            b.append('{');
            boolean first = true;
            for (RecordComponent c : record.getClass().getRecordComponents()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append(JsonWriter.quote(c.getName())).append(':');
                try {
                    write(b, c.getAccessor().invoke(record), c.getName());
                } catch (ReflectiveOperationException e) {
                    b.append(JsonWriter.quote("(unreadable)"));
                }
            }
            if (record.getClass().getInterfaces().length > 0) { // a variant of a sealed type: say which
                b.append(first ? "" : ",").append("\"kind\":").append(JsonWriter.quote(record.getClass().getSimpleName()
                        .toLowerCase(Locale.ROOT)));
            }
            b.append('}');
        } else if (value instanceof Map<?, ?> map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append(JsonWriter.quote(String.valueOf(e.getKey()))).append(':');
                write(b, e.getValue(), String.valueOf(e.getKey()));
            }
            b.append('}');
        } else if (value instanceof Collection<?> list) {
            b.append('[');
            boolean first = true;
            for (Object item : list) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                write(b, item, name);
            }
            b.append(']');
        } else if (value instanceof Number || value instanceof Boolean) {
            b.append(value);
        } else if (value instanceof Enum<?> e) {
            b.append(JsonWriter.quote(e.name().toLowerCase(Locale.ROOT).replace('_', '-')));
        } else {
            b.append(JsonWriter.quote(value.toString()));
        }
    }

    private static boolean secret(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return SECRET_WORDS.stream().anyMatch(n::contains) && !n.endsWith("file");
    }
}
