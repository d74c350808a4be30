package io.stockade.proxy.problem;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The vocabulary of refusals and its documentation say the same thing. */
class ProblemTypeTest {
    private static final Pattern ROW = Pattern.compile("^\\| `([a-z0-9-]+)` \\| (\\d+) \\| ([^|]+)"
            + " \\|", Pattern.MULTILINE);

    @Test
    void docsListEveryTypeWithItsStatusAndTitle() throws IOException {
        String doc = Files.readString(Path.of("..", "docs", "problems.md"));
        Map<String, String> documented = new LinkedHashMap<>();
        Matcher m = ROW.matcher(doc);
        while (m.find()) {
            documented.put(m.group(1), m.group(2) + " " + m.group(3).strip());
        }
        Map<String, String> coded = new LinkedHashMap<>();
        for (ProblemType t : ProblemType.values()) {
            coded.put(t.type(), t.status() + " " + t.title());
        }
        assertEquals(coded, documented, "docs/problems.md and ProblemType differ");
    }

    @Test
    void everyServiceUnavailableSaysWhenToRetry() {
        for (ProblemType t : ProblemType.values()) {
            Problem p = Problem.of(t, "x");
            assertEquals(t.status() == 503, p.headers().containsKey("Retry-After"), t.type());
            assertTrue(p.toJson().contains("\"title\":\"" + t.title() + "\""), t.type());
        }
    }

    @Test
    void typesAreUnique() {
        assertEquals(ProblemType.values().length, java.util.Arrays.stream(ProblemType.values())
                .map(ProblemType::type).distinct().count());
    }
}
