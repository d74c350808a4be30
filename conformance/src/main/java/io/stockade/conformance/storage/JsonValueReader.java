package io.stockade.conformance.storage;

import java.io.IOException;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.filter.FilteringParserDelegate;
import com.fasterxml.jackson.core.filter.JsonPointerBasedFilter;
import com.fasterxml.jackson.core.filter.TokenFilter;
import org.jspecify.annotations.Nullable;

/**
 * The value inside a JSON document the storage holds (an HTTP upstream that keeps the body it was sent, a
 * {@code jsonb} column read whole): what {@code read.json} points at (a JSON Pointer, e.g. {@code /value}), read
 * as a string (a number or boolean by its JSON spelling). Absent document: absent. A document that is not JSON, or
 * has nothing at the pointer, is a failed read that says so (never a silent absent value: that would look like a
 * lost write).
 */
public final class JsonValueReader implements StorageReader {

    private static final JsonFactory FACTORY = new JsonFactory();

    private final StorageReader inner;
    private final String pointer;
    private final JsonPointer compiled;

    public JsonValueReader(StorageReader inner, String pointer) {
        this.inner = inner;
        this.pointer = pointer;
        this.compiled = JsonPointer.compile(pointer);
    }

    @Override
    public @Nullable String read(String key) throws IOException {
        String doc = inner.read(key);
        if (doc == null) {
            return null;
        }
        try (JsonParser p = new FilteringParserDelegate(FACTORY.createParser(doc),
                new JsonPointerBasedFilter(compiled), TokenFilter.Inclusion.ONLY_INCLUDE_ALL, false)) {
            JsonToken t = p.nextToken();
            if (t == null) {
                throw new IOException("nothing at " + pointer + " in " + abbreviate(doc));
            }
            if (t == JsonToken.VALUE_NULL) {
                return null;
            }
            if (!t.isScalarValue()) {
                throw new IOException(pointer + " is not a string, number or boolean in " + abbreviate(doc));
            }
            return p.getText();
        } catch (JsonProcessingException e) {
            throw new IOException("not JSON (read.json " + pointer + "): " + abbreviate(doc), e);
        }
    }

    private static String abbreviate(String s) {
        return s.length() <= 200 ? s : s.substring(0, 200) + "…";
    }

    @Override
    public String describe() {
        return inner.describe() + ", JSON " + pointer;
    }

    @Override
    public void close() {
        inner.close();
    }
}
