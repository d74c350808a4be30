package io.stockade.proxy.listener;

import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.helidon.common.buffers.BufferData;
import io.helidon.common.buffers.DataReader;
import io.helidon.common.buffers.DataWriter;
import io.helidon.common.socket.HelidonSocket;
import io.helidon.common.socket.PeerInfo;
import io.helidon.http.RequestException;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.ConnectionContext;
import io.helidon.webserver.ListenerContext;
import io.helidon.webserver.ProxyProtocolData;
import io.helidon.webserver.Router;
import io.helidon.webserver.ServerConnectionException;
import io.helidon.webserver.http1.Http1Config;
import io.helidon.webserver.http1.Http1ConnectionSelector;
import io.helidon.webserver.spi.ServerConnection;
import io.helidon.webserver.spi.ServerConnectionSelector;
import org.jspecify.annotations.Nullable;

/**
 * The listener's one connection selector: Helidon's HTTP/1.1 connection, reading the client's bytes through
 * {@link RequestFraming}.
 * <p>
 * <b>One selector, not two.</b> Helidon adds an HTTP/1.1 selector of its own (default limits) next to a configured
 * one unless service discovery of protocols is off, and with two candidates it reads the first bytes to choose:
 * a request line that does not end in {@code HTTP/1.1} then matched neither and the connection was closed without
 * a word ({@code curl --http1.0}: empty reply, nothing logged). With this selector alone, Helidon hands every
 * connection to it unread; the HTTP/1.1 parser answers other versions itself (505, as a problem:
 * {@link ListenerLimits}), and the listener's idle timeout covers a connection from its first moment.
 * <p>
 * <b>HTTP/2 prior knowledge</b> ({@code curl --http2-prior-knowledge}): the connection's preface is answered in
 * HTTP/2, which is what such a client reads: an empty SETTINGS frame (the server preface) and a GOAWAY with the
 * error {@code HTTP_1_1_REQUIRED} (RFC 9113 section 7) whose debug data says to use HTTP/1.1; then the
 * connection is closed.
 */
public final class ClientConnections implements ServerConnectionSelector {
    private static final Logger LOG = Logger.getLogger(ClientConnections.class.getName());
    static final String HTTP2_REFUSAL = "this server speaks HTTP/1.1 only; send HTTP/1.1";
    /** The largest trailer section taken after a chunked body. */
    static final int MAX_TRAILER_BYTES = 16 * 1024;

    private final Http1ConnectionSelector http1;
    private final int maxHeadLine;
    private final ListenerLog log;

    private ClientConnections(Http1Config config, ListenerLog log) {
        this.http1 = Http1ConnectionSelector.builder().config(config).build();
        this.maxHeadLine = Math.max(config.maxPrologueLength(), config.maxHeadersSize()) + 2;
        this.log = log;
    }

    /** The selector for a listener whose HTTP/1.1 settings are {@code config}. */
    static ClientConnections of(Http1Config config, ListenerLog log) {
        return new ClientConnections(config, log);
    }

    @Override
    public int bytesToIdentifyConnection() {
        return 0;
    }

    @Override
    public Support supports(BufferData data) {
        return Support.SUPPORTED; // the only selector: Helidon never asks (see the class comment)
    }

    @Override
    public Set<String> supportedApplicationProtocols() {
        return http1.supportedApplicationProtocols();
    }

    @Override
    public ServerConnection connection(ConnectionContext ctx) {
        return http1.connection(new Framed(ctx, new RequestFraming(maxHeadLine, MAX_TRAILER_BYTES), log));
    }

    /** The connection's context, with its reader replaced by one that reads through {@link RequestFraming}. */
    private static final class Framed implements ConnectionContext {
        private final ConnectionContext ctx;
        private final DataReader raw;
        private final @Nullable HelidonSocket socket;
        private final DataReader framed;
        private final RequestFraming framing;
        private final ListenerLog log;

        Framed(ConnectionContext ctx, RequestFraming framing, ListenerLog log) {
            this.ctx = ctx;
            this.raw = ctx.dataReader();
            this.socket = socketOf(ctx);
            this.framing = framing;
            this.log = log;
            this.framed = DataReader.create(this::next);
        }

