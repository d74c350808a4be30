package io.stockade.conformance.storage;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;

import io.stockade.conformance.Template;
import io.stockade.conformance.writer.RawHttp;

import org.jspecify.annotations.Nullable;

/** GETs {@code url + path} (with {@code {key}} replaced) from the storage's own HTTP endpoint. */
public record HttpReader(String url, String path) implements StorageReader {

    @Override
    public @Nullable String read(String key) throws IOException {
        RawHttp.Response r = RawHttp.send(URI.create(url + Template.expand(path, key)), "GET", null, null,
                Duration.ofSeconds(5));
        if (r.status() == 404 || r.status() == 410) {
            return null;
        }
        if (r.status() != 200) {
            throw new IOException("GET " + Template.expand(path, key) + " answered " + r.status());
        }
        return r.body();
    }

    @Override
    public String describe() {
        return "http " + url + path;
    }
}
