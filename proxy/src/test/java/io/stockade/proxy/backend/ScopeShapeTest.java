package io.stockade.proxy.backend;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The scopes a policy's template can make, as the admin routing ({@code FenceRouting}) reads them. */
class ScopeShapeTest {

    @Test
    void aTemplateMakesItsLiteralsWithAnythingInItsVariables() {
        ScopeShape orders = ScopeShape.of("orders/{id}");
        assertTrue(orders.matches("orders/a"));
        assertTrue(orders.matches("orders/a/b"), "a variable may hold more than a segment: routed conservatively");
        assertFalse(orders.matches("order/a"));
        assertFalse(orders.matches("xorders/a"));
        ScopeShape nested = ScopeShape.of("t/{tenant}/items/{id}");
        assertTrue(nested.matches("t/acme/items/7"));
        assertFalse(nested.matches("t/acme/orders/7"));
        ScopeShape literal = ScopeShape.of("global");
        assertTrue(literal.matches("global"));
        assertFalse(literal.matches("global/x"));
        ScopeShape regexy = ScopeShape.of("a.b*/{id}");
        assertTrue(regexy.matches("a.b*/1"));
        assertFalse(regexy.matches("axbb/1"), "literals are literal");
    }

    @Test
    void aPrefixOverlapsATemplateWhenSomeScopeOfItStartsWithThePrefix() {
        ScopeShape orders = ScopeShape.of("orders/{id}");
        assertTrue(orders.overlaps(""));
        assertTrue(orders.overlaps("ord"));
        assertTrue(orders.overlaps("orders/"));
        assertTrue(orders.overlaps("orders/a/b"));
        assertFalse(orders.overlaps("docs/"));
        ScopeShape literal = ScopeShape.of("global");
        assertTrue(literal.overlaps("glo"));
        assertFalse(literal.overlaps("global/"));
    }

    @Test
    void anS3PolicyMakesItsScopeThenBucketAndKey() {
        ScopeShape s3 = ScopeShape.below("s3", "/<bucket>/<key>");
        assertTrue(s3.matches("s3"));
        assertTrue(s3.matches("s3/bucket/key/with/slashes"));
        assertFalse(s3.matches("s3x/bucket"));
        assertTrue(s3.overlaps("s3/bucket/"));
        assertTrue(s3.overlaps(""));
        assertFalse(s3.overlaps("docs/"));
        assertEquals("s3/<bucket>/<key>", s3.described());
        assertEquals("s3/", s3.sharePrefix(), "the memory store's share: every scope below the policy's own");
    }

    @Test
    void aTemplatesShareIsItsLiteralPrefix() {
        assertEquals("t/", ScopeShape.of("t/{tenant}/items/{id}").sharePrefix());
        assertEquals("", ScopeShape.of("{id}").sharePrefix());
        assertEquals("global", ScopeShape.of("global").sharePrefix());
        assertEquals("t/{tenant}/items/{id}", ScopeShape.of("t/{tenant}/items/{id}").described());
    }
}
