package io.stockade.proxy.testing;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The judge of the differential fuzzers: it compares what the storage itself holds, read back directly and named
 * the way the storage names it, with what the fence holds, before and after each request. It never parses a
 * request target itself, so it cannot share a parsing mistake with the proxy.
 * <ul>
 *     <li>An acknowledged write changed exactly one resource of the storage, to exactly what was sent (or removed
 *     it), and the fence scope that guards <em>that</em> resource now holds at least the write's token.</li>
 *     <li>No acknowledged write to a resource carries a token below the token of an earlier acknowledged write to
 *     the same resource, however either was spelled: no stale write landed.</li>
 *     <li>A refused request (any 4xx but a storage's 404) changed nothing in the storage and moved no fence.</li>
 *     <li>There is no 5xx: in these runs the storage and the store are always up.</li>
 * </ul>
 */
public final class DifferentialOracle {
    /** The storage, read back directly. */
    public interface Storage {
        /** Every resource stored now, named as the storage names it (decoded), with its content. */
        Map<String, String> snapshot() throws Exception;

        /** The fence scope that guards a resource of the storage (by the policy's scope template). */
        String scopeOf(String resource);
    }

    /** The fence: the highest token of every scope that has one. */
    public interface Fences {
        Map<String, Long> snapshot() throws Exception;
    }

    private final Storage storage;
    private final Fences fences;
    /** The token of the last acknowledged write to each resource. */
    private final Map<String, Long> lastAccepted = new HashMap<>();
    private int sequence;
    private int accepted;
    private int refused;
    private int staleRefused;

    public DifferentialOracle(Storage storage, Fences fences) {
        this.storage = storage;
        this.fences = fences;
    }

    /** What one request came to. */
    public record Result(int status, String answer) {
    }

    /** Sends a request through {@code send} and judges it. */
    public void judge(TargetGrammar.Attempt attempt, Sender send) throws Exception {
        String body = "t=" + attempt.token() + ";n=" + (++sequence);
        Map<String, String> before = storage.snapshot();
        Map<String, Long> fencesBefore = fences.snapshot();
        Result result = send.send(attempt, attempt.method().equals("PUT") ? body : "");
        Map<String, String> after = storage.snapshot();
        Map<String, Long> fencesAfter = fences.snapshot();
        Set<String> changed = changed(before, after);
        String what = attempt + " -> " + result.status() + " " + shorten(result.answer());
        int status = result.status();
        if (status >= 500) {
            fail("a 5xx with the storage and the store up: " + what);
        }
        if (status / 100 == 2) {
            accepted++;
            if (changed.isEmpty() && attempt.method().equals("DELETE")) {
                // A DELETE of nothing that the storage acknowledges (S3 does): at most the fence of one scope rose.
                Set<String> moved = changed(fencesBefore, fencesAfter);
                assertTrue(moved.size() <= 1, "a DELETE of nothing moved several fences " + moved + ": " + what);
                return;
            }
            assertEquals(1, changed.size(), "an acknowledged write changed " + changed + ": " + what);
            String resource = changed.iterator().next();
            if (attempt.method().equals("PUT")) {
                assertEquals(body, after.get(resource), "the storage holds another body at " + resource + ": "
                        + what);
            } else {
                assertTrue(!after.containsKey(resource), "an acknowledged DELETE left " + resource + ": " + what);
            }
            long token = Objects.requireNonNull(attempt.token(), "an acknowledged write without a token: " + what);
            Long last = lastAccepted.get(resource);
            if (last != null && token < last) {
                fail("STALE WRITE LANDED: " + resource + " was written with token " + last + " and then with "
                        + token + ": " + what);
            }
            lastAccepted.put(resource, token);
            String scope = storage.scopeOf(resource);
            Long fence = fencesAfter.get(scope);
            assertTrue(fence != null && fence >= token, "the write to " + resource + " was not fenced in its scope '"
                    + scope + "' (fence " + fence + ", fences now " + fencesAfter + "): " + what);
            for (String moved : changed(fencesBefore, fencesAfter)) {
                assertEquals(scope, moved, "the write to " + resource + " moved the fence of another scope: " + what);
            }
            return;
        }
        assertEquals(Set.of(), changed, "a refused request (" + status + ") changed the storage: " + what);
        Set<String> moved = changed(fencesBefore, fencesAfter);
        if (status == 404 && attempt.token() != null) {
            // The storage's own 404 (a DELETE of nothing): the token was admitted and may have raised one scope.
            assertTrue(moved.size() <= 1, "a 404 moved several fences " + moved + ": " + what);
            for (String scope : moved) {
                assertEquals(attempt.token(), fencesAfter.get(scope), what);
            }
        } else {
            assertEquals(Set.of(), moved, "a refused request (" + status + ") moved the fence: " + what);
        }
        refused++;
        if (status == 409 || status == 412) {
            staleRefused++;
        }
    }

    /** Sends one attempt with a body; returns the status and the answer's text. */
    @FunctionalInterface
    public interface Sender {
        Result send(TargetGrammar.Attempt attempt, String body) throws Exception;
    }

    private static <V> Set<String> changed(Map<String, V> before, Map<String, V> after) {
        Set<String> keys = new HashSet<>(before.keySet());
        keys.addAll(after.keySet());
        keys.removeIf(k -> Objects.equals(before.get(k), after.get(k)));
        return keys;
    }

    private static String shorten(String text) {
        return text == null ? "" : text.length() <= 300 ? text : text.substring(0, 300) + "...";
    }

    /** Counts for the log: acknowledged, refused, of which stale. */
    public String summary() {
        return accepted + " acknowledged, " + refused + " refused (" + staleRefused + " as stale), "
                + lastAccepted.size() + " resources written";
    }
}
