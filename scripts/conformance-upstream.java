// The storage behind the proxy for scripts/conformance-long.sh, as a process of its own (the script starts it,
// reads its address from the first line, and kills it by PID). Run as a single-file source program on the
// conformance module's test class path (which has the suite, the proxy's test classes and s3proxy):
//
//   java -cp CP scripts/conformance-upstream.java http DIR          PlainHttpStore over DIR (what ConformanceCases uses
//                                                                    as the HTTP upstream; no conditions)
//   java -cp CP scripts/conformance-upstream.java http-if-match     the proxy tests' TestUpstream: in memory, honours
//                                                                    If-Match / If-None-Match atomically per key
//   java -cp CP scripts/conformance-upstream.java s3 BUCKET KEY SECRET
//                                                                    s3proxy 3.0.0 over a transient blob store, SigV4
//                                                                    required, BUCKET created (as in ConformanceBackendsIT)
//
// It prints "upstream listening on http://127.0.0.1:PORT" once it serves, then runs until it is killed.
// s3proxy is started through its builder, not its Main (whose stderr redirection recurses with slf4j-jdk14);
// its log goes wherever the script sends this process's output.

import java.net.URI;
import java.nio.file.Path;

import io.stockade.conformance.storage.PlainHttpStore;
import io.stockade.proxy.testing.TestUpstream;

public class ConformanceUpstream {

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: http DIR | http-if-match | s3 BUCKET KEY SECRET");
        }
        URI uri;
        AutoCloseable server;
        switch (args[0]) {
            case "http" -> {
                PlainHttpStore s = PlainHttpStore.start(Path.of(args[1]));
                server = s;
                uri = s.baseUri();
            }
            case "http-if-match" -> {
                // It keeps a record of every request for the tests' assertions (a few hundred bytes each, some
                // hundreds of thousands in a long run): the script gives this process a heap for them.
                TestUpstream s = TestUpstream.start();
                server = s;
                uri = s.baseUri();
            }
            case "s3" -> {
                org.jclouds.blobstore.BlobStoreContext blobs = org.jclouds.ContextBuilder.newBuilder("transient")
                        .credentials("identity", "credential").build(org.jclouds.blobstore.BlobStoreContext.class);
                org.gaul.s3proxy.S3Proxy s3 = org.gaul.s3proxy.S3Proxy.builder()
                        .blobStore(blobs.getBlobStore())
                        .awsAuthentication(org.gaul.s3proxy.AuthenticationType.AWS_V4, args[2], args[3])
                        .endpoint(URI.create("http://127.0.0.1:0"))
                        .build();
                s3.start();
                long deadline = System.nanoTime() + 30_000_000_000L;
                while (!s3.getState().equals("STARTED") && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                if (!s3.getState().equals("STARTED")) {
                    throw new IllegalStateException("s3proxy did not start: " + s3.getState());
                }
                blobs.getBlobStore().createContainerInLocation(null, args[1]);
                server = () -> {
                    s3.stop();
                    blobs.close();
                };
                uri = URI.create("http://127.0.0.1:" + s3.getPort());
            }
            default -> throw new IllegalArgumentException("unknown upstream " + args[0]);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                server.close();
            } catch (Exception ignored) {
                // going away anyway
            }
        }));
        System.out.println("upstream listening on " + uri);
        System.out.flush();
        Thread.currentThread().join();
    }
}
