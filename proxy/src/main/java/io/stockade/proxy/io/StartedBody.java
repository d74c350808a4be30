package io.stockade.proxy.io;

import java.io.InputStream;

/**
 * A request body a backend started reading, within the policy's bounds, kept in the request's
 * context so that the listener can read on and drop what is left after an early answer (a store that answered before
 * the body's end, a bound reached) before it closes the connection: a client still sending then reads the answer
 * instead of meeting a TCP reset.
 *
 * @param raw the body's stream as the backend read it (past a bound it fails at once, so a body cut off by a bound is
 *            not read on), positioned where the backend stopped
 */
public record StartedBody(InputStream raw) {
}
