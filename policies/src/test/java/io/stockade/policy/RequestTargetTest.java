package io.stockade.policy;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RequestTargetTest {

    private static RequestTarget accepted(String rawPath, String query) {
        return assertInstanceOf(RequestTarget.Accepted.class, RequestTarget.parse(rawPath, query, false),
                rawPath).target();
    }

    private static String refused(String rawPath, String query, boolean fragment) {
        return assertInstanceOf(RequestTarget.Refused.class, RequestTarget.parse(rawPath, query, fragment),
                rawPath + "?" + query).reason();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            /docs/a               | docs»a          | /docs/a
            /a%3Ab                | a:b             | /a:b
            /a:b                  | a:b             | /a:b
            /a+b                  | a+b             | /a%2Bb
            /a%2Bb                | a+b             | /a%2Bb
            /a%20b                | a b             | /a%20b
            /%61                  | a               | /a
            /caf%C3%A9            | café            | /caf%C3%A9
            /x%3By/z              | x;y»z           | /x%3By/z
            /%7E~                 | ~~              | /~~
            /!$&'()*,=@           | !$&'()*,=@      | /!$&'()*,=@
            /a%252e%252e          | a%2e%2e         | /a%252e%252e
            """)
    void everySpellingOfAResourceHasOneCanonicalPath(String raw, String segments, String canonical) {
        RequestTarget target = accepted(raw, null);
        assertEquals(List.of(segments.split("»")), target.segments());
        assertEquals(canonical, target.path());
        assertEquals(raw, target.rawPath());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            /docs/zz/a              | x=/../../t6/victim   | /store/docs/zz/a?x=/../../t6/victim
            /objects/b/zz           | /../k20              | /store/objects/b/zz?/../k20
            /objects/b/new          | /../../../../escaped | /store/objects/b/new?/../../../../escaped
            /a                      | ''                   | /store/a?
            """)
    void theQueryIsForwardedOpaqueAndNeverMovesThePath(String raw, String query, String upstream) {
        RequestTarget target = accepted(raw, query);
        assertEquals(upstream, target.upstreamTarget("/store"));
        assertEquals(raw, target.path());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            /docs/t10;z/a     | path parameters are refused
            /docs/t10%3Bz/a;  | path parameters are refused
            /a/./b            | is '.'
            /a/%2e/b          | is '.' (spelled '%2e')
            /a/../b           | is '..'
            /a/%2E%2e/b       | is '..'
            /a//b             | is empty
            /a%2Fb            | encoded slash
            /a%2fb            | encoded slash
            /a%5Cb            | encoded backslash
            /a\\b             | has '\\'
            /a%00b            | control character
            /a%0Ab            | control character
            /a%C2%85b         | control character
            /a%zz             | broken percent-escape
            /a%4              | broken percent-escape
            /a%               | broken percent-escape
            /a%FFb            | not valid UTF-8
            /a%C3             | not valid UTF-8
            /a%ED%A0%80       | not valid UTF-8
            /a b              | has a space
            /a"b              | has '"'
            /a<b              | has '<'
            /a{b}             | has '{'
            /aéb              | non-ASCII
            http://evil/docs  | origin form
            *                 | asterisk-form
            docs/a            | origin form
            ''                | origin form
            """)
    void ambiguousTargetsAreRefusedWithTheReason(String raw, String reason) {
        String why = refused(raw, null, false);
        assertTrue(why.contains(reason), why);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/a|b", "/a^b", "/a`b", "/a[b]"})
    void charactersOutsideRfc3986MustBeEncoded(String raw) {
        assertTrue(refused(raw, null, false).contains("percent-encode it"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            /a/            | a       | /a/
            /f/a%20b/      | f»a b   | /f/a%20b/
            /f/x%3A/       | f»x:    | /f/x:/
            """)
    void aTrailingSlashIsKeptAsAFlagForTheBackendsThatTakeIt(String raw, String segments, String canonical) {
        RequestTarget target = accepted(raw, null);
        assertTrue(target.trailingSlash());
        assertEquals(List.of(segments.split("»")), target.segments());
        assertEquals(canonical, target.path());
        assertEquals(canonical + "?q", target.upstreamTarget("") + "?q");
    }

    @ParameterizedTest
    @ValueSource(strings = {"a b", "a#b", "a\u0001", "caf\u00e9", "a\u007f"})
    void aQueryThatCannotTravelInARequestLineIsRefused(String query) {
        assertTrue(refused("/a", query, false).startsWith("the query has"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"/a", "/a/b"})
    void aFragmentIsRefused(String raw) {
        assertTrue(refused(raw, null, true).contains("fragment"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            /              | /
            /a             | /a
            """)
    void theRootAndSimplePathsAreTheirOwnCanonicalForm(String raw, String canonical) {
        RequestTarget target = accepted(raw, null);
        assertEquals(canonical, target.path());
        assertNull(target.query());
    }

    // ---- properties ----------------------------------------------------------------------------------------

    /** Segments of text as a client may mean them: any Unicode but what the grammar cannot carry. */
    @Provide
    Arbitrary<List<String>> segmentLists() {
        Arbitrary<String> segment = Arbitraries.oneOf(
                        Arbitraries.strings().withChars("abcXYZ019-._~!$&'()*+,;=:@%/\\ ?#\"<>|{}^`[]").ofMinLength(1)
                                .ofMaxLength(6),
                        Arbitraries.strings().all().ofMinLength(1).ofMaxLength(4))
                .filter(s -> !s.equals(".") && !s.equals("..") && s.indexOf('/') < 0 && s.indexOf('\\') < 0
                        && s.chars().noneMatch(c -> c < 0x20 || c == 0x7f || c >= 0x80 && c < 0xa0)
                        && !hasLoneSurrogate(s));
        return segment.list().ofMinSize(1).ofMaxSize(5);
    }

    private static boolean hasLoneSurrogate(String s) {
        return !s.equals(new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8));
    }

    @Property(tries = 2000)
    void theCanonicalPathDecodesToExactlyTheSegments(@ForAll("segmentLists") List<String> segments) {
        StringBuilder raw = new StringBuilder();
        for (String s : segments) {
            raw.append('/').append(RequestTarget.encodeSegment(s));
        }
        RequestTarget target = accepted(raw.toString(), null);
        assertEquals(segments, target.segments());
        assertEquals(raw.toString(), target.path(), "the canonical encoding is a fixed point");
        // What any standard decoder (here java.net's, '+' kept) makes of the canonical path: the same segments.
        List<String> decoded = new ArrayList<>();
        for (String part : target.path().substring(1).split("/", -1)) {
            decoded.add(URLDecoder.decode(part.replace("+", "%2B"), StandardCharsets.UTF_8));
        }
        assertEquals(segments, decoded);
    }

    @Property(tries = 3000)
    void anyAcceptedSpellingHasTheSameSegmentsAsItsCanonicalPath(@ForAll("rawPaths") String raw) {
        if (RequestTarget.parse(raw) instanceof RequestTarget.Accepted accepted) {
            RequestTarget again = accepted(accepted.target().path(), null);
            assertEquals(accepted.target().segments(), again.segments(), raw);
            assertEquals(accepted.target().path(), again.path(), raw);
        }
    }

    @Provide
    Arbitrary<String> rawPaths() {
        Arbitrary<String> piece = Arbitraries.oneOf(
                Arbitraries.strings().withChars("aZ09-._~!$&'()*+,;=:@").ofMinLength(1).ofMaxLength(3),
                Arbitraries.of("%2e", "%2E", "%2f", "%2F", "%5c", "%3b", "%3B", "%25", "%2525", "%20", "+", "%2B",
                        "%C3%A9", "%FF", "%C3", "%00", "..", ".", ";", "%", "%4", "%zz", "%61", "%7E"));
        return piece.list().ofMinSize(1).ofMaxSize(4).map(l -> String.join("", l))
                .list().ofMinSize(1).ofMaxSize(4).map(l -> "/" + String.join("/", l));
    }
}
