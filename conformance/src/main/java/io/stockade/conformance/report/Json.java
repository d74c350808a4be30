package io.stockade.conformance.report;

import java.util.Locale;

/** A tiny streaming JSON writer (commas handled), enough for the report. */
final class Json {

    private final StringBuilder b = new StringBuilder();
    private boolean needComma;

    Json open(char c) {
        comma();
        b.append(c);
        needComma = false;
        return this;
    }

    Json close(char c) {
        b.append(c);
        needComma = true;
        return this;
    }

    Json field(String name) {
        comma();
        quote(name);
        b.append(':');
        needComma = false;
        return this;
    }

    Json str(String s) {
        if (s == null) {
            return raw("null");
        }
        comma();
        quote(s);
        needComma = true;
        return this;
    }

    Json num(double d) {
        return raw(number(d));
    }

    Json num(long n) {
        return raw(Long.toString(n));
    }

    Json raw(String s) {
        comma();
        b.append(s);
        needComma = true;
        return this;
    }

    static String number(double d) {
        return String.format(Locale.ROOT, "%.3f", d);
    }

    private void comma() {
        if (needComma) {
            b.append(',');
        }
    }

    private void quote(String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    @Override
    public String toString() {
        return b.toString();
    }
}