        private static @Nullable HelidonSocket socketOf(ConnectionContext ctx) {
            try {
                return ctx.serverSocket();
            } catch (UnsupportedOperationException e) {
                return null;
            }
        }

        /**
         * The next bytes from the client, null at the end of the stream. Straight from the socket, which hands out a
         * fresh array per read (the connection's own reader would copy it once more), once the reader holds nothing.
         */
        private byte @Nullable [] read() {
            if (socket == null || raw.available() > 0) {
                try {
                    raw.ensureAvailable();
                    return raw.readBytes(raw.available());
                } catch (DataReader.InsufficientDataAvailableException e) {
                    return null;
                }
            }
            try {
                return socket.get();
            } catch (UncheckedIOException e) {
                throw new ServerConnectionException("Failed to get data from socket", e); // as Helidon's reader does
            }
        }

        /** The next bytes for Helidon's parser; null at the end of the stream (the client closed). */
        private byte @Nullable [] next() {
            while (true) {
                RequestException failure = framing.failure();
                if (failure != null) {
                    throw failure;
                }
                byte[] in = read();
                if (in == null) {
                    return null;
                }
                byte[] out = framing.process(in);
                if (framing.http2()) {
                    refuseHttp2();
                    throw new CloseConnectionException("HTTP/2 prior knowledge refused");
                }
                if (out.length > 0) {
                    return out;
                }
                // nothing for the parser yet (a chunk-size line, trailers, the start of a preface): read on
            }
        }

        private void refuseHttp2() {
            log.refused("http2", () -> "refused an HTTP/2 (prior knowledge) connection from "
                    + ctx.remotePeer().host() + ": " + HTTP2_REFUSAL);
            try {
                ctx.dataWriter().writeNow(BufferData.create(http2Refusal()));
            } catch (RuntimeException e) {
                LOG.log(Level.FINE, "could not answer an HTTP/2 preface", e);
            }
        }

        @Override
        public DataReader dataReader() {
            return framed;
        }

        @Override
        public ListenerContext listenerContext() {
            return ctx.listenerContext();
        }

        @Override
        public ExecutorService executor() {
            return ctx.executor();
        }

        @Override
        public DataWriter dataWriter() {
            return ctx.dataWriter();
        }

        @Override
        public Router router() {
            return ctx.router();
        }

        @Override
        public Optional<ProxyProtocolData> proxyProtocolData() {
            return ctx.proxyProtocolData();
        }

        @Override
        public HelidonSocket serverSocket() {
            return ctx.serverSocket();
        }

        @Override
        public PeerInfo remotePeer() {
            return ctx.remotePeer();
        }

        @Override
        public PeerInfo localPeer() {
            return ctx.localPeer();
        }

        @Override
        public boolean isSecure() {
            return ctx.isSecure();
        }

        @Override
        public String socketId() {
            return ctx.socketId();
        }

        @Override
        public String childSocketId() {
            return ctx.childSocketId();
        }
    }

    /** An empty SETTINGS frame and a GOAWAY (last stream 0, HTTP_1_1_REQUIRED, with a human-readable reason). */
    static byte[] http2Refusal() {
        byte[] debug = HTTP2_REFUSAL.getBytes(StandardCharsets.US_ASCII);
        byte[] frames = new byte[9 + 9 + 8 + debug.length];
        // SETTINGS: length 0, type 0x4, flags 0, stream 0
        frames[3] = 0x4;
        int p = 9;
        int length = 8 + debug.length;
        frames[p] = (byte) (length >>> 16);
        frames[p + 1] = (byte) (length >>> 8);
        frames[p + 2] = (byte) length;
        frames[p + 3] = 0x7; // GOAWAY
        // flags 0, stream 0, last-stream-id 0
        frames[p + 9 + 7] = 0xd; // error code HTTP_1_1_REQUIRED (0x0000000d)
        System.arraycopy(debug, 0, frames, p + 9 + 8, debug.length);
        return frames;
    }
}
