package io.stockade.proxy.admin;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The scopes a policy's template can make, as {@link FenceRouting} reads it to route an admin call. */
class FenceRoutingShapeTest {

    @Test
    void aTemplateMakesItsLiteralsWithAnythingInItsVariables() {
        FenceRouting.Shape orders = FenceRouting.Shape.of("orders/{id}", false);
        assertTrue(orders.matches("orders/a"));
        assertTrue(orders.matches("orders/a/b"), "a variable may hold more than a segment: routed conservatively");
        assertFalse(orders.matches("order/a"));
        assertFalse(orders.matches("xorders/a"));
        FenceRouting.Shape nested = FenceRouting.Shape.of("t/{tenant}/items/{id}", false);
        assertTrue(nested.matches("t/acme/items/7"));
        assertFalse(nested.matches("t/acme/orders/7"));
        FenceRouting.Shape literal = FenceRouting.Shape.of("global", false);
        assertTrue(literal.matches("global"));
        assertFalse(literal.matches("global/x"));
        FenceRouting.Shape regexy = FenceRouting.Shape.of("a.b*/{id}", false);
        assertTrue(regexy.matches("a.b*/1"));
        assertFalse(regexy.matches("axbb/1"), "literals are literal");
    }

    @Test
    void aPrefixOverlapsATemplateWhenSomeScopeOfItStartsWithThePrefix() {
        FenceRouting.Shape orders = FenceRouting.Shape.of("orders/{id}", false);
        assertTrue(orders.overlaps(""));
        assertTrue(orders.overlaps("ord"));
        assertTrue(orders.overlaps("orders/"));
        assertTrue(orders.overlaps("orders/a/b"));
        assertFalse(orders.overlaps("docs/"));
        FenceRouting.Shape literal = FenceRouting.Shape.of("global", false);
        assertTrue(literal.overlaps("glo"));
        assertFalse(literal.overlaps("global/"));
    }

    @Test
    void anS3PolicyMakesItsScopeThenBucketAndKey() {
        FenceRouting.Shape s3 = FenceRouting.Shape.of("s3", true);
        assertTrue(s3.matches("s3"));
        assertTrue(s3.matches("s3/bucket/key/with/slashes"));
        assertFalse(s3.matches("s3x/bucket"));
        assertTrue(s3.overlaps("s3/bucket/"));
        assertTrue(s3.overlaps(""));
        assertFalse(s3.overlaps("docs/"));
    }
}
