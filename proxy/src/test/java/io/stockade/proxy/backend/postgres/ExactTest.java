package io.stockade.proxy.backend.postgres;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.Duration;
import java.util.Optional;

import io.stockade.policy.BackendConfig.Digits;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What PostgreSQL holds exactly, decided without writing a number out (PostgresExactValuesIT runs it for real). */
class ExactTest {
    private static final Optional<Digits> NONE = Optional.empty();

    @Test
    void numericsLimitsAreCountedOnTheDigitsNotTheWrittenNumber() {
        assertTimeoutPreemptively(Duration.ofSeconds(2), () -> {
            assertNull(Exact.number(new BigDecimal("1e131071"), NONE));
            assertNotNull(Exact.number(new BigDecimal("1e131072"), NONE));
            assertNotNull(Exact.number(new BigDecimal("5e2147483647"), NONE));
            assertNotNull(Exact.number(new BigDecimal(BigInteger.valueOf(5), Integer.MIN_VALUE), NONE));
            assertNotNull(Exact.number(new BigDecimal("-1e1000000000"), NONE));
            assertNotNull(Exact.number(new BigDecimal("1e-1000000000"), NONE));
            assertNull(Exact.number(new BigDecimal("1e-16383"), NONE));
            assertNotNull(Exact.number(new BigDecimal("1e-16384"), NONE));
            assertNull(Exact.number(new BigDecimal("0e-1000000000"), NONE));
            assertNull(Exact.number(new BigDecimal("1.0e-16383"), NONE), "a trailing zero past the scale is no digit");
        });
    }

    @Test
    void precisionAndScaleRefuseWhatTheColumnWouldRound() {
        Optional<Digits> money = Optional.of(new Digits(14, 2));
        assertNull(Exact.number(new BigDecimal("999999999999.99"), money));
        assertNull(Exact.number(new BigDecimal("1.500"), money));
        assertTrue(Exact.number(new BigDecimal("1.005"), money).contains("3 digits after the point"));
        assertTrue(Exact.number(new BigDecimal("1e12"), money).contains("13 digits before the point"));
        assertNotNull(Exact.number(new BigDecimal("1e-1000000000"), money));
    }

    @Test
    void aBoundNumberIsPlainAndAsShortAsItsValueAllows() {
        assertEquals("100", Exact.bindable(new BigDecimal("1e2")).toPlainString());
        assertEquals("0", Exact.bindable(new BigDecimal("0e-1000000000")).toPlainString());
        assertEquals("0", Exact.bindable(new BigDecimal("0e2147483647")).toPlainString());
        assertEquals("1.500", Exact.bindable(new BigDecimal("1.500")).toPlainString());
    }

    @Test
    void numberTextIsAsciiDecimalOnly() {
        for (String bad : new String[] {"NaN", "Infinity", "-Infinity", "\u0661\u0662", "\uff11", "0x10", " 1", "",
                "1".repeat(1001)}) {
            assertThrows(NumberFormatException.class, () -> Exact.parseNumber(bad), bad);
        }
        assertTrue(assertThrows(NumberFormatException.class, () -> Exact.parseNumber("5e2147483649")).getMessage()
                .contains("exponent"));
        assertEquals(0, new BigDecimal("0.5").compareTo(Exact.parseNumber(".5")));
        assertThrows(NumberFormatException.class, () -> Exact.parseInteger("\u0661"));
        assertThrows(NumberFormatException.class, () -> Exact.parseInteger("9223372036854775808"));
        assertEquals(-5, Exact.parseInteger("-5"));
    }

    @Test
    void textWithoutNulOrLoneSurrogates() {
        assertNull(Exact.text("a\ud83d\ude00b\ufffd"));
        assertTrue(Exact.text("a\ud800b").contains("lone surrogate U+D800"));
        assertTrue(Exact.text("a\ude00").contains("lone surrogate U+DE00"));
        assertTrue(Exact.text("\ude00\ud83d").contains("lone surrogate"));
        assertTrue(Exact.text("a\u0000").contains("U+0000"));
    }

    @Test
    void invalidUtf8IsNeverDecodedIntoReplacementCharacters() {
        assertNull(Exact.utf8(new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}));
        assertNull(Exact.utf8(new byte[] {(byte) 0xC0, (byte) 0x80}));
        assertNull(Exact.queryValue("%FF"));
        assertNull(Exact.queryValue("%"));
        assertNull(Exact.queryValue("%\u0661\u0662"));
        assertEquals("a b+\u00e9", Exact.queryValue("a+b%2B%C3%A9"));
    }
}
