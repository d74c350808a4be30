package io.stockade.conformance.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The value at {@code read.json} in documents kept in a real directory, read by {@link DirectoryReader}. */
class JsonValueReaderTest {

    @Test
    void theValueIsTakenAtThePointerAndAMissingOneIsAFailedReadNotAnAbsentValue(@TempDir Path dir) throws Exception {
        Files.createDirectories(dir.resolve("jobs"));
        Files.writeString(dir.resolve("jobs/conformance-r-pause"), "{\"value\": \"w1.t5-3\", \"token\": 5}");
        Files.writeString(dir.resolve("jobs/conformance-r-nested"), "{\"job\": {\"state\": {\"value\": 42}}}");
        Files.writeString(dir.resolve("jobs/conformance-r-other"), "{\"token\": 5}");
        Files.writeString(dir.resolve("jobs/conformance-r-text"), "w1.t5-3");
        try (JsonValueReader r = new JsonValueReader(new DirectoryReader(dir, "jobs/{id}"), "/value");
             JsonValueReader nested = new JsonValueReader(new DirectoryReader(dir, "jobs/{id}"), "/job/state/value")) {
            assertEquals("w1.t5-3", r.read("conformance/r/pause"));
            assertEquals("42", nested.read("conformance/r/nested"));
            assertNull(r.read("conformance/r/absent"), "no document: absent");
            IOException missing = assertThrows(IOException.class, () -> r.read("conformance/r/other"));
            assertTrue(missing.getMessage().startsWith("nothing at /value in {\"token\": 5}"), missing.getMessage());
            IOException text = assertThrows(IOException.class, () -> r.read("conformance/r/text"));
            assertTrue(text.getMessage().startsWith("not JSON (read.json /value): w1.t5-3"), text.getMessage());
            assertTrue(r.describe().endsWith("jobs/{id}, JSON /value"), r.describe());
        }
    }
}
