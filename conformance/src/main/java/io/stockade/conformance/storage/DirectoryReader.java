package io.stockade.conformance.storage;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

import io.stockade.conformance.Template;

import org.jspecify.annotations.Nullable;

/** Reads {@code root/file} (with {@code {key}} replaced) from a directory, e.g. the file backend's root. */
public record DirectoryReader(Path root, String file) implements StorageReader {

    @Override
    public @Nullable String read(String key) throws IOException {
        try {
            return Files.readString(root.resolve(Template.expand(file, key)), StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    @Override
    public String describe() {
        return "directory " + root + "/" + file;
    }
}
