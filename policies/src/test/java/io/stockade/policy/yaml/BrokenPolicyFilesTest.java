package io.stockade.policy.yaml;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.stockade.policy.PolicyError;
import io.stockade.policy.PolicyException;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each file in {@code src/test/resources/broken} starts with one or more lines
 * {@code # expect: <line>:<column>: <field>: <message fragment>}; loading it must fail with exactly those errors.
 */
class BrokenPolicyFilesTest {
    private static final Pattern EXPECT = Pattern.compile("# expect: (\\d+):(\\d+): (\\S+): (.+)");

    private record Expectation(int line, int column, String field, String fragment) {
        boolean isMetBy(PolicyError error) {
            return error.line() == line && error.column() == column && error.field().equals(field)
                    && error.message().contains(fragment);
        }

        @Override
        public String toString() {
            return line + ":" + column + ": " + field + ": " + fragment;
        }
    }

    static Stream<Path> brokenFiles() throws IOException, URISyntaxException {
        Path directory = Path.of(BrokenPolicyFilesTest.class.getResource("/broken").toURI());
        List<Path> files;
        try (Stream<Path> listing = Files.list(directory)) {
            files = listing.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
        assertTrue(files.size() >= 20, "expected at least 20 broken examples, found " + files.size());
        return files.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenFiles")
    void eachBrokenFileProducesItsPromisedErrors(Path file) throws IOException {
        List<Expectation> expected = expectations(file);
        assertFalse(expected.isEmpty(), file + " promises no error: start it with '# expect: line:column: field: "
                + "message'");

        PolicyException e = assertThrows(PolicyException.class,
                () -> PolicyLoader.parse(Files.readString(file), file, Map.of()));

        for (Expectation expectation : expected) {
            assertTrue(e.errors().stream().anyMatch(expectation::isMetBy),
                    "no error " + expectation + " in:\n" + e.getMessage());
        }
        assertEquals(expected.size(), e.errors().size(), "errors not promised by the file:\n" + e.getMessage());
    }

    private static List<Expectation> expectations(Path file) throws IOException {
        return Files.readAllLines(file).stream()
                .takeWhile(line -> line.startsWith("# expect:"))
                .map(line -> {
                    Matcher m = EXPECT.matcher(line);
                    assertTrue(m.matches(), "malformed expectation in " + file + ": " + line);
                    return new Expectation(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)), m.group(3),
                            m.group(4));
                })
                .toList();
    }
}
