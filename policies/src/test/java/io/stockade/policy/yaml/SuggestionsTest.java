package io.stockade.policy.yaml;

import java.util.List;
import java.util.Optional;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;

class SuggestionsTest {
    private static final List<String> KEYS = List.of("path", "methods", "host", "port", "compact-after");

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            methds       | methods
            mehtods      | methods
            Methods      | methods
            hots         | host
            prot         | port
            compact_after| compact-after
            compactAfter | compact-after
            """)
    void suggestsAValidWordAFewEditsAway(String word, String suggestion) {
        assertEquals(Optional.of(suggestion), Suggestions.closest(word, KEYS));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            listen
            hose-pipe
            pt
            """)
    void suggestsNothingForAFarWord(String word) {
        assertEquals(Optional.empty(), Suggestions.closest(word, KEYS));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            kitten  | sitting | 3
            ab      | ba      | 1
            ''      | abc     | 3
            same    | same    | 0
            """)
    void distanceCountsEditsAndAdjacentSwaps(String a, String b, int expected) {
        assertEquals(expected, Suggestions.distance(a, b));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            methds | unknown key 'methds'; did you mean 'methods'? valid: path, methods, host, port, compact-after
            listen | unknown key 'listen'; valid: path, methods, host, port, compact-after
            """)
    void messageNamesTheValidWordsAndTheSuggestion(String word, String message) {
        assertEquals(message, Suggestions.unknown("key", word, KEYS));
    }
}
