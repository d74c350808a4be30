package io.stockade.proxy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import io.stockade.testing.Http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The proxy a lock-service verifier test writes through: one policy, {@code PUT /jobs/{id}} into files under
 * {@code root/jobs} (scope {@code job-{id}}), its tokens checked by the {@code fence.verify} block the test gives;
 * and the checks every refusal gets: the answer (status, problem type, reason, no secret of the proxy's, no
 * holder's token), nothing stored, the fence where it was.
 */
public final class VerifiedJobs implements AutoCloseable {
    private final Path dir;
    private final Path root;
    private final String secret;
    private ProxyFixture proxy;

    /**
     * @param dir    the test's temporary directory (journal and files)
     * @param secret a credential of the proxy's that no answer may contain
     */
    public VerifiedJobs(Path dir, String secret) {
        this.dir = dir;
        this.root = dir.resolve("root");
        this.secret = secret;
    }

    /**
     * (Re)starts the proxy with {@code verify} (YAML, the keys under {@code fence.verify}) and {@code env} for its
     * {@code ${...}} references; the journal and the files stay.
     */
    public VerifiedJobs start(String verify, Map<String, String> env) throws Exception {
        close();
        Map<String, String> vars = new HashMap<>(env);
        vars.put("ROOT", root.toString());
        proxy = ProxyFixture.start(dir.resolve("journal"), """
                store:
                  type: memory
                  journal: ${JOURNAL}
                policies:
                  - name: jobs
                    match:
                      path: /jobs/{id}
                    scope: job-{id}
                    fence:
                      verify:
                %s
                    backend:
                      type: file
                      root: ${ROOT}
                """.formatted(verify.stripTrailing().indent(8).stripTrailing()), vars);
        return this;
    }

    public ProxyFixture proxy() {
        return proxy;
    }

    public Http.Response put(String id, String body, long token) throws Exception {
        return Http.put(proxy.uri("/jobs/" + id), body, Map.of("Fencing-Token", Long.toString(token)));
    }

    /** What the file of job {@code id} holds, read from the directory. */
    public Optional<String> stored(String id) throws Exception {
        Path file = root.resolve("jobs").resolve(id);
        return Files.exists(file) ? Optional.of(Files.readString(file)) : Optional.empty();
    }

    /** The highest token the proxy's store holds for job {@code id}. */
    public Optional<Long> fence(String id) throws Exception {
        return proxy.server().store().get("job-" + id).map(s -> s.token());
    }

    /**
     * A 403 for a token the verifier did not confirm, which did not write and did not move the fence.
     *
     * @param reason      what the answer must say
     * @param hidden      text the answer must not contain (the holder's token, when the client sent another), or
     *                    null
     * @param before      what the file held before
     * @param fenceBefore the fence before
     */
    public void assertRefused(Http.Response r, String id, String reason, String hidden, Optional<String> before,
                       Optional<Long> fenceBefore) throws Exception {
        assertEquals(403, r.status(), r.body());
        assertTrue(r.body().contains("urn:stockade:problem:unverified-token"), r.body());
        assertTrue(r.body().contains(reason), r.body());
        if (hidden != null) {
            assertFalse(r.body().contains(hidden), "the holder's token must not reach the client: " + r.body());
        }
        assertFalse(r.body().contains(secret), r.body());
        assertEquals(before, stored(id), "nothing written");
        assertEquals(fenceBefore, fence(id), "a refused token must not move the fence");
    }

    /** A 503 with {@code Retry-After} (the service could not answer), which did not write or move the fence. */
    public void assertUnavailable(Http.Response r, String id, Optional<String> before, Optional<Long> fenceBefore)
            throws Exception {
        assertEquals(503, r.status(), r.body());
        assertTrue(r.header("Retry-After").isPresent(), r.headers().toString());
        assertFalse(r.body().contains(secret), r.body());
        assertEquals(before, stored(id), "nothing written");
        assertEquals(fenceBefore, fence(id), "the fence must not move");
    }

    /** A 503 for a job that had no file and no fence before. */
    public void assertUnavailable(Http.Response r, String id) throws Exception {
        assertUnavailable(r, id, Optional.empty(), Optional.empty());
    }

    @Override
    public void close() {
        if (proxy != null) {
            proxy.close();
            proxy = null;
        }
    }
}
