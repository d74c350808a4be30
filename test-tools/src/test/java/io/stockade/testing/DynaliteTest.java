package io.stockade.testing;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The DynamoDB stand-in survives a client that disconnects in the middle of a request (dynalite 4.0.0 alone exits:
 * a proxy killed with kill -9 during a GetItem took the lock service away from every later test of the run).
 */
class DynaliteTest {

    @Test
    void aClientThatAbortsItsRequestDoesNotEndTheServer() throws Exception {
        Tools.require(Tools.Tool.DYNALITE);
        try (Dynalite dynalite = Dynalite.start()) {
            // headers and part of a body, then a reset; again, waiting longer each time, until the server has read
            // the request before the reset came (its log says it dropped an aborted request)
            for (long wait = 100; !dynalite.logText().contains("aborted its request") && wait <= 3200; wait *= 2) {
                try (Socket s = new Socket("127.0.0.1", dynalite.port())) {
                    s.setSoLinger(true, 0);
                    OutputStream out = s.getOutputStream();
                    out.write(("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-amz-json-1.0\r\n"
                            + "X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\n\r\n{\"Lim")
                            .getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    Thread.sleep(wait);
                }
                Thread.sleep(100);
            }
            assertTrue(dynalite.logText().contains("aborted its request"), "no request was aborted mid-body: "
                    + dynalite.logText());
            try (DynamoDbClient client = dynalite.client()) {
                assertNotNull(client.listTables().tableNames(), "the server still answers");
            }
        }
    }
}
