package io.stockade.conformance;

import java.util.Arrays;
import java.util.Locale;

/** The faults the suite injects, one per scenario. */
public enum Scenario {
    /** SIGSTOP the lease holder between its lease check and its write, past its TTL; SIGCONT after a handoff. */
    PAUSE("pause", "SIGSTOP the holder past its lease, SIGCONT after the next holder wrote"),
    /** Hold the holder's request in the fault proxy (latency) so it arrives after the next holder's writes. */
    DELAY("delay", "latency on the holder's connection: its write arrives after the next holder's"),
    /** As DELAY, but the writer times out first (unknown outcome); the write still arrives, late. */
    TIMEOUT("timeout", "the holder times out (unknown outcome); its write arrives late anyway"),
    /** The answer to a committed write is dropped; the writer's retry (same token, same value) arrives late. */
    LOST_RESPONSE("lost-response", "the answer to a committed write is lost; the retry arrives after a handoff"),
    /** PAUSE, plus kill -9 of the proxy and a restart before the zombie resumes (needs proxy.launch). */
    PROXY_RESTART("proxy-restart", "kill -9 the proxy after a handoff, restart it, then wake the zombie"),
    /**
     * PAUSE, plus SIGSTOP of the proxy's fence store after the handoff: the zombie wakes and writes while the store
     * is down (the proxy must refuse, 503, never forward), then kill -9 of the stopped store and a restart on the same
     * data. Needs {@code store.launch} and {@code proxy.launch}.
     */
    STORE_STOP("store-stop", "SIGSTOP the fence store after a handoff; the zombie writes during the outage");

    private final String id;
    private final String description;

    Scenario(String id, String description) {
        this.id = id;
        this.description = description;
    }

    /** The name used on the command line and in reports. */
    public String id() {
        return id;
    }

    public String description() {
        return description;
    }

    /**
     * Whether this scenario faults only the holder's connection to the proxy (the process runs on). With a real
     * lease (the client SDK's providers) the holder's watchdog, in the same process and on a connection the fault
     * does not touch, keeps renewing, so no other writer can take the lease and nothing is proved: such a scenario
     * runs with the suite's counter lease instead, and says so ({@code Conformance}).
     */
    public boolean faultsOnlyTheConnection() {
        return this == DELAY || this == TIMEOUT || this == LOST_RESPONSE;
    }

    /** The scenario with this {@link #id()} (or enum name, any case). */
    public static Scenario parse(String s) {
        String k = s.trim().toLowerCase(Locale.ROOT).replace('_', '-');
        return Arrays.stream(values()).filter(v -> v.id.equals(k)).findFirst().orElseThrow(() ->
                new IllegalArgumentException("unknown scenario '" + s + "'; valid: "
                        + Arrays.stream(values()).map(Scenario::id).toList()));
    }
}
