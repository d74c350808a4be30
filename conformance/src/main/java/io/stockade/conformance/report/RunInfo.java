package io.stockade.conformance.report;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.conformance.writer.RawHttp;

import org.jspecify.annotations.Nullable;

/**
 * What a report needs besides the verdicts, so a team can file it: when, against what (the target, the proxy, the
 * storage read back, the control, the request written), with which build of Stockade and of the suite, the lease
 * provider and its TTL, and how long.
 *
 * @param started       when the suite started (UTC)
 * @param seconds       the suite's wall time
 * @param target        the target's name
 * @param proxy         the proxy's address (a launched proxy: the address it listened on)
 * @param stockade      the proxy's {@code stockade_build_info} version, or {@code unknown (why)}
 * @param commit        the proxy's {@code stockade_build_info} commit, or {@code unknown}
 * @param suiteVersion  this suite's version ({@code unknown} outside a build)
 * @param suiteCommit   the commit this suite was built from ({@code unknown} outside a git checkout)
 * @param write         the request each write sends, e.g. {@code PUT /jobs/{id} application/json {"value":...}}
 * @param storage       how the storage is read back (the reader's description)
 * @param control       how the control writes the storage, or {@code none}
 * @param leaseProvider the lease provider (credentials hidden)
 * @param ttl           the lease TTL
 * @param writers       writer processes per run
 * @param runDuration   each run's fault budget ({@code --duration})
 */
public record RunInfo(Instant started, double seconds, String target, String proxy, String stockade, String commit,
                      String suiteVersion, String suiteCommit, String write, String storage, String control,
                      String leaseProvider, Duration ttl, int writers, Duration runDuration) {

    private static final Pattern BUILD_INFO = Pattern.compile("(?m)^stockade_build_info\\{([^}]*)}");

    /** {@code [version, commit]} this suite was built with ({@code unknown} when it was not built by Maven). */
    public static String[] suiteBuild() {
        try (InputStream in = RunInfo.class.getResourceAsStream("/io/stockade/conformance/build-info")) {
            if (in == null) {
                return new String[] {"unknown", "unknown"};
            }
            String[] lines = new String(in.readAllBytes(), StandardCharsets.UTF_8).strip().split("\n", -1);
            return new String[] {lines[0].strip(), lines.length > 1 ? lines[1].strip() : "unknown"};
        } catch (IOException e) {
            return new String[] {"unknown", "unknown"};
        }
    }

    /**
     * {@code [version, commit]} of the proxy, from {@code stockade_build_info} at {@code metrics} (its Prometheus
     * text); {@code unknown (why)} when it cannot be read.
     */
    public static String[] proxyBuild(URI metrics) {
        try {
            RawHttp.Response r = RawHttp.send(metrics, "GET", null, null, Duration.ofSeconds(5));
            if (r.status() != 200) {
                return unknown("GET " + metrics + " answered " + r.status());
            }
            Matcher m = BUILD_INFO.matcher(r.body());
            if (!m.find()) {
                return unknown("no stockade_build_info at " + metrics);
            }
            return new String[] {label(m.group(1), "version"), label(m.group(1), "commit")};
        } catch (IOException | RuntimeException e) {
            return unknown("GET " + metrics + ": " + e.getMessage());
        }
    }

    private static String[] unknown(String why) {
        return new String[] {"unknown (" + why + ")", "unknown"};
    }

    private static String label(String labels, String name) {
        Matcher m = Pattern.compile("(?:^|,)" + name + "=\"([^\"]*)\"").matcher(labels);
        return m.find() ? m.group(1) : "unknown";
    }

    /** A lease provider spec for a report: a password in a URL ({@code redis://:pw@host}) is hidden. */
    public static @Nullable String hideSecrets(@Nullable String spec) {
        return spec == null ? null : spec.replaceAll("(?<=://)[^@/]*@", "…@");
    }
}
