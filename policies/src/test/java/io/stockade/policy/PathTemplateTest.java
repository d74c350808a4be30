package io.stockade.policy;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PathTemplateTest {

    private static Optional<Map<String, String>> match(String template, String path) {
        return PathTemplate.parse(template).match(path);
    }

    @Test
    void literalTemplateMatchesOnlyItsOwnPath() {
        assertEquals(Optional.of(Map.of()), match("/health/live", "/health/live"));
        assertEquals(Optional.empty(), match("/health/live", "/health"));
        assertEquals(Optional.empty(), match("/health/live", "/health/live/more"));
        assertEquals(Optional.empty(), match("/health/live", "/health/dead"));
    }

    @Test
    void rootTemplateMatchesOnlyTheRoot() {
        assertEquals(Optional.of(Map.of()), match("/", "/"));
        assertEquals(Optional.empty(), match("/", "/x"));
    }

    @Test
    void variableBindsExactlyOneSegment() {
        assertEquals(Optional.of(Map.of("id", "42")), match("/accounts/{id}/balance", "/accounts/42/balance"));
        assertEquals(Optional.empty(), match("/accounts/{id}/balance", "/accounts/4/2/balance"));
        assertEquals(Optional.empty(), match("/accounts/{id}", "/accounts/"));
    }

    @Test
    void greedyTailBindsOneOrMoreSegmentsJoinedBySlash() {
        assertEquals(Optional.of(Map.of("path", "a")), match("/files/{path...}", "/files/a"));
        assertEquals(Optional.of(Map.of("path", "a/b/c.txt")), match("/files/{path...}", "/files/a/b/c.txt"));
        assertEquals(Optional.empty(), match("/files/{path...}", "/files"));
        assertEquals(Optional.empty(), match("/files/{path...}", "/files/"));
    }

    @Test
    void greedyTailRefusesEmptySegments() {
        assertEquals(Optional.empty(), match("/files/{path...}", "/files/a//b"));
        assertEquals(Optional.empty(), match("/files/{path...}", "/files/a/"));
    }

    @Test
    void boundValuesArePercentDecodedAndPlusStaysPlus() {
        assertEquals(Optional.of(Map.of("name", "a b+c é")), match("/x/{name}", "/x/a%20b+c%20%C3%A9"));
        assertEquals(Optional.of(Map.of("path", "dir/a b")), match("/x/{path...}", "/x/dir/a%20b"));
    }

    @Test
    void literalsCompareDecoded() {
        assertEquals(Optional.of(Map.of()), match("/files", "/%66iles"));
        assertEquals(Optional.of(Map.of()), match("/a%20b", "/a%20b"));
        assertEquals(Optional.of(Map.of()), match("/a b", "/a%20b"), "a literal may be written unencoded");
        assertEquals(Optional.empty(), match("/a%20b", "/a b"), "a request may not send a raw space");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/x/%zz", "/x/%2e%2e", "/x/%2E", "/x/a%2Fb", "/x/%2e%2e%2Fsecret", "/x/a%00b", "/x/.."})
    void unsafeOrMalformedSegmentsMatchNothing(String path) {
        assertEquals(Optional.empty(), match("/x/{path...}", path));
    }

    @Test
    void pathsWithoutLeadingSlashMatchNothing() {
        assertEquals(Optional.empty(), match("/{p...}", "x/y"));
        assertEquals(Optional.empty(), match("/{p...}", null));
    }

    @Test
    void variablesAreListedInOrder() {
        assertEquals(List.of("tenant", "id", "rest"), PathTemplate.parse("/t/{tenant}/{id}/{rest...}").variables());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            files/{p}        | a path template must start with '/', was 'files/{p}'
            /a//b            | empty segment in path template '/a//b'
            /a/              | empty segment in path template '/a/'
            /a/{p...}/b      | greedy variable {p...} must be the last segment of '/a/{p...}/b'
            /a/{1x}          | bad variable name '1x' in path template '/a/{1x}'
            /a/{}            | bad variable name '' in path template '/a/{}'
            /a/{id}/{id}     | variable {id} appears twice in '/a/{id}/{id}'
            /a/x{id}         | a variable must be a whole segment, like /{id}/, in '/a/x{id}'
            /a/%zz           | segment '%zz' of path template '/a/%zz' can never match
            """)
    void parseRejectsMalformedTemplatesWithAPreciseMessage(String template, String message) {
        var e = assertThrows(IllegalArgumentException.class, () -> PathTemplate.parse(template));
        assertTrue(e.getMessage().startsWith(message), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            /x/{p...}     | /x/y           | true
            /x/{p...}     | /x/y/z/{q}     | true
            /x/{p...}     | /x             | false
            /{p...}       | /              | false
            /x/{id}       | /x/y           | true
            /x/{id}       | /x/y/z         | false
            /x/{a}/b      | /x/{c}/c       | false
            /x/{a}/b      | /x/{c}/b       | true
            /a            | /b             | false
            /a            | /a             | true
            /             | /              | true
            /a%20b        | /a b           | true
            /x/{p...}     | /y/{q...}      | false
            """)
    void overlapsIsTrueExactlyWhenSomePathMatchesBoth(String a, String b, boolean expected) {
        PathTemplate first = PathTemplate.parse(a);
        PathTemplate second = PathTemplate.parse(b);
        assertEquals(expected, first.overlaps(second), a + " vs " + b);
        assertEquals(expected, second.overlaps(first), b + " vs " + a);
    }

    @Test
    void templatesWithTheSameTextAreEqual() {
        assertEquals(PathTemplate.parse("/a/{b}"), PathTemplate.parse("/a/{b}"));
        assertEquals(PathTemplate.parse("/a/{b}").hashCode(), PathTemplate.parse("/a/{b}").hashCode());
        assertFalse(PathTemplate.parse("/a/{b}").equals(PathTemplate.parse("/a/{c}")));
        assertEquals("/a/{b...}", PathTemplate.parse("/a/{b...}").toString());
    }

    @Test
    void theLiteralBeginningIsTheSegmentsBeforeTheFirstVariable() {
        assertEquals(0, PathTemplate.parse("/").literalPrefix());
        assertEquals(0, PathTemplate.parse("/{path...}").literalPrefix());
        assertEquals(1, PathTemplate.parse("/restic/{path...}").literalPrefix());
        assertEquals(2, PathTemplate.parse("/x/y").literalPrefix());
        assertEquals(1, PathTemplate.parse("/x/{id}/y").literalPrefix());
        assertEquals("/restic", PathTemplate.parse("/restic/{path...}").literalPrefixText());
        assertEquals("/", PathTemplate.parse("/{a}/b").literalPrefixText());
    }
}
