package io.stockade.policy;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class ScopeTemplateTest {

    private static final List<String> KNOWN = List.of("tenant", "path");

    @Test
    void rendersLiteralTextAndPlaceholders() {
        ScopeTemplate scope = ScopeTemplate.parse("t/{tenant}/files/{path}", KNOWN);
        assertEquals("t/acme/files/a/b.txt", scope.render(Map.of("tenant", "acme", "path", "a/b.txt")));
    }

    @Test
    void aScopeWithoutPlaceholdersIsOneScopeForEveryRequest() {
        ScopeTemplate scope = ScopeTemplate.parse("global", KNOWN);
        assertEquals(List.of(), scope.variables());
        assertEquals("global", scope.render(Map.of("path", "anything")));
    }

    @Test
    void listsTheVariablesItUsesInOrder() {
        assertEquals(List.of("path", "tenant"), ScopeTemplate.parse("{path}@{tenant}", KNOWN).variables());
    }

    @Test
    void renderingWithoutAUsedVariableFails() {
        ScopeTemplate scope = ScopeTemplate.parse("files/{path}", KNOWN);
        var e = assertThrows(IllegalStateException.class, () -> scope.render(Map.of("tenant", "acme")));
        assertEquals("no value for {path} in scope 'files/{path}'", e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '"', textBlock = """
            "  "           | a scope template must not be empty
            files/{name}   | scope template 'files/{name}' uses {name}, which the path template does not bind; \
            known: [tenant, path]
            files/{path    | unclosed '{' in scope template 'files/{path'
            files/path}    | unopened '}' in scope template 'files/path}'
            """)
    void parseRejectsBadTemplatesWithAPreciseMessage(String template, String message) {
        var e = assertThrows(IllegalArgumentException.class, () -> ScopeTemplate.parse(template, KNOWN));
        assertEquals(message, e.getMessage());
    }

    @Test
    void toStringIsTheTemplateText() {
        assertEquals("files/{path}", ScopeTemplate.parse("files/{path}", KNOWN).toString());
    }
}
