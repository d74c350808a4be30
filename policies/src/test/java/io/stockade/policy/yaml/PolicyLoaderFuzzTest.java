package io.stockade.policy.yaml;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Pattern;

import io.stockade.policy.PolicyException;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Fuzzing the loader: a policy file cut, spliced, with characters flipped or lines swapped, either loads or is
 * refused with located errors ({@code file:line:column: field: message}). Never another exception, never a stack
 * trace for the user.
 */
class PolicyLoaderFuzzTest {
    private static final Pattern LOCATED = Pattern.compile("^fuzz\\.yaml:\\d+:\\d+: \\S.*", Pattern.MULTILINE);
    private static final String SEED = read("examples/quickstart.yaml") + "\n" + read("examples/http-upstream.yaml");

    private static String read(String path) {
        try {
            return Files.readString(Path.of(path));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Property(tries = 500)
    void mutatedFilesLoadOrFailWithLocatedErrors(@ForAll("mutants") String yaml) {
        try {
            PolicyLoader.parse(yaml, Path.of("fuzz.yaml"), Map.of("HOME", "/tmp"));
        } catch (PolicyException e) {
            assertFalse(e.errors().isEmpty(), "a refusal names at least one error");
            assertTrue(LOCATED.matcher(e.getMessage()).find(), "errors are located: " + e.getMessage());
        } catch (RuntimeException e) {
            fail("the loader threw " + e + " for:\n" + yaml, e);
        }
    }

    @Provide
    Arbitrary<String> mutants() {
        Arbitrary<String> flips = Arbitraries.integers().between(0, SEED.length() - 1).list().ofMinSize(1).ofMaxSize(8)
                .flatMap(positions -> Arbitraries.chars().with(":-[]{}\"'#&*!|>%@` \t\n0aZ$").list()
                        .ofSize(positions.size()).map(chars -> {
                            StringBuilder b = new StringBuilder(SEED);
                            for (int k = 0; k < positions.size(); k++) {
                                b.setCharAt(positions.get(k), chars.get(k));
                            }
                            return b.toString();
                        }));
        Arbitrary<String> cuts = Arbitraries.integers().between(0, SEED.length()).map(n -> SEED.substring(0, n));
        Arbitrary<String> splices = Arbitraries.integers().between(0, SEED.length()).tuple2()
                .map(t -> SEED.substring(0, Math.min(t.get1(), t.get2()))
                        + SEED.substring(Math.max(t.get1(), t.get2())));
        Arbitrary<String> swapped = Arbitraries.integers().between(0, 60).tuple2().map(t -> {
            String[] lines = SEED.split("\n", -1);
            int a = t.get1() % lines.length;
            int b = t.get2() % lines.length;
            String x = lines[a];
            lines[a] = lines[b];
            lines[b] = x;
            return String.join("\n", lines);
        });
        Arbitrary<String> garbage = Arbitraries.strings().all().ofMaxLength(200);
        return Arbitraries.oneOf(flips, cuts, splices, swapped, garbage);
    }
}
