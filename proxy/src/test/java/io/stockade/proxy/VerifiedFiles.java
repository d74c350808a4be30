package io.stockade.proxy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

import io.stockade.testing.Http;

/**
 * The proxy a lock-service verifier test writes through when the locks are named after the files they guard: one
 * policy, {@code PUT /files/{path...}} into files under {@code dir/root/files} (scope {@code files/{path}}), its
 * tokens checked by the {@code fence.verify} block the test gives, on the memory store journaled under
 * {@code dir/journal}. The etcd, PostgreSQL, Redis and ZooKeeper verifier tests share it ({@link VerifiedJobs} is
 * the same for the Consul, DynamoDB and Kubernetes ones, whose lock names are job names).
 */
public final class VerifiedFiles {
    private VerifiedFiles() {
    }

    /** The policy file, with {@code verify} (YAML: the keys under {@code fence.verify}). */
    public static String policy(String verify) {
        return TestPolicies.memoryStore().policy("files", "/files/{path...}", "files/{path}")
                .fence("verify:\n" + verify.strip().indent(2)).file("${ROOT}").yaml();
    }

    /** Starts the proxy in {@code dir} with {@code verify} and {@code vars} for its {@code ${...}} references. */
    public static ProxyFixture start(Path dir, String verify, Map<String, String> vars) throws Exception {
        Map<String, String> env = new HashMap<>(vars);
        env.put("ROOT", dir.resolve("root").toString());
        return ProxyFixture.start(dir.resolve("journal"), policy(verify), env);
    }

    /** What the file {@code name} holds, read from the directory (not through the proxy). */
    public static Optional<String> stored(Path dir, String name) throws Exception {
        Path file = dir.resolve("root").resolve("files").resolve(name);
        return Files.exists(file) ? Optional.of(Files.readString(file)) : Optional.empty();
    }

    public static Http.Response put(ProxyFixture proxy, String name, String body, long token) throws Exception {
        return Http.put(proxy.uri("/files/" + name), body, Map.of("Fencing-Token", Long.toString(token)));
    }

    /** Whether {@code text} names {@code n} as a number of its own: a refusal must not give a holder's token away. */
    public static boolean mentions(String text, long n) {
        return Pattern.compile("(?<![0-9])" + n + "(?![0-9])").matcher(text).find();
    }
}
