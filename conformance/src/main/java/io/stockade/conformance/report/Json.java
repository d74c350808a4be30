package io.stockade.conformance.report;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.Locale;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.jspecify.annotations.Nullable;

/** The report's JSON, written with Jackson's streaming generator behind a small fluent API. */
final class Json {
    private static final JsonFactory FACTORY = new JsonFactory();

    private final StringWriter out = new StringWriter();
    private final JsonGenerator g;

    Json() {
        try {
            g = FACTORY.createGenerator(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** An interface for one generator call, to keep each method one line. */
    private interface Write {
        void to(JsonGenerator g) throws IOException;
    }

    private Json write(Write w) {
        try {
            w.to(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a StringWriter does not fail
        }
        return this;
    }

    Json open(char c) {
        return write(c == '{' ? JsonGenerator::writeStartObject : JsonGenerator::writeStartArray);
    }

    Json close(char c) {
        return write(c == '}' ? JsonGenerator::writeEndObject : JsonGenerator::writeEndArray);
    }

    Json field(String name) {
        return write(gen -> gen.writeFieldName(name));
    }

    Json str(@Nullable String s) {
        return write(gen -> {
            if (s == null) {
                gen.writeNull();
            } else {
                gen.writeString(s);
            }
        });
    }

    /** Milliseconds and the like, with three decimals. */
    Json num(double d) {
        return raw(number(d));
    }

    Json num(long n) {
        return write(gen -> gen.writeNumber(n));
    }

    /** A value already in JSON ({@code null}, a formatted number). */
    Json raw(String s) {
        return write(gen -> gen.writeRawValue(s));
    }

    static String number(double d) {
        return String.format(Locale.ROOT, "%.3f", d);
    }

    @Override
    public String toString() {
        write(JsonGenerator::flush);
        return out.toString();
    }
}
