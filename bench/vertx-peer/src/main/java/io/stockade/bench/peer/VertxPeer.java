package io.stockade.bench.peer;

import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.PoolOptions;
import io.vertx.httpproxy.HttpProxy;

/**
 * {@code java -cp ... io.stockade.bench.peer.VertxPeer LISTEN_PORT UPSTREAM_PORT}: a reverse proxy on Vert.x with
 * one event loop (the bench pins every server to one CPU), keep-alive connections to the upstream (up to 256, as
 * the proxy's policy allows), forwarding every request as it came. No fence: the peer Stockade is compared with.
 */
public final class VertxPeer {
    private VertxPeer() {
    }

    public static void main(String[] args) {
        int port = Integer.parseInt(args[0]);
        int upstream = Integer.parseInt(args[1]);
        Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(1).setWorkerPoolSize(1));
        HttpClient client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true),
                new PoolOptions().setHttp1MaxSize(256));
        HttpProxy proxy = HttpProxy.reverseProxy(client).origin(upstream, "127.0.0.1");
        HttpServer server = vertx.createHttpServer();
        server.requestHandler(proxy).listen(port, "127.0.0.1").await();
        System.out.println("vertx peer listening on http://127.0.0.1:" + port + " -> 127.0.0.1:" + upstream);
    }
}
