package io.stockade.proxy.http;

import io.helidon.webclient.api.ClientConnection;

import java.io.OutputStream;
import java.lang.reflect.Field;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Closes the upstream connection of a request whose body was abandoned midway (the http and s3 backends).
 * <p>
 * When the handler given to {@code HttpClientRequest.outputStream} throws, Helidon 4.5.0
 * ({@code Http1CallOutputStreamChain.doProceed}) rethrows without closing the connection: it is neither returned
 * to the pool nor closed, and the upstream keeps waiting for the rest of a request that will never come. The
 * client API offers no handle on the connection of such a request, so the stream Helidon hands the handler is
 * asked for it ({@code ClientConnectionOutputStream.connection}, a private field) and
 * {@link ClientConnection#closeResource()} is called. {@code LimitsIT} and {@code S3BackendIT} count the upstream's
 * open sockets after cut-off bodies, so a Helidon upgrade that renames the field fails there (and is logged here at start).
 */
public final class AbandonedConnection {
    private static final Logger LOG = Logger.getLogger(AbandonedConnection.class.getName());
    private static final String STREAM_CLASS =
            "io.helidon.webclient.http1.Http1CallOutputStreamChain$ClientConnectionOutputStream";
    private static final Field CONNECTION = connectionField();

    private AbandonedConnection() {
    }

    private static Field connectionField() {
        try {
            Field field = Class.forName(STREAM_CLASS, false, AbandonedConnection.class.getClassLoader())
                    .getDeclaredField("connection");
            if (!ClientConnection.class.isAssignableFrom(field.getType())) {
                throw new NoSuchFieldException("connection is a " + field.getType());
            }
            field.setAccessible(true);
            return field;
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.log(Level.WARNING, "cannot reach the connection of Helidon's client output stream; an upstream "
                    + "request abandoned midway (a body cut off) will leave its connection open", e);
            return null;
        }
    }

    /** Closes the connection {@code out} writes to, when it is Helidon's HTTP/1 request stream. */
    public static void close(OutputStream out) {
        if (CONNECTION == null || !STREAM_CLASS.equals(out.getClass().getName())) {
            return;
        }
        try {
            ClientConnection connection = (ClientConnection) CONNECTION.get(out);
            if (connection != null) {
                connection.closeResource();
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.log(Level.WARNING, "could not close an abandoned upstream connection", e);
        }
    }
}
