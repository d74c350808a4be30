package io.stockade.proxy.upstream;

import java.util.Set;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;

/**
 * Which TLS failures are refused handshakes: the upstream never read a byte of the request, so the request cannot
 * land later (502, no quarantine) rather than an unknown outcome (504).
 */
final class TlsRefusals {
    /**
     * Alerts a TLS server sends only while it checks a handshake (RFC 8446 section 6.2): the connection never
     * carried a request the server read. With TLS 1.3 a server that refuses the client's certificate says so after
     * the client has finished its part of the handshake, so the JDK reports them as a plain {@link SSLException}.
     */
    private static final Set<String> HANDSHAKE_ALERTS = Set.of("handshake_failure", "bad_certificate",
            "unsupported_certificate", "certificate_revoked", "certificate_expired", "certificate_unknown",
            "unknown_ca", "access_denied", "certificate_required", "protocol_version", "insufficient_security");

    private TlsRefusals() {
    }

    /** Whether the failure is a TLS refusal during the handshake: no byte of the request was read upstream. */
    static boolean refusedInHandshake(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SSLHandshakeException) {
                return true;
            }
            if (t instanceof SSLException && t.getMessage() != null
                    && t.getMessage().startsWith("Received fatal alert: ")
                    && HANDSHAKE_ALERTS.contains(t.getMessage().substring("Received fatal alert: ".length()).strip())) {
                return true;
            }
        }
        return false;
    }

}
