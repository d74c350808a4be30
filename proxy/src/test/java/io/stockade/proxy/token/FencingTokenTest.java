package io.stockade.proxy.token;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FencingTokenTest {
    static final String H = "Fencing-Token";

    @Test
    void plainDecimalIsAToken() {
        assertEquals(new FencingToken.Present(0), FencingToken.parse(H, "0"));
        assertEquals(new FencingToken.Present(42), FencingToken.parse(H, "42"));
        assertEquals(new FencingToken.Present(Long.MAX_VALUE), FencingToken.parse(H, "9223372036854775807"));
    }

    @Test
    void noHeaderIsMissing() {
        assertInstanceOf(FencingToken.Missing.class, FencingToken.parse(H, List.of()));
    }

    @Test
    void twoHeadersAreMalformedEvenWhenEqual() {
        FencingToken.Parsed p = FencingToken.parse(H, List.of("5", "5"));
        assertTrue(((FencingToken.Malformed) p).reason().contains("2 Fencing-Token headers"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "-1", "+1", "1.0", "1e3", "0x1f", "5x", " 5", "5 ", "05", "00",
            "9223372036854775808", "99999999999999999999", "１", "٣"})
    void anythingElseIsMalformedWithAReason(String value) {
        FencingToken.Parsed p = FencingToken.parse(H, value);
        FencingToken.Malformed m = assertInstanceOf(FencingToken.Malformed.class, p, value);
        assertTrue(m.reason().startsWith(H), m.reason());
    }

    @Test
    void reasonsSayWhatIsWrong() {
        assertEquals("Fencing-Token must be ASCII digits only; found 'x' at position 2",
                ((FencingToken.Malformed) FencingToken.parse(H, "5x")).reason());
        assertTrue(((FencingToken.Malformed) FencingToken.parse(H, "9223372036854775808")).reason()
                .contains("above the largest token"));
        assertTrue(((FencingToken.Malformed) FencingToken.parse(H, "007")).reason().contains("leading zero"));
        assertTrue(((FencingToken.Malformed) FencingToken.parse(H, "\u0000")).reason().contains("U+0000"));
    }
}
