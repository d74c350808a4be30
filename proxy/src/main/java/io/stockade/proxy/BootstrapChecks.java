package io.stockade.proxy;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import io.stockade.policy.ServerConfig;

import org.jspecify.annotations.Nullable;

/**
 * What the JVM must be for the proxy to start, decided before anything opens. Two kinds, as Elasticsearch splits its
 * bootstrap checks:
 * <ul>
 * <li>a <em>correctness</em> check, enforced everywhere: file names must be UTF-8 ({@code sun.jnu.encoding}), or the
 * file backend cannot name {@code é} and answers its first request for it with an error;</li>
 * <li>a <em>production</em> check, enforced when the proxy listens beyond loopback (its data or management listener
 * on any address that is not a loopback one, {@code 0.0.0.0} included), and a warning on a developer's machine that
 * listens on loopback only: an {@code OutOfMemoryError} must end the process
 * ({@code -XX:+ExitOnOutOfMemoryError}), or a JVM whose heap broke goes on answering every request with an error
 * while its liveness stays green. {@code -Dstockade.enforce-bootstrap-checks=true} enforces it on loopback too (a
 * proxy behind a sidecar in the same pod listens on loopback in production).</li>
 * </ul>
 * The decision and its reasons: docs/operations.md, "An OutOfMemoryError ends the process".
 */
final class BootstrapChecks {
    /** The system property that enforces the production checks whatever the listeners' addresses. */
    static final String ENFORCE_PROPERTY = "stockade.enforce-bootstrap-checks";

    /**
     * What the checks came to.
     *
     * @param refusal  why the proxy must not start (exit 1), or null
     * @param warnings what a proxy on loopback only may start with, said on standard error
     */
    record Outcome(@Nullable String refusal, List<String> warnings) {
        Outcome {
            warnings = List.copyOf(warnings);
        }
    }

    private BootstrapChecks() {
    }

    /**
     * Runs the checks.
     *
     * @param server             the listeners (after {@code --port} and {@code --management-port})
     * @param fileNameEncoding   the JVM's {@code sun.jnu.encoding}
     * @param exitsOnOutOfMemory whether an {@code OutOfMemoryError} ends the JVM
     * @param enforce            {@value #ENFORCE_PROPERTY}: enforce the production checks on loopback too
     */
    static Outcome run(ServerConfig server, String fileNameEncoding, boolean exitsOnOutOfMemory, boolean enforce) {
        if (fileNameEncoding == null || !fileNameEncoding.replace("-", "").equalsIgnoreCase("UTF8")) {
            return new Outcome("the JVM encodes file names as " + fileNameEncoding + ", not UTF-8 (the process's"
                    + " locale is not a UTF-8 one); start it with LC_ALL=C.UTF-8 (bin/stockade, the image and deploy/"
                    + " set it)", List.of());
        }
        if (exitsOnOutOfMemory) {
            return new Outcome(null, List.of());
        }
        List<String> beyond = beyondLoopback(server);
        String problem = "the JVM was started without -XX:+ExitOnOutOfMemoryError: a proxy that runs on after an"
                + " OutOfMemoryError answers every request with an error while its liveness stays green; add it"
                + " (bin/stockade, the image and deploy/ set it)";
        if (!beyond.isEmpty()) {
            return new Outcome(problem + ". Enforced because the proxy listens beyond loopback ("
                    + String.join(", ", beyond) + ")", List.of());
        }
        if (enforce) {
            return new Outcome(problem + ". Enforced by -D" + ENFORCE_PROPERTY + "=true", List.of());
        }
        return new Outcome(null, List.of("warning: " + problem + ". Allowed because the proxy listens on loopback"
                + " only; listening beyond it (server.host 0.0.0.0, an interface's address), it refuses to start"
                + " without"));
    }

    /** The listeners that accept connections from other machines, as {@code setting host}; empty if none. */
    static List<String> beyondLoopback(ServerConfig server) {
        Set<String> hosts = new LinkedHashSet<>();
        List<String> beyond = new ArrayList<>();
        if (hosts.add(server.host()) && !loopback(server.host())) {
            beyond.add("server.host " + server.host());
        }
        ServerConfig.Management management = server.management();
        if (management != null && hosts.add(management.host()) && !loopback(management.host())) {
            beyond.add("server.management.host " + management.host());
        }
        return beyond;
    }

    /**
     * Whether every address a host names is a loopback one ({@code 127.0.0.0/8}, {@code ::1}, a name resolving
     * only to those). A wildcard ({@code 0.0.0.0}, {@code ::}) and a name that cannot be resolved are not.
     */
    static boolean loopback(String host) {
        try {
            InetAddress[] addresses = InetAddress.getAllByName(host);
            for (InetAddress address : addresses) {
                if (!address.isLoopbackAddress()) {
                    return false;
                }
            }
            return addresses.length > 0;
        } catch (UnknownHostException e) {
            return false;
        }
    }
}
