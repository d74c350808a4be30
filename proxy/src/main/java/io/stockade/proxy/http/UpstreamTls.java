package io.stockade.proxy.http;

import io.helidon.common.tls.Tls;
import io.helidon.webclient.api.DefaultDnsResolver;
import io.helidon.webclient.api.DnsAddressLookup;
import io.helidon.webclient.api.Proxy;
import io.helidon.webclient.api.WebClientConfig;
import io.helidon.webclient.spi.DnsResolver;
import io.stockade.policy.ClientTls;

import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.Set;

/**
 * TLS for the proxy's HTTP clients (the http backend, the s3 backend's upstream): the policy's {@code tls}
 * files, server name verification that checks the name written in the URL, and how a TLS refusal is told apart
 * from a request that may have reached the upstream.
 */
public final class UpstreamTls {
    /**
     * Alerts a TLS server sends only while it checks a handshake (RFC 8446 section 6.2): the connection never
     * carried a request the server read. With TLS 1.3 a server that refuses the client's certificate says so after
     * the client has finished its part of the handshake, so the JDK reports them as a plain {@link SSLException}.
     */
    private static final Set<String> HANDSHAKE_ALERTS = Set.of("handshake_failure", "bad_certificate",
            "unsupported_certificate", "certificate_revoked", "certificate_expired", "certificate_unknown",
            "unknown_ca", "access_denied", "certificate_required", "protocol_version", "insufficient_security");

    private UpstreamTls() {
    }

    /**
     * Sets the client up for {@code url}: the policy's trust and client certificate when {@code tls} is given, and
     * always a resolver that keeps an IP address written in the URL as the name to verify, and no proxy.
     * <p>
     * No proxy: left unset, Helidon's web client takes {@code Proxy.create()} (the JVM's proxy settings,
     * {@code -Dhttp.proxyHost} and the like), and with any proxy type but none it adds {@code Proxy-Connection:
     * keep-alive} to every request (Helidon 4.5 {@code Http1ClientRequestImpl.additionalHeaders}): every upstream
     * request carried a hop-by-hop header the client never sent, and a JVM proxy setting meant for something else
     * would have sent the fenced writes through that proxy. The upstream is the URL in the policy, reached
     * directly.
     *
     * @param what who the files are for, at the start of every message (e.g. {@code "backend https://s:8443 tls"})
     * @throws IOException naming the file when a file of {@code tls} cannot be read or does not parse
     */
    public static void configure(WebClientConfig.Builder client, URI url, ClientTls tls, String what)
            throws IOException {
        if (tls != null) {
            // Helidon's client verifies the server's name (endpoint identification HTTPS) by default; the context
            // only replaces whom it trusts and adds the proxy's certificate.
            client.tls(Tls.builder().sslContext(ClientTlsFiles.read(tls, what).sslContext()).build());
        }
        client.dnsResolver(new LiteralKeepingResolver());
        client.proxy(Proxy.noProxy());
    }

    /** Whether the failure is a TLS refusal during the handshake: no byte of the request was read upstream. */
    public static boolean refusedInHandshake(Throwable e) {
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

    /**
     * Helidon's resolver, except that an address written as an IP literal keeps that literal as its host name.
     * Helidon hands the TLS socket {@code InetSocketAddress.getHostName()}; for a bare address that is a reverse
     * DNS lookup, so {@code https://127.0.0.1} would be verified as {@code localhost}, and {@code https://10.0.0.5}
     * as whatever name the PTR record (possibly someone else's) gives. With the literal, the JDK checks the
     * certificate's IP address entries, which is what the URL asked for.
     */
    static final class LiteralKeepingResolver implements DnsResolver {
        private final DnsResolver delegate = DefaultDnsResolver.create();

        @Override
        public InetAddress resolveAddress(String host, DnsAddressLookup lookup) {
            InetAddress address = delegate.resolveAddress(host, lookup);
            String literal = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
            if (literal.matches("[0-9.]+") || literal.contains(":")) {
                try {
                    return InetAddress.getByAddress(literal, address.getAddress());
                } catch (UnknownHostException e) {
                    return address; // cannot happen: the address came from a successful lookup
                }
            }
            return address;
        }
    }
}
