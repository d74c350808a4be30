package io.stockade.policy.yaml;

import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class EnvSubstitutionTest {
    private final EnvSubstitution env = new EnvSubstitution(Map.of("HOST", "db.internal", "EMPTY", ""));

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            plain text                   | plain text
            ${HOST}                      | db.internal
            http://${HOST}:5432/x        | http://db.internal:5432/x
            ${PORT:-5432}                | 5432
            ${HOST:-other}               | db.internal
            ${EMPTY:-fallback}           | fallback
            ${UNSET:-}                   | ''
            ${UNSET:-a:-b}               | a:-b
            cost: $$5                    | cost: $5
            $$${HOST}                    | $db.internal
            $HOST and a lone $           | $HOST and a lone $
            """)
    void replacesReferencesAndEscapes(String text, String expected) {
        assertEquals(expected, env.apply(text));
    }

    @Test
    void aSetButEmptyVariableWithoutDefaultIsEmpty() {
        assertEquals("[]", env.apply("[${EMPTY}]"));
    }

    @Test
    void substitutedValuesAreNotScannedAgain() {
        EnvSubstitution nested = new EnvSubstitution(Map.of("A", "${B}", "B", "b"));
        assertEquals("${B}", nested.apply("${A}"));
    }

    @Test
    void unsetVariableWithoutDefaultIsAnErrorNamingIt() {
        var e = assertThrows(IllegalArgumentException.class, () -> env.apply("x-${TOKEN}"));
        assertEquals("environment variable TOKEN is not set and '${TOKEN}' has no default; set it or write"
                + " ${TOKEN:-default}", e.getMessage());
    }

    @Test
    void unclosedReferenceIsAnError() {
        var e = assertThrows(IllegalArgumentException.class, () -> env.apply("${HOST"));
        assertEquals("unclosed '${' in '${HOST'; write $$ for a literal '$'", e.getMessage());
    }

    @Test
    void badNameIsAnError() {
        var e = assertThrows(IllegalArgumentException.class, () -> env.apply("${my-var}"));
        assertEquals("bad environment variable name 'my-var' in '${my-var}': use letters, digits and '_', not"
                + " starting with a digit", e.getMessage());
    }
}
