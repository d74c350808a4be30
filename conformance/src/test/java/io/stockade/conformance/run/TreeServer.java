package io.stockade.conformance.run;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A small real server for {@link ProcessTreeTest}, launched under shell wrappers: listens on the port given (0: any),
 * prints the proxy's ready line, answers every connection "ok" and closes it.
 */
public final class TreeServer {

    private TreeServer() {
    }

    public static void main(String[] args) throws IOException {
        try (ServerSocket s = new ServerSocket(Integer.parseInt(args[0]), 50, InetAddress.getLoopbackAddress())) {
            System.out.println("Stockade listening on http://127.0.0.1:" + s.getLocalPort());
            System.out.flush();
            while (true) {
                try (Socket c = s.accept()) {
                    c.setSoTimeout(2000);
                    InputStream in = c.getInputStream();
                    in.read(new byte[256]);
                    OutputStream out = c.getOutputStream();
                    out.write("ok\n".getBytes(StandardCharsets.US_ASCII));
                } catch (IOException ignored) {
                    // next one
                }
            }
        }
    }
}
